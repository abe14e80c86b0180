"""configure_logging: the standard library's records (aiokafka's among them) are
rendered like the service's own, so a JSON log holds only JSON lines."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from consumer.observability.logs import configure_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    structlog.reset_defaults()


def json_lines(text: str) -> list[dict[str, object]]:
    lines = text.splitlines()
    assert lines, "nothing was logged"
    return [json.loads(line) for line in lines]


def test_stdlib_records_are_one_json_object_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="INFO", fmt="json")
    logging.getLogger("aiokafka").warning("x %s", 1)
    [line] = json_lines(capsys.readouterr().err)
    assert line["event"] == "x 1"
    assert line["level"] == "warning"
    assert line["logger"] == "aiokafka"
    assert "timestamp" in line


def test_stdlib_exceptions_stay_on_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(fmt="json")
    try:
        raise ValueError("broken")
    except ValueError:
        logging.getLogger("aiokafka.conn").exception("connection lost")
    [line] = json_lines(capsys.readouterr().err)
    assert line["event"] == "connection lost"
    assert line["level"] == "error"
    assert "ValueError: broken" in str(line["exception"])


def test_service_and_library_lines_interleave_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="INFO", fmt="json")
    structlog.get_logger("consumer.app.factory").info("service_ready", group_id="g")
    logging.getLogger("aiokafka.consumer.group_coordinator").warning(
        "Heartbeat failed for group %s because it is rebalancing", "g"
    )
    logging.getLogger("aiokafka").info("below the libraries' level: dropped")
    first, second = json_lines(capsys.readouterr().err)
    assert first["event"] == "service_ready"
    assert first["group_id"] == "g"
    assert second["event"] == "Heartbeat failed for group g because it is rebalancing"
    assert second["logger"] == "aiokafka.consumer.group_coordinator"


def test_configuring_twice_does_not_duplicate_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(fmt="json")
    configure_logging(fmt="json")
    logging.getLogger("httpx").warning("once")
    assert len(json_lines(capsys.readouterr().err)) == 1


def test_console_format_renders_library_records_too(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(fmt="console")
    logging.getLogger("aiokafka").warning("x %s", 1)
    structlog.get_logger().warning("service_line", partition=3)
    err = capsys.readouterr().err
    library, service = err.splitlines()
    assert "x 1" in library
    assert "warning" in library
    assert "aiokafka" in library
    assert "service_line" in service
    assert "partition=3" in service
