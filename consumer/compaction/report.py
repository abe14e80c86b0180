"""The compaction report: Markdown and one self-contained HTML file (a jinja2
template, templates/report.html.j2, with autoescape on).

Both hold the same three parts: a summary per scope, a histogram of pair
similarities per namespace (each memory's similarity to its nearest other memory,
all scopes of the namespace together) and the clusters compaction would merge.

Memory text appears only when `texts` is given (the CLI passes it for
--show-text): memory content must not land in reports by default. Everything
taken from memories (ids, hashes, names, texts) is escaped for its format.

One module because both formats are drawn from the same helpers (per-namespace
pooling, histogram bins, summaries, shortened texts); the HTML markup itself is
in the template, this module computes the histogram's geometry for it.
"""

from __future__ import annotations

import math
import os
import tempfile
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Final

from consumer.compaction.clusters import Cluster, ScopeAnalysis

if TYPE_CHECKING:
    from jinja2 import Template

__all__ = [
    "HTML_REPORT_NAME",
    "MARKDOWN_REPORT_NAME",
    "HistogramBin",
    "histogram",
    "render_html",
    "render_markdown",
    "write_reports",
]

MARKDOWN_REPORT_NAME: Final = "compaction-report.md"
HTML_REPORT_NAME: Final = "compaction-report.html"

# Bins of 0.05 up to 0.80, then 0.01: the thresholds live above 0.8 and the
# interesting structure (paraphrases vs near-duplicates) is there.
_COARSE_STEPS: Final = 16  # 0.00 .. 0.80 by 0.05
_FINE_STEPS: Final = 20  # 0.80 .. 1.00 by 0.01
BIN_EDGES: Final[tuple[float, ...]] = tuple(
    [round(i * 0.05, 2) for i in range(_COARSE_STEPS)]
    + [round(0.80 + i * 0.01, 2) for i in range(_FINE_STEPS + 1)]
)
# Longest memory text shown per row; texts are up to 8,192 characters.
DEFAULT_MAX_TEXT_CHARS: Final = 240
_MARKDOWN_BAR_WIDTH: Final = 40
_SHORT_HASH: Final = 12

SettingsSummary = Mapping[str, object] | str


@dataclass(frozen=True, slots=True)
class HistogramBin:
    """Similarities in [low, high); the first bin also takes everything below
    0.05, the last one includes 1.0."""

    low: float
    high: float
    count: int

    @property
    def label(self) -> str:
        return f"{self.low:.2f}-{self.high:.2f}"


def histogram(similarities: Iterable[float]) -> list[HistogramBin]:
    counts = [0] * (len(BIN_EDGES) - 1)
    last = len(counts) - 1
    for value in similarities:
        index = bisect_right(BIN_EDGES, value) - 1
        counts[min(max(index, 0), last)] += 1
    return [HistogramBin(BIN_EDGES[i], BIN_EDGES[i + 1], count) for i, count in enumerate(counts)]


@dataclass(frozen=True, slots=True)
class _Namespace:
    """The scopes of one namespace, pooled for its histogram."""

    name: str
    scopes: int
    compared: int
    bins: list[HistogramBin]
    # (merge threshold, duplicate threshold) of its scopes; one pair unless the
    # caller analysed scopes of one namespace with different bands.
    thresholds: list[tuple[float, float]]


def _namespaces(analyses: Sequence[ScopeAnalysis]) -> list[_Namespace]:
    grouped: dict[str, list[ScopeAnalysis]] = {}
    for analysis in analyses:
        grouped.setdefault(analysis.namespace, []).append(analysis)
    result = []
    for name in sorted(grouped):
        scopes = grouped[name]
        similarities = [value for scope in scopes for value in scope.pair_similarities]
        thresholds = sorted(
            {(s.bands.merge_threshold, s.bands.duplicate_threshold) for s in scopes}
        )
        result.append(
            _Namespace(name, len(scopes), len(similarities), histogram(similarities), thresholds)
        )
    return result


def _namespace_counts(namespace: _Namespace) -> str:
    scopes = _plural(namespace.scopes, "scope", "scopes")
    return f"{scopes}, {_plural(namespace.compared, 'memory', 'memories')} compared"


def _ordered(analyses: Sequence[ScopeAnalysis]) -> list[ScopeAnalysis]:
    return sorted(analyses, key=lambda a: (a.tenant_id, a.namespace))


def _similarity(value: float) -> str:
    # Truncated, not rounded: a shown value reaches a threshold of up to three
    # decimals exactly when the real one does (0.9599 must not read 0.960).
    return f"{math.floor(value * 1000) / 1000:.3f}"


