"""The compaction report: Markdown and one self-contained HTML file.

Both hold the same three parts: a summary per scope, a histogram of pair
similarities per namespace (each memory's similarity to its nearest other memory,
all scopes of the namespace together) and the clusters compaction would merge.

Memory text appears only when `texts` is given (the CLI passes it for
--show-text): memory content must not land in reports by default. Everything
taken from memories (ids, hashes, names, texts) is escaped for its format.
"""

from __future__ import annotations

import html
import math
import os
import tempfile
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from consumer.compaction.clusters import Cluster, ScopeAnalysis

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

Settings = Mapping[str, object] | str


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


def _settings_lines(settings: Settings) -> list[tuple[str, str]]:
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
    settings_summary: Settings = "",
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
# HTML
# --------------------------------------------------------------------------

_CSS: Final = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1100px; padding: 0 1rem; color: #1d2430; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #d8dde6; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; }
th, td { border: 1px solid #d8dde6; padding: .25rem .55rem; text-align: left; vertical-align: top; }
th { background: #f2f4f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: 600; background: #f8f9fb; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, monospace; }
.meta { color: #4b5565; } .meta dt { font-weight: 600; float: left; clear: left; width: 11rem; }
.meta dd { margin: 0 0 .15rem 11.5rem; }
.skipped { color: #8a3b00; } .merged { color: #0b5394; } .keeper { color: #2e7d32; font-weight: 600; }
.text { max-width: 38rem; white-space: pre-wrap; }
svg { max-width: 100%; height: auto; } svg text { font: 11px system-ui, sans-serif; fill: #4b5565; }
svg .bar { fill: #5b8def; } svg .fine { fill: #f1f4fa; } svg .axis { stroke: #4b5565; stroke-width: 1; }
svg .merge { stroke: #0b5394; stroke-dasharray: 4 3; stroke-width: 1.5; }
svg .duplicate { stroke: #8a3b00; stroke-dasharray: 4 3; stroke-width: 1.5; }
svg text.merge { fill: #0b5394; } svg text.duplicate { fill: #8a3b00; }
details { margin: .4rem 0 1rem; } summary { cursor: pointer; font-weight: 600; }
""".strip()

_SVG_WIDTH: Final = 760
_SVG_HEIGHT: Final = 240
_SVG_LEFT: Final = 52
_SVG_RIGHT: Final = 16
_SVG_TOP: Final = 28
_SVG_BOTTOM: Final = 40
_AXIS_LABELS: Final = (0.0, 0.2, 0.4, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _svg_x(value: float, slot: float) -> float:
    """x of a similarity on the histogram's axis: bins are equal width, so the
    axis is linear within each bin, not across bins."""
    last = len(BIN_EDGES) - 2
    index = min(max(bisect_right(BIN_EDGES, value) - 1, 0), last)
    low, high = BIN_EDGES[index], BIN_EDGES[index + 1]
    within = min(max((value - low) / (high - low), 0.0), 1.0)
    return _SVG_LEFT + (index + within) * slot


def _svg_histogram(namespace: _Namespace) -> str:
    bins = namespace.bins
    plot_width = _SVG_WIDTH - _SVG_LEFT - _SVG_RIGHT
    plot_height = _SVG_HEIGHT - _SVG_TOP - _SVG_BOTTOM
    base = _SVG_TOP + plot_height
    slot = plot_width / len(bins)
    peak = max((b.count for b in bins), default=0)
    title = f"Pair similarities in namespace {namespace.name}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_SVG_WIDTH}" height="{_SVG_HEIGHT}" '
        f'viewBox="0 0 {_SVG_WIDTH} {_SVG_HEIGHT}" role="img" aria-label="{_e(title)}">',
        f"<title>{_e(title)}</title>",
    ]
    # Shade the finer bins, where the axis scale changes.
    fine_x = _svg_x(BIN_EDGES[_COARSE_STEPS], slot)
    parts.append(
        f'<rect class="fine" x="{fine_x:.1f}" y="{_SVG_TOP}" '
        f'width="{_SVG_LEFT + plot_width - fine_x:.1f}" height="{plot_height}"/>'
    )
    for index, bin_ in enumerate(bins):
        if bin_.count == 0 or peak == 0:
            continue
        height = max(1.0, bin_.count / peak * plot_height)
        x = _SVG_LEFT + index * slot + 1
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{base - height:.1f}" width="{slot - 2:.1f}" '
            f'height="{height:.1f}"><title>{_e(bin_.label)}: {bin_.count:,}</title></rect>'
        )
    # Axes, ticks and labels.
    parts.append(
        f'<line class="axis" x1="{_SVG_LEFT}" y1="{base}" x2="{_SVG_WIDTH - _SVG_RIGHT}" '
        f'y2="{base}"/>'
    )
    parts.append(
        f'<line class="axis" x1="{_SVG_LEFT}" y1="{_SVG_TOP}" x2="{_SVG_LEFT}" y2="{base}"/>'
    )
    for value in _AXIS_LABELS:
        x = _svg_x(value, slot) if value < 1.0 else _SVG_LEFT + plot_width
        parts.append(
            f'<line class="axis" x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}"/>'
            f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{value:.2f}</text>'
        )
    parts.append(
        f'<text x="{_SVG_LEFT + plot_width / 2:.1f}" y="{_SVG_HEIGHT - 4}" '
        'text-anchor="middle">similarity to nearest memory (0.05 bins below 0.80, '
        "0.01 above)</text>"
    )
    for value in sorted({0, peak}):
        y = base - (value / peak * plot_height if peak else 0)
        parts.append(
            f'<line class="axis" x1="{_SVG_LEFT - 4}" y1="{y:.1f}" x2="{_SVG_LEFT}" '
            f'y2="{y:.1f}"/><text x="{_SVG_LEFT - 7}" y="{y + 4:.1f}" '
            f'text-anchor="end">{value:,}</text>'
        )
    # Threshold markers.
    for row, (merge, duplicate) in enumerate(namespace.thresholds):
        for name, value, anchor in (("merge", merge, "end"), ("duplicate", duplicate, "start")):
            x = _svg_x(value, slot) if value < 1.0 else _SVG_LEFT + plot_width
            dx = -3 if anchor == "end" else 3
            parts.append(
                f'<line class="{name}" x1="{x:.1f}" y1="{_SVG_TOP - 6}" x2="{x:.1f}" '
                f'y2="{base}"/><text class="{name}" x="{x + dx:.1f}" '
                f'y="{_SVG_TOP - 10 + 12 * row}" text-anchor="{anchor}">'
                f"{name} {value:.2f}</text>"
            )
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(
    analyses: Sequence[ScopeAnalysis],
    *,
    texts: Mapping[str, str] | None = None,
    generated_at: datetime,
    settings_summary: Settings = "",
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> str:
    """The report as one HTML file: inline CSS and SVG, no scripts."""
    scopes = _ordered(analyses)
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Compaction report</title>",
        f"<style>\n{_CSS}\n</style></head><body>",
        "<h1>Compaction report</h1>",
        '<dl class="meta">',
        f"<dt>generated</dt><dd>{_e(generated_at.isoformat(timespec='seconds'))}</dd>",
    ]
    out.extend(
        f"<dt>{_e(key)}</dt><dd>{_e(value)}</dd>"
        for key, value in _settings_lines(settings_summary)
    )
    out.append("</dl>")

    out.append("<h2>Summary</h2>")
    out.append(
        "<table><thead><tr><th>tenant</th><th>namespace</th><th>policy</th>"
        "<th>merge &ge;</th><th>duplicate &ge;</th><th>memories</th><th>unembedded</th>"
        "<th>candidate pairs</th><th>vetoed pairs</th><th>clusters</th>"
        "<th>would remove</th></tr></thead><tbody>"
    )
    for a in scopes:
        out.append(
            f"<tr><td>{_e(a.tenant_id)}</td><td>{_e(a.namespace)}</td>"
            f"<td>{_e(a.bands.merge_policy)}</td>"
            f'<td class="num">{a.bands.merge_threshold:.2f}</td>'
            f'<td class="num">{a.bands.duplicate_threshold:.2f}</td>'
            f'<td class="num">{a.memories:,}</td><td class="num">{a.unembedded:,}</td>'
            f'<td class="num">{a.candidate_pairs:,}</td><td>{_e(_vetoes(a))}</td>'
            f'<td class="num">{len(a.clusters):,}</td><td class="num">{a.removed:,}</td></tr>'
        )
    out.append(
        f'<tr class="total"><td colspan="5">total ({len(scopes):,} scopes)</td>'
        f'<td class="num">{sum(a.memories for a in scopes):,}</td>'
        f'<td class="num">{sum(a.unembedded for a in scopes):,}</td>'
        f'<td class="num">{sum(a.candidate_pairs for a in scopes):,}</td>'
        f"<td>{sum(sum(a.vetoes.values()) for a in scopes):,}</td>"
        f'<td class="num">{sum(len(a.clusters) for a in scopes):,}</td>'
        f'<td class="num">{sum(a.removed for a in scopes):,}</td></tr>'
    )
    out.append("</tbody></table>")

    out.append("<h2>Pair similarities</h2>")
    out.append(
        "<p>Each memory's similarity to its nearest other memory in its scope, all "
        "scopes of a namespace together.</p>"
    )
    for namespace in _namespaces(scopes):
        out.append(f"<h3>{_e(namespace.name)}</h3>")
        out.append(f"<p>{_e(_namespace_counts(namespace))}.</p>")
        out.append(_svg_histogram(namespace))

    out.append("<h2>Clusters</h2>")
    if not any(a.clusters for a in scopes):
        out.append("<p>No clusters: compaction would change nothing.</p>")
    for a in scopes:
        if not a.clusters:
            continue
        out.append(f"<h3>{_e(a.tenant_id)} / {_e(a.namespace)}: {_e(_scope_clusters(a))}</h3>")
        for number, cluster in enumerate(a.clusters, start=1):
            out.append(_html_cluster(number, cluster, texts, max_text_chars))
    out.append("</body></html>")
    out.append("")
    return "\n".join(out)


def _html_cluster(
    number: int, cluster: Cluster, texts: Mapping[str, str] | None, max_text_chars: int
) -> str:
    parts = [
        "<details open><summary>"
        f"{number}. keeper <code>{_e(cluster.keeper_id)}</code> "
        f"(<code>{_e(cluster.keeper_hash[:_SHORT_HASH])}</code>): {cluster.size} memories, "
        f"lowest pair similarity {_similarity(cluster.min_similarity)}</summary>"
    ]
    source = cluster.text_source_id
    if source is not None:
        parts.append(f"<p>The keeper takes the text of <code>{_e(source)}</code>.</p>")
    header = "<th>memory</th><th>hash</th><th>similarity to keeper</th><th>decision</th>"
    if texts is not None:
        header += "<th>text</th>"
    parts.append(f"<table><thead><tr>{header}</tr></thead><tbody>")

    def row(memory_id: str, content_hash: str, similarity: str, decision: str) -> str:
        cells = (
            f"<tr><td><code>{_e(memory_id)}</code></td>"
            f"<td><code>{_e(content_hash[:_SHORT_HASH])}</code></td>"
            f'<td class="num">{similarity}</td><td class="{decision}">{decision}</td>'
        )
        if texts is not None:
            text = _shorten(texts.get(memory_id, ""), max_text_chars)
            cells += f'<td class="text">{_e(text)}</td>'
        return cells + "</tr>"

    parts.append(row(cluster.keeper_id, cluster.keeper_hash, "-", "keeper"))
    for member in cluster.members:
        parts.append(
            row(
                member.memory_id,
                member.content_hash,
                _similarity(member.similarity_to_keeper),
                member.decision.value,
            )
        )
    parts.append("</tbody></table></details>")
    return "\n".join(parts)


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
    settings_summary: Settings = "",
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
