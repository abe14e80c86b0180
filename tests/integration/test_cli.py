"""The `memdedup` command as users run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from consumer.kafka.localbroker import free_port

pytestmark = pytest.mark.integration

MEMDEDUP = [sys.executable, "-m", "consumer.cli"]


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMDEDUP, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_demo_shows_every_decision_and_dead_letter_code() -> None:
    result = run_cli("demo")
    assert result.returncode == 0, result.stderr[-2000:]
    # The table shows every dead letter: no log line repeats one, nor warns at all.
    assert "warning" not in result.stderr.lower(), result.stderr[-2000:]
    out = result.stdout
    for expected in (
        "accepted",
        "skipped",
        "merged",
        "exact",
        "semantic sim=",
        "recent",
        "(re-emitted)",
        "dlq:invalid_json",
        "dlq:schema_violation",
        "dlq:unsupported_schema_version",
        "dlq:empty_content",
        "dlq:conflicting_event_id",
    ):
        assert expected in out, f"{expected!r} missing from the demo output:\n{out}"
    # Seven memories accepted; the redelivered event's copy is shown at its own
    # input position and counted apart.
    assert "accepted: 7," in out
    assert "re-emitted: 1" in out
    copy = next(line for line in out.splitlines() if "(re-emitted)" in line)
    assert copy.startswith("p2@6 "), copy


def test_invalid_settings_name_the_variable_to_fix() -> None:
    result = run_cli("run", env={"MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD": "1.5"})
    assert result.returncode == 2
    assert "MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD" in result.stderr
    assert "less than or equal to 1" in result.stderr


def test_config_file_errors_are_reported(tmp_path: Path) -> None:
    config = tmp_path / "memdedup.yaml"
    config.write_text(
        "dedup:\n  namespaces:\n    prefs: {duplicate_threshold: 0.7, merge_threshold: 0.8}\n"
    )
    result = run_cli("run", "--config", str(config))
    assert result.returncode == 2
    assert "dedup.namespaces.prefs" in result.stderr
    assert "merge_threshold" in result.stderr
    missing = run_cli("run", "--config", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 2
    assert "cannot read config file" in missing.stderr


def test_produce_reports_a_missing_file(tmp_path: Path) -> None:
    result = run_cli("produce", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2
    assert "does not exist" in result.stderr


def test_broker_command_prints_its_address_and_serves_kafka() -> None:
    process = subprocess.Popen(
        [*MEMDEDUP, "broker"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        address = process.stdout.readline().strip()
        host, port = address.split(":")
        assert host == "127.0.0.1"
        import socket

        with socket.create_connection((host, int(port)), timeout=5):
            pass
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.returncode == 0


def test_replay_rejects_malformed_targets() -> None:
    bad_offset = run_cli("replay", "--group", "g", "--to-offset", "zero:1")
    assert bad_offset.returncode == 3
    assert "PARTITION:OFFSET" in bad_offset.stderr
    naive = run_cli("replay", "--group", "g", "--to-datetime", "2026-11-01T00:00:00")
    assert naive.returncode == 3
    assert "needs a UTC offset" in naive.stderr
    neither = run_cli("replay", "--group", "g")
    assert neither.returncode == 2
    assert "one of the arguments" in neither.stderr


def test_migrate_collection_says_what_it_needs() -> None:
    embedded = run_cli("migrate-collection", "--to", "memories-v2")
    assert embedded.returncode == 2
    assert "set MEMDEDUP_QDRANT__URL" in embedded.stderr

    # Nothing listens there: the message names the settings to check, and says a
    # run again resumes.
    url = f"http://127.0.0.1:{free_port()}"
    unreachable = run_cli(
        "migrate-collection", "--to", "memories-v2", env={"MEMDEDUP_QDRANT__URL": url}
    )
    assert unreachable.returncode == 1
    assert f"Qdrant at {url} failed" in unreachable.stderr
    assert "it resumes" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr
