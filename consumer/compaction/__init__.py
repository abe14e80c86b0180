"""Batch compaction: duplicate clusters among stored memories, and the report.

Pure: reading memories from the store and applying merges live with the
`memdedup compact` command.
"""

from consumer.compaction.clusters import (
    Cluster,
    ClusterMember,
    PairVeto,
    ScopeAnalysis,
    analyse_scope,
    guard_pair_veto,
    nearest_neighbours,
)
from consumer.compaction.progress import Progress
from consumer.compaction.report import (
    HTML_REPORT_NAME,
    MARKDOWN_REPORT_NAME,
    histogram,
    render_html,
    render_markdown,
    write_reports,
)

__all__ = [
    "HTML_REPORT_NAME",
    "MARKDOWN_REPORT_NAME",
    "Cluster",
    "ClusterMember",
    "PairVeto",
    "Progress",
    "ScopeAnalysis",
    "analyse_scope",
    "guard_pair_veto",
    "histogram",
    "nearest_neighbours",
    "render_html",
    "render_markdown",
    "write_reports",
]
