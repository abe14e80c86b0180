"""`memdedup rebuild` logs at the configured level (INFO by default): no debug line
per decided event."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

import consumer.cli.rebuild
from consumer.cli import main as cli


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.upper().startswith("MEMDEDUP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMDEDUP_LOG__FORMAT", "console")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    structlog.reset_defaults()


class Report:
    def render(self) -> str:
        return "rebuilt: 0 events"


@pytest.fixture
def logging_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild that logs as the reprocessing does, and decides nothing."""

    async def fake_rebuild(settings: Any, **kwargs: Any) -> Report:
        log = structlog.get_logger("consumer.service.processor")
        log.debug("decided", event_id="e1", decision="accepted")
        log.info("batch_done", records=1)
        return Report()

    monkeypatch.setattr(consumer.cli.rebuild, "rebuild", fake_rebuild)


@pytest.mark.usefixtures("logging_rebuild")
def test_rebuild_logs_at_info_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rebuild", "--target-collection", "memories-v2"]) == 0
    out, err = capsys.readouterr()
    assert "rebuilt: 0 events" in out
    assert "batch_done" in err
    assert "decided" not in out + err
    assert "debug" not in out + err


@pytest.mark.usefixtures("logging_rebuild")
def test_rebuild_follows_the_log_level_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMDEDUP_LOG__LEVEL", "DEBUG")
    assert cli.main(["rebuild", "--target-collection", "memories-v2"]) == 0
    assert "decided" in capsys.readouterr().err
