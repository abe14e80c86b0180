"""The fault suite's failure report: consumer warnings, without routine noise."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults.harness import consumer_warnings


def test_consumer_warnings_keep_warnings_and_errors_of_every_log(tmp_path: Path) -> None:
    def record(level: str, event: str) -> str:
        return json.dumps({"event": event, "level": level})

    (tmp_path / "consumer-0-1.log").write_text(
        "\n".join(
            [
                record("info", "batch_done"),
                record("warning", "batch_abandoned"),
                "WARNING aiokafka.consumer.group_coordinator Heartbeat failed for group g "
                "because it is rebalancing",
                "ERROR aiokafka.consumer.group_coordinator Heartbeat session expired",
                "{not json",
            ]
        )
    )
    (tmp_path / "consumer-1-1.log").write_text(record("error", "batch_failed") + "\n")
    (tmp_path / "notes.txt").write_text(record("error", "not a consumer log"))

    lines = consumer_warnings(tmp_path)

    assert [line.split(": ", 1)[0] for line in lines] == [
        "consumer-0-1",
        "consumer-0-1",
        "consumer-1-1",
    ]
    assert "batch_abandoned" in lines[0]
    assert "Heartbeat session expired" in lines[1]
    assert "batch_failed" in lines[2]


def test_consumer_warnings_keep_the_newest_of_a_long_log(tmp_path: Path) -> None:
    (tmp_path / "c-1.log").write_text(
        "\n".join(json.dumps({"event": f"w{i}", "level": "warning"}) for i in range(100))
    )
    lines = consumer_warnings(tmp_path, per_file=3)
    assert [json.loads(line.split(": ", 1)[1])["event"] for line in lines] == ["w97", "w98", "w99"]
