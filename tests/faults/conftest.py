"""A failed fault test shows what its consumer processes warned about: their logs
live in the test's temporary directory, out of sight of a CI run otherwise."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.harness import consumer_warnings


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when == "call" and report.failed and isinstance(tmp_path, Path):
        lines = consumer_warnings(tmp_path)
        if lines:
            report.sections.append(("consumer warnings", "\n".join(lines)))