def _vetoes(analysis: ScopeAnalysis) -> str:
    if not analysis.vetoes:
        return "0"
    return ", ".join(f"{reason} {count:,}" for reason, count in analysis.vetoes.items())


def _plural(count: int, singular: str, plural: str) -> str:
    return f"{count:,} {singular if count == 1 else plural}"


def _scope_clusters(analysis: ScopeAnalysis) -> str:
    clusters = _plural(len(analysis.clusters), "cluster", "clusters")
    removed = _plural(analysis.removed, "memory", "memories")
    return f"{clusters}, {removed} would be removed"


def _settings_lines(settings: SettingsSummary) -> list[tuple[str, str]]:
    if isinstance(settings, str):
        return [("settings", settings)] if settings else []
    return [(str(key), str(value)) for key, value in settings.items()]


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "\u2026"


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

_MD_ESCAPES: Final = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "#": "\\#",
    }
)


def _md(text: str) -> str:
    """Literal text in Markdown, safe inside a table cell."""
    return " ".join(text.split()).translate(_MD_ESCAPES)


def _md_code(text: str) -> str:
    """An identifier as a code span, safe inside a table cell."""
    cleaned = " ".join(text.split()).replace("`", "'").replace("|", "\\|")
    return f"`{cleaned}`"


def _md_bars(bins: Sequence[HistogramBin], thresholds: Sequence[tuple[float, float]]) -> list[str]:
    peak = max((b.count for b in bins), default=0)
    count_width = max(len(f"{b.count:,}") for b in bins)
    marks: dict[int, list[str]] = {}
    for merge, duplicate in thresholds:
        for name, value in (("merge", merge), ("duplicate", duplicate)):
            index = min(max(bisect_right(BIN_EDGES, value) - 1, 0), len(bins) - 1)
            marks.setdefault(index, []).append(f"{name} >= {value:.2f}")
    lines = []
    for index, bin_ in enumerate(bins):
        length = 0 if peak == 0 else math.ceil(bin_.count / peak * _MARKDOWN_BAR_WIDTH)
        bar = "#" * length
        line = f"{bin_.label}  {bin_.count:>{count_width},}  {bar:<{_MARKDOWN_BAR_WIDTH}}"
        if index in marks:
            line += "  <- " + ", ".join(marks[index])
        lines.append(line.rstrip())
    return lines


