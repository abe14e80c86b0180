"""The documentation keeps up with the code: docs/configuration.md's table lists
every setting, one row per environment variable in the order of the settings; no
page names a setting that does not exist; every link between the README and the
pages under docs/ leads to a file and heading that exist."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import SecretStr

from consumer.settings import environment_variables

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
# Pages beside the code, checked for links but not linked from the README.
OTHER_PAGES = [ROOT / "bench" / "README.md", ROOT / "bench" / "pairs" / "README.md"]
PREFIX = "MEMDEDUP_"
ENV_NAME = re.compile(r"MEMDEDUP_[A-Z0-9_]+")
# A table row whose first cell is exactly one backticked variable name.
ROW = re.compile(r"^\| `(MEMDEDUP_[A-Z0-9_]+)` \|(.*)\|$")


def _is_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    return get_origin(annotation) in (Union, types.UnionType) and SecretStr in get_args(annotation)


VARIABLES = environment_variables()
DICT_VARIABLES = {name for name, ann in VARIABLES.items() if get_origin(ann) is dict}


def readme() -> str:
    """Every page, README first."""
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def configuration_section() -> str:
    text = CONFIGURATION.read_text(encoding="utf-8")
    start = text.index("\n## Configuration\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def table_rows() -> list[tuple[str, str]]:
    """(variable, rest of the row) of each variable row of the Configuration table."""
    rows = []
    for line in configuration_section().splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match.group(1), match.group(2)))
    return rows


def test_variables_are_derived_from_the_settings() -> None:
    assert "MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS" in VARIABLES
    assert "MEMDEDUP_QDRANT__API_KEY" in VARIABLES
    assert "MEMDEDUP_DEDUP__NAMESPACES" in DICT_VARIABLES
    assert "MEMDEDUP_SHUTDOWN_TIMEOUT_S" in VARIABLES
    assert "MEMDEDUP_CONFIG_FILE" in VARIABLES
    # Groups are not variables of their own; nor are the fields of a dict's values.
    assert "MEMDEDUP_KAFKA" not in VARIABLES
    assert not any(n.startswith("MEMDEDUP_DEDUP__NAMESPACES__") for n in VARIABLES)


def test_every_setting_appears_in_the_readme() -> None:
    text = CONFIGURATION.read_text(encoding="utf-8")
    missing = [name for name in VARIABLES if f"`{name}`" not in text]
    assert not missing, f"settings missing from docs/configuration.md: {missing}"


def test_configuration_table_has_one_row_per_variable_in_settings_order() -> None:
    names = [name for name, _ in table_rows()]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"variables with more than one row: {duplicates}"
    missing = [n for n in VARIABLES if n not in names]
    assert not missing, f"add rows to the Configuration table for: {missing}"
    unknown = [n for n in names if n not in VARIABLES]
    assert not unknown, f"rows for variables the settings do not read: {unknown}"
    assert names == list(VARIABLES), "order the rows as the fields of consumer/settings.py"


def test_table_rows_name_one_full_variable_each() -> None:
    """No shorthand such as `MEMDEDUP_TOPICS__ACCEPTED` / `__MERGED` in a row."""
    bad = [
        line
        for line in configuration_section().splitlines()
        if line.startswith("|") and PREFIX in line.split("|")[1] and not ROW.match(line)
    ]
    assert not bad, f"rows must start with one backticked variable: {bad}"
    for name, rest in table_rows():
        cells = rest.split(" | ")
        assert len(cells) == 2, f"{name}: expected default and meaning cells, got {rest!r}"
        assert all(c.strip() for c in cells), f"{name}: empty default or meaning"


def test_secrets_are_marked_as_never_logged() -> None:
    rows = dict(table_rows())
    secrets = [name for name, ann in VARIABLES.items() if _is_secret(ann)]
    assert "MEMDEDUP_QDRANT__API_KEY" in secrets
    unmarked = [n for n in secrets if "secret; never logged" not in rows.get(n, "")]
    assert not unmarked, f'say "secret; never logged" in the rows of: {unmarked}'


def _known(name: str) -> bool:
    if name in VARIABLES:
        return True
    # `MEMDEDUP_SECURITY__*`: a group prefix.
    if name.endswith("__") and any(v.startswith(name) for v in VARIABLES):
        return True
    # Per-namespace entries of a dict-typed setting.
    return any(name.startswith(d + "__") for d in DICT_VARIABLES)


def test_every_name_in_the_readme_is_a_setting() -> None:
    unknown = sorted({n for n in ENV_NAME.findall(readme()) if not _known(n)})
    assert not unknown, f"the docs name settings that do not exist: {unknown}"


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A section named in prose: (see "Measuring quality").
QUOTED_SECTION = re.compile(r'\(see "([^"]+)"\)')


def prose_lines(page: Path = README) -> list[str]:
    """A page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def github_slug(title: str) -> str:
    """The anchor GitHub gives a heading: the rendered text in lower case, without
    punctuation other than `-` and `_`, spaces turned into `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def headings(page: Path = README) -> list[str]:
    return [m.group(2) for m in map(HEADING.match, prose_lines(page)) if m]


def anchors(page: Path) -> set[str]:
    """Every heading's anchor; a repeated title gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for title in headings(page):
        slug = github_slug(title)
        if slug in seen:
            seen[slug] += 1
            found.add(f"{slug}-{seen[slug]}")
        else:
            seen[slug] = 0
            found.add(slug)
    return found


