"""`memdedup run` does not pay for the report tools: matplotlib (calibrate --png)
and jinja2 (the compaction report) are imported only by the commands that draw
with them (docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys

REPORT_TOOLS = ("jinja2", "markupsafe", "matplotlib", "PIL")


def test_the_service_imports_no_report_tool() -> None:
    # What `memdedup run` imports before the app starts (consumer.cli.main.cmd_run).
    script = (
        "import sys\n"
        "import consumer.cli.main, consumer.app.factory, consumer.cli.gc_policy\n"
        "import consumer.observability.logs, consumer.compaction, consumer.quality.calibrate\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {REPORT_TOOLS!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"