def render_markdown(
    analyses: Sequence[ScopeAnalysis],
    *,
    texts: Mapping[str, str] | None = None,
    generated_at: datetime,
    settings_summary: SettingsSummary = "",
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> str:
    """The report as Markdown. `texts` (memory id -> text) adds memory texts."""
    scopes = _ordered(analyses)
    out: list[str] = ["# Compaction report", ""]
    out.append(f"- generated: {generated_at.isoformat(timespec='seconds')}")
    out.extend(f"- {_md(key)}: {_md(value)}" for key, value in _settings_lines(settings_summary))
    out.append(
        f"- scopes: {len(scopes):,}; memories: {sum(a.memories for a in scopes):,}; "
        f"clusters: {sum(len(a.clusters) for a in scopes):,}; "
        f"would remove: {sum(a.removed for a in scopes):,}"
    )
    out += ["", "## Summary", ""]
    out.append(
        "| tenant | namespace | policy | merge >= | duplicate >= | memories | unembedded "
        "| candidate pairs | vetoed pairs | clusters | would remove |"
    )
    out.append("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for a in scopes:
        out.append(
            f"| {_md(a.tenant_id)} | {_md(a.namespace)} | {a.bands.merge_policy} "
            f"| {a.bands.merge_threshold:.2f} | {a.bands.duplicate_threshold:.2f} "
            f"| {a.memories:,} | {a.unembedded:,} | {a.candidate_pairs:,} | {_md(_vetoes(a))} "
            f"| {len(a.clusters):,} | {a.removed:,} |"
        )
    out.append(
        f"| **total** | | | | | {sum(a.memories for a in scopes):,} "
        f"| {sum(a.unembedded for a in scopes):,} | {sum(a.candidate_pairs for a in scopes):,} "
        f"| {sum(sum(a.vetoes.values()) for a in scopes):,} "
        f"| {sum(len(a.clusters) for a in scopes):,} | {sum(a.removed for a in scopes):,} |"
    )

    out += ["", "## Pair similarities", ""]
    out.append(
        "Each memory's similarity to its nearest other memory in its scope, all scopes "
        "of a namespace together. Bins of 0.05 below 0.80, of 0.01 above."
    )
    for namespace in _namespaces(scopes):
        out += ["", f"### {_md(namespace.name)}", ""]
        out.append(f"{_namespace_counts(namespace)}.")
        out += ["", "```text"]
        out += _md_bars(namespace.bins, namespace.thresholds)
        out.append("```")

    out += ["", "## Clusters"]
    if not any(a.clusters for a in scopes):
        out += ["", "No clusters: compaction would change nothing."]
    for a in scopes:
        if not a.clusters:
            continue
        out += ["", f"### {_md(a.tenant_id)} / {_md(a.namespace)}: {_scope_clusters(a)}"]
        for number, cluster in enumerate(a.clusters, start=1):
            out += ["", *_md_cluster(number, cluster, texts, max_text_chars)]
    out.append("")
    return "\n".join(out)


def _md_cluster(
    number: int, cluster: Cluster, texts: Mapping[str, str] | None, max_text_chars: int
) -> list[str]:
    heading = (
        f"#### {number}. keeper {_md_code(cluster.keeper_id)} "
        f"({_md_code(cluster.keeper_hash[:_SHORT_HASH])}): {cluster.size} memories, "
        f"lowest pair similarity {_similarity(cluster.min_similarity)}"
    )
    lines = [heading, ""]
    source = cluster.text_source_id
    if source is not None:
        lines += [f"The keeper takes the text of {_md_code(source)}.", ""]
    header = "| memory | hash | similarity to keeper | decision |"
    rule = "|---|---|---:|---|"
    if texts is not None:
        header += " text |"
        rule += "---|"
    lines += [header, rule]

    def row(memory_id: str, content_hash: str, similarity: str, decision: str) -> str:
        cells = (
            f"| {_md_code(memory_id)} | {_md_code(content_hash[:_SHORT_HASH])} "
            f"| {similarity} | {decision} |"
        )
        if texts is not None:
            cells += f" {_md(_shorten(texts.get(memory_id, ''), max_text_chars))} |"
        return cells

    lines.append(row(cluster.keeper_id, cluster.keeper_hash, "-", "keeper"))
    for member in cluster.members:
        lines.append(
            row(
                member.memory_id,
                member.content_hash,
                _similarity(member.similarity_to_keeper),
                member.decision.value,
            )
        )
    return lines


# --------------------------------------------------------------------------
# HTML: templates/report.html.j2; here the histogram's geometry
# --------------------------------------------------------------------------

HTML_TEMPLATE: Final = "report.html.j2"
_SVG_WIDTH: Final = 760
_SVG_HEIGHT: Final = 240
_SVG_LEFT: Final = 52
_SVG_RIGHT: Final = 16
_SVG_TOP: Final = 28
_SVG_BOTTOM: Final = 40
_AXIS_LABELS: Final = (0.0, 0.2, 0.4, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0)


@dataclass(frozen=True, slots=True)
class _Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    count: int


@dataclass(frozen=True, slots=True)
class _Mark:
    """A threshold's dashed line and its label."""

    name: str
    value: float
    x: float
    text_x: float
    text_y: int
    anchor: str


@dataclass(frozen=True, slots=True)
class _Chart:
    """Where the SVG histogram of one namespace draws what."""

    title: str
    width: int
    height: int
    left: int
    right: int
    top: int
    base: int
    plot_height: int
    fine_x: float
    fine_width: float
    x_label_x: float
    bars: list[_Bar]
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, int]]
    thresholds: list[_Mark]


def _svg_x(value: float, slot: float) -> float:
    """x of a similarity on the histogram's axis: bins are equal width, so the
    axis is linear within each bin, not across bins."""
    last = len(BIN_EDGES) - 2
    index = min(max(bisect_right(BIN_EDGES, value) - 1, 0), last)
    low, high = BIN_EDGES[index], BIN_EDGES[index + 1]
    within = min(max((value - low) / (high - low), 0.0), 1.0)
    return _SVG_LEFT + (index + within) * slot


