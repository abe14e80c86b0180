"""The compaction report: histogram bins, Markdown, HTML and the files."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

import pytest

from consumer.compaction import (
    HTML_REPORT_NAME,
    MARKDOWN_REPORT_NAME,
    ScopeAnalysis,
    analyse_scope,
    histogram,
    render_html,
    render_markdown,
    write_reports,
)
from consumer.domain.models import MemoryRecord
from consumer.domain.thresholds import Bands

from .helpers import FIXED_NOW
from .test_compaction_clusters import gram_vectors, memory

BANDS = Bands(duplicate_threshold=0.95, merge_threshold=0.85)
SECRET = "The user's bank PIN is 4321"
SCRIPT = "<script>alert('x')</script> likes <b>bold</b> & | pipes"


def allow_all(_first: MemoryRecord, _second: MemoryRecord) -> str | None:
    return None


def scope_memories(tenant_id: str, namespace: str, prefix: str) -> list[MemoryRecord]:
    # a, b, c: b is a near duplicate of a (skipped), c a paraphrase (merged); d alone.
    # Similarities sit mid-bin, clear of float32 rounding at the bin edges.
    gram = [
        [1.0, 0.975, 0.905, 0.205],
        [0.975, 1.0, 0.885, 0.205],
        [0.905, 0.885, 1.0, 0.205],
        [0.205, 0.205, 0.205, 1.0],
    ]
    vectors = gram_vectors(gram)
    records = [
        memory(f"{prefix}-{name}", vectors[i], minute=i, tenant_id=tenant_id, namespace=namespace)
        for i, name in enumerate("abcd")
    ]
    records.append(memory(f"{prefix}-e", None, tenant_id=tenant_id, namespace=namespace))
    return records


def analyses() -> list[ScopeAnalysis]:
    def veto(first: MemoryRecord, second: MemoryRecord) -> str | None:
        return "numbers" if first.memory_id.startswith("t2") else None

    return [
        analyse_scope(scope_memories("tenant-1", "prefs", "t1p"), bands=BANDS, pair_veto=allow_all),
        analyse_scope(scope_memories("tenant-2", "prefs", "t2p"), bands=BANDS, pair_veto=veto),
        analyse_scope(
            scope_memories("tenant-1", "notes", "t1n"),
            bands=Bands(duplicate_threshold=0.98, merge_threshold=0.92, merge_policy="synthesize"),
            pair_veto=allow_all,
        ),
    ]


def render_both(**kwargs: object) -> tuple[str, str]:
    options: dict[str, object] = {
        "texts": None,
        "generated_at": FIXED_NOW,
        "settings_summary": {"mode": "dry run", "neighbours": 10},
        **kwargs,
    }
    scopes = analyses()
    return (
        render_markdown(scopes, **options),  # type: ignore[arg-type]
        render_html(scopes, **options),  # type: ignore[arg-type]
    )


def test_histogram_bins_are_coarse_below_0_8_and_fine_above() -> None:
    bins = histogram([-0.3, 0.0, 0.049, 0.05, 0.79, 0.8, 0.805, 0.999, 1.0, 1.0000001])

    assert len(bins) == 16 + 20
    assert (bins[0].low, bins[0].high) == (0.0, 0.05)
    assert (bins[15].low, bins[15].high) == (0.75, 0.8)
    assert (bins[16].low, bins[16].high) == (0.8, 0.81)
    assert (bins[-1].low, bins[-1].high) == (0.99, 1.0)
    counts = {b.label: b.count for b in bins if b.count}
    assert counts == {
        "0.00-0.05": 3,
        "0.05-0.10": 1,
        "0.75-0.80": 1,
        "0.80-0.81": 2,
        "0.99-1.00": 3,
    }


def test_markdown_has_the_summary_the_histogram_and_the_clusters() -> None:
    markdown, _ = render_both()

    assert markdown.startswith("# Compaction report\n")
    assert "- generated: 2025-01-02T03:04:05+00:00" in markdown
    assert "- mode: dry run" in markdown
    assert "- neighbours: 10" in markdown
    # Summary: one row per scope, vetoes by reason.
    assert "| tenant-1 | prefs | keep_existing | 0.85 | 0.95 | 5 | 1 | 3 | 0 | 1 | 2 |" in markdown
    assert "| tenant-2 | prefs | keep_existing | 0.85 | 0.95 | 5 | 1 | 3 | numbers 3 | 0 | 0 |" in (
        markdown
    )
    assert "| tenant-1 | notes | synthesize | 0.92 | 0.98 | 5 | 1 | 1 | 0 | 1 | 1 |" in markdown
    assert "| **total** | | | | | 15 | 3 | 7 | 3 | 2 | 3 |" in markdown
    # One histogram per namespace, in a code block, with the thresholds marked.
    histograms = re.findall(r"### (\w+)\n\n(.*?)\n\n```text\n(.*?)```", markdown, re.S)
    assert [(name, summary) for name, summary, _ in histograms] == [
        ("notes", "1 scope, 4 memories compared."),
        ("prefs", "2 scopes, 8 memories compared."),
    ]
    prefs_bars = histograms[1][2].splitlines()
    assert len(prefs_bars) == 36
    bar = next(line for line in prefs_bars if line.startswith("0.97-0.98"))
    assert re.fullmatch(r"0\.97-0\.98  4  #{40}", bar)
    assert next(line for line in prefs_bars if line.startswith("0.85-0.86")).endswith(
        "<- merge >= 0.85"
    )
    assert next(line for line in prefs_bars if line.startswith("0.95-0.96")).endswith(
        "<- duplicate >= 0.95"
    )
    # The cluster of tenant-1/prefs with its members and decisions.
    assert "### tenant-1 / prefs: 1 cluster, 2 memories would be removed" in markdown
    assert "#### 1. keeper `t1p-a` (`hash-t1p-a`): 3 memories" in markdown
    assert re.search(r"\| `t1p-b` \| `hash-t1p-b` \| 0\.97[45] \| skipped \|", markdown)
    assert re.search(r"\| `t1p-c` \| `hash-t1p-c` \| 0\.90[45] \| merged \|", markdown)


def test_memory_text_is_left_out_unless_given() -> None:
    markdown, page = render_both()

    for report in (markdown, page):
        assert "memory t1p-a" not in report  # the content of the records
        assert "text" not in re.findall(r"<th>(\w+)</th>", report)
    assert "| text |" not in markdown


def test_memory_text_is_shown_escaped_when_given() -> None:
    texts = {"t1p-a": SECRET, "t1p-b": SCRIPT, "t1p-c": "line one\nline two"}
    markdown, page = render_both(texts=texts)

    assert SECRET in markdown
    assert SECRET not in page  # its apostrophe is escaped
    # HTML: no markup from a memory survives, and the report has no scripts at all;
    # the texts read as they were written.
    assert "<script" not in page
    assert "<b>" not in page
    assert (
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; likes &lt;b&gt;bold&lt;/b&gt; &amp;"
        in page
    )
    shown = [html.unescape(cell) for cell in re.findall(r'<td class="text">(.*?)</td>', page)]
    assert [text for text in shown if text] == [SECRET, SCRIPT, "line one line two"]
    # Markdown: no raw HTML, and a pipe cannot break the table.
    assert "<script" not in markdown
    assert "&lt;script&gt;" in markdown
    assert "\\| pipes" in markdown
    assert "line one line two" in markdown


def test_long_texts_are_shortened() -> None:
    markdown, page = render_both(texts={"t1p-a": "word " * 200}, max_text_chars=50)

    for report in (markdown, page):
        assert "word " * 9 + "word\u2026" in report
        assert "word " * 20 not in report


def test_html_is_one_page_with_an_svg_histogram_per_namespace() -> None:
    _, page = render_both()

    assert page.startswith("<!DOCTYPE html>")
    assert "<style>" in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<svg") == 2
    assert "merge 0.85" in page
    assert "duplicate 0.95" in page
    assert "merge 0.92" in page
    assert "0.97-0.98: 4" in page  # a bar's tooltip
    assert '<td class="skipped">skipped</td>' in page
    assert "<code>t1p-a</code>" in page


def test_names_from_events_are_escaped() -> None:
    vectors = gram_vectors([[1.0, 0.9], [0.9, 1.0]])
    tenant = "<img src=x onerror=alert(1)>|"
    scope = analyse_scope(
        [memory("a", vectors[0], tenant_id=tenant), memory("b", vectors[1], tenant_id=tenant)],
        bands=BANDS,
        pair_veto=allow_all,
    )
    markdown = render_markdown([scope], texts=None, generated_at=FIXED_NOW, settings_summary="")
    page = render_html([scope], texts=None, generated_at=FIXED_NOW, settings_summary="")

    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;|" in page
    # In an attribute too (the histogram's aria-label names the namespace).
    quoted = analyse_scope(
        [memory("a", vectors[0], namespace='x" onload="alert(1)')],
        bands=BANDS,
        pair_veto=allow_all,
    )
    page = render_html([quoted], texts=None, generated_at=FIXED_NOW, settings_summary="")
    assert 'onload="' not in page
    assert 'aria-label="Pair similarities in namespace x&#34; onload=&#34;alert(1)"' in page
    assert "<img" not in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;\\|" in markdown


def test_replace_with_newer_names_the_text_source() -> None:
    vectors = gram_vectors([[1.0, 0.9], [0.9, 1.0]])
    scope = analyse_scope(
        [memory("a", vectors[0]), memory("b", vectors[1], minute=5)],
        bands=Bands(0.95, 0.85, "replace_with_newer"),
        pair_veto=allow_all,
    )
    markdown = render_markdown([scope], texts=None, generated_at=FIXED_NOW, settings_summary="")

    assert "The keeper takes the text of `b`." in markdown


def test_an_empty_run_renders() -> None:
    markdown = render_markdown([], texts=None, generated_at=FIXED_NOW, settings_summary="")
    page = render_html([], texts=None, generated_at=FIXED_NOW, settings_summary="")

    assert "No clusters: compaction would change nothing." in markdown
    assert "No clusters: compaction would change nothing." in page


def test_write_reports_writes_both_files(tmp_path: Path) -> None:
    directory = tmp_path / "reports" / "run-1"
    markdown_path, html_path = write_reports(
        analyses(), directory, generated_at=FIXED_NOW + timedelta(hours=1)
    )

    assert markdown_path == directory / MARKDOWN_REPORT_NAME == directory / "compaction-report.md"
    assert html_path == directory / HTML_REPORT_NAME == directory / "compaction-report.html"
    assert markdown_path.read_text(encoding="utf-8") == render_markdown(
        analyses(), texts=None, generated_at=FIXED_NOW + timedelta(hours=1), settings_summary=""
    )
    assert html_path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [MARKDOWN_REPORT_NAME, HTML_REPORT_NAME]
    )


@pytest.mark.parametrize("settings", ["store=qdrant", {"store": "qdrant"}])
def test_settings_summary_may_be_text_or_a_mapping(settings: object) -> None:
    markdown, page = render_both(settings_summary=settings)

    assert "qdrant" in markdown
    assert "qdrant" in page