def test_github_slugs() -> None:
    assert github_slug("Event contract (v1)") == "event-contract-v1"
    assert github_slug("Sizing: partitions and replicas") == "sizing-partitions-and-replicas"
    assert github_slug("Audit log, review and compaction") == "audit-log-review-and-compaction"
    assert github_slug("`memdedup run` and [Kafka](https://kafka.apache.org)") == (
        "memdedup-run-and-kafka"
    )


def test_headings_in_code_blocks_are_not_headings() -> None:
    assert "Quick start" in headings()
    assert not any(title.startswith("memdedup.yaml") for title in headings())


def broken_links(page: Path) -> list[str]:
    """Links of `page` to a missing file, or to a heading its page lacks."""
    broken = []
    for line in prose_lines(page):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (
                fragment and linked.suffix == ".md" and fragment not in anchors(linked)
            ):
                broken.append(target)
    return broken


def test_the_readme_is_short_and_links_every_page() -> None:
    assert len(README.read_bytes()) <= 10 * 1024
    text = README.read_text(encoding="utf-8")
    unlinked = [p.name for p in PAGES[1:] if f"](docs/{p.name})" not in text]
    assert not unlinked, f"README.md does not link: {unlinked}"


def test_every_link_leads_to_a_file_and_heading() -> None:
    assert any(LINK.search(line) for line in prose_lines()), "expected links in README.md"
    broken = {str(page.relative_to(ROOT)): broken_links(page) for page in [*PAGES, *OTHER_PAGES]}
    assert not any(broken.values()), f"links that lead nowhere: {broken}"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Here\n", encoding="utf-8")
    page.write_text(
        "# Page\n\n[ok](#page) [ok](other.md#here) [no](#nowhere) [no](other.md#gone) "
        "[no](missing.md)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["#nowhere", "other.md#gone", "missing.md"]


def test_every_section_named_in_quotes_exists() -> None:
    titles = {title.lower() for page in PAGES for title in headings(page)}
    named = [
        m.group(1)
        for page in PAGES
        for line in prose_lines(page)
        for m in QUOTED_SECTION.finditer(line)
    ]
    assert named, 'expected (see "Section") references in the docs'
    missing = sorted({name for name in named if name.lower() not in titles})
    assert not missing, f"the docs refer to sections that do not exist: {missing}"
