"""The README's Configuration table lists every setting, one row per environment
variable in the order of the settings, and the README names no setting that does
not exist."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import SecretStr

from consumer.settings import environment_variables

README = Path(__file__).resolve().parents[2] / "README.md"
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
    return README.read_text(encoding="utf-8")


def configuration_section() -> str:
    text = readme()
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
    text = readme()
    missing = [name for name in VARIABLES if f"`{name}`" not in text]
    assert not missing, f"settings missing from README.md: {missing}"


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
    assert not unknown, f"README.md names settings that do not exist: {unknown}"


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
ANCHOR_LINK = re.compile(r"\]\(#([^)\s]*)\)")
# A section named in prose: (see "Measuring quality").
QUOTED_SECTION = re.compile(r'\(see "([^"]+)"\)')


def prose_lines() -> list[str]:
    """README.md's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in readme().splitlines():
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


def headings() -> list[str]:
    return [m.group(2) for m in map(HEADING.match, prose_lines()) if m]


def anchors() -> set[str]:
    """Every heading's anchor; a repeated title gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for title in headings():
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


def test_every_in_page_link_leads_to_a_heading() -> None:
    links = [m.group(1) for line in prose_lines() for m in ANCHOR_LINK.finditer(line)]
    assert links, "expected in-page links in README.md"
    broken = sorted({link for link in links if link not in anchors()})
    assert not broken, f"README.md links to sections that do not exist: {broken}"


def test_every_section_named_in_quotes_exists() -> None:
    titles = {title.lower() for title in headings()}
    named = [m.group(1) for line in prose_lines() for m in QUOTED_SECTION.finditer(line)]
    assert named, 'expected (see "Section") references in README.md'
    missing = sorted({name for name in named if name.lower() not in titles})
    assert not missing, f"README.md refers to sections that do not exist: {missing}"