def _chart(namespace: _Namespace) -> _Chart:
    bins = namespace.bins
    plot_width = _SVG_WIDTH - _SVG_LEFT - _SVG_RIGHT
    plot_height = _SVG_HEIGHT - _SVG_TOP - _SVG_BOTTOM
    base = _SVG_TOP + plot_height
    slot = plot_width / len(bins)
    peak = max((b.count for b in bins), default=0)

    def x_of(value: float) -> float:
        return _svg_x(value, slot) if value < 1.0 else _SVG_LEFT + plot_width

    bars = []
    for index, bin_ in enumerate(bins):
        if bin_.count == 0 or peak == 0:
            continue
        height = max(1.0, bin_.count / peak * plot_height)
        bars.append(
            _Bar(
                _SVG_LEFT + index * slot + 1,
                base - height,
                slot - 2,
                height,
                bin_.label,
                bin_.count,
            )
        )
    marks = []
    for row, (merge, duplicate) in enumerate(namespace.thresholds):
        for name, value, anchor in (("merge", merge, "end"), ("duplicate", duplicate, "start")):
            x = x_of(value)
            text_x = x - 3 if anchor == "end" else x + 3
            marks.append(_Mark(name, value, x, text_x, _SVG_TOP - 10 + 12 * row, anchor))
    fine_x = _svg_x(BIN_EDGES[_COARSE_STEPS], slot)  # shaded: the axis scale changes there
    return _Chart(
        title=f"Pair similarities in namespace {namespace.name}",
        width=_SVG_WIDTH,
        height=_SVG_HEIGHT,
        left=_SVG_LEFT,
        right=_SVG_WIDTH - _SVG_RIGHT,
        top=_SVG_TOP,
        base=base,
        plot_height=plot_height,
        fine_x=fine_x,
        fine_width=_SVG_LEFT + plot_width - fine_x,
        x_label_x=_SVG_LEFT + plot_width / 2,
        bars=bars,
        x_ticks=[(x_of(value), f"{value:.2f}") for value in _AXIS_LABELS],
        y_ticks=[
            (base - (value / peak * plot_height if peak else 0), value)
            for value in sorted({0, peak})
        ],
        thresholds=marks,
    )


@cache
def _template() -> Template:
    # jinja2 is imported here, not at the top: the consumer imports this package
    # (planning) and never renders a report.
    from jinja2 import Environment, PackageLoader, StrictUndefined

    environment = Environment(
        loader=PackageLoader("consumer.compaction", "templates"),
        autoescape=True,  # memory texts, ids and names are user content
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(
        count=lambda value: f"{value:,}",
        f1=lambda value: f"{value:.1f}",
        f2=lambda value: f"{value:.2f}",
        similarity=_similarity,
        short_hash=lambda value: value[:_SHORT_HASH],
        shorten=_shorten,
        vetoes=_vetoes,
        namespace_counts=_namespace_counts,
        scope_clusters=_scope_clusters,
    )
    return environment.get_template(HTML_TEMPLATE)


def render_html(
    analyses: Sequence[ScopeAnalysis],
    *,
    texts: Mapping[str, str] | None = None,
    generated_at: datetime,
    settings_summary: SettingsSummary = "",
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> str:
    """The report as one HTML file: inline CSS and SVG, no scripts."""
    scopes = _ordered(analyses)
    return _template().render(
        generated_at=generated_at.isoformat(timespec="seconds"),
        settings=_settings_lines(settings_summary),
        scopes=scopes,
        totals={
            "memories": sum(a.memories for a in scopes),
            "unembedded": sum(a.unembedded for a in scopes),
            "candidate_pairs": sum(a.candidate_pairs for a in scopes),
            "vetoed": sum(sum(a.vetoes.values()) for a in scopes),
            "clusters": sum(len(a.clusters) for a in scopes),
            "removed": sum(a.removed for a in scopes),
        },
        namespaces=[(namespace, _chart(namespace)) for namespace in _namespaces(scopes)],
        texts=texts,
        max_text_chars=max_text_chars,
    )


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def _write_atomically(path: Path, content: str) -> None:
    # A reader (or a second run) never sees half a report.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_reports(
    analyses: Sequence[ScopeAnalysis],
    directory: Path,
    *,
    texts: Mapping[str, str] | None = None,
    generated_at: datetime | None = None,
    settings_summary: SettingsSummary = "",
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> tuple[Path, Path]:
    """Write compaction-report.md and compaction-report.html into `directory`
    (created if missing); returns their paths (Markdown, HTML)."""
    generated_at = generated_at or datetime.now(UTC)
    directory.mkdir(parents=True, exist_ok=True)
    markdown_path = directory / MARKDOWN_REPORT_NAME
    html_path = directory / HTML_REPORT_NAME
    for path, render in ((markdown_path, render_markdown), (html_path, render_html)):
        content = render(
            analyses,
            texts=texts,
            generated_at=generated_at,
            settings_summary=settings_summary,
            max_text_chars=max_text_chars,
        )
        _write_atomically(path, content)
    return markdown_path, html_path
