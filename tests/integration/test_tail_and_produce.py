"""`memdedup produce` stopping at an oversized line and `memdedup tail`, as users
run them, against the local broker (and the real consumer for tail)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from consumer.kafka.topic_reader import read_all
from consumer.kafka.topics import ensure_topics
from consumer.settings import Settings
from schemas import DeadLetterCode, DeadLetterHeaders
from tests.integration.harness import (
    StoreFactory,
    event,
    make_settings,
    produce,
    read_outputs,
    running_consumer,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

MEMDEDUP = [sys.executable, "-m", "consumer.cli"]


def cli_env(settings: Settings) -> dict[str, str]:
    env = {"MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers}
    for name in ("input", "accepted", "merged", "skipped", "dlq", "command_results", "reversed"):
        env[f"MEMDEDUP_TOPICS__{name.upper()}"] = getattr(settings.topics, name)
    return env


async def cli(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`memdedup ARGV` as a separate process: exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        *MEMDEDUP,
        *argv,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_produce_publishes_the_lines_before_an_oversized_one_then_stops(
    local_broker: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    await ensure_topics(settings)
    good = [json.dumps(event(f"e{i}", f"User likes fact number {i}")) for i in (1, 2, 4)]
    oversized = json.dumps(event("e3", "x" * (1024 * 1024 + 10)))
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join([good[0], good[1], oversized, good[2]]) + "\n")

    code, out, err = await cli(["produce", str(path)], cli_env(settings))

    assert code == 1, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err  # one line
    assert f"{path} line 3 is a " in err
    assert "over the producer's limit of 1,048,576 bytes" in err
    assert "published 2 lines before it, nothing after it" in err
    assert "Split or shrink" in err
    assert "published" not in out
    ids = [
        json.loads(record.value)["event_id"]
        async for record in read_all(settings, [settings.topics.input])
    ]
    assert sorted(ids) == ["e1", "e2"]


async def test_tail_shows_every_decision_and_dead_letter(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    env = cli_env(settings)
    stores = StoreFactory("edge", settings)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(
                settings,
                [
                    event("t1", "User prefers tea"),
                    event("t2", "User lives in Lisbon", namespace="bio"),
                    b"{not json",
                ],
            )
            await read_outputs(settings, at_least=3)
            await produce(settings, [event("t3", "user prefers tea.")])
            outputs = await read_outputs(settings, at_least=4)
    finally:
        await stores.close()
    assert len(outputs) == 4

    code, out, err = await cli(["tail", "--topic", "all", "--from-beginning", "--exit-at-end"], env)
    assert code == 0, err
    header, _rule, *rows = out.splitlines()
    assert header.split()[:4] == ["input", "event_id", "scope", "outcome"]
    assert len(rows) == len(outputs)
    by_event = {row.split()[1]: row.split()[3] for row in rows}
    assert by_event == {
        "t1": "accepted",
        "t2": "accepted",
        "t3": "skipped",
        "-": "dlq:invalid_json",
    }
    assert "tea" not in out
    assert "Lisbon" not in out

    code, out, err = await cli(
        ["tail", "--from-beginning", "--exit-at-end", "--json", "--topic", "all"], env
    )
    assert code == 0, err
    documents = [json.loads(line) for line in out.splitlines()]
    assert sorted(d["outcome"] for d in documents) == [
        "accepted",
        "accepted",
        "dlq:invalid_json",
        "skipped",
    ]
    [dead] = [d for d in documents if d["outcome"].startswith("dlq:")]
    assert dead["error_code"] == "invalid_json"
    assert dead["error_detail"]

    code, out, _ = await cli(["tail", "--from-beginning", "--exit-at-end", "--topic", "dlq"], env)
    assert code == 0
    assert [row.split()[3] for row in out.splitlines()[2:]] == ["dlq:invalid_json"]

    # Without --from-beginning, nothing already there: caught up at once.
    code, out, _ = await cli(["tail", "--exit-at-end"], env)
    assert (code, out.splitlines()[2:]) == (0, [])


async def test_tail_follows_new_records_and_stops_quietly_on_ctrl_c(
    local_broker: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    await ensure_topics(settings)
    # An old dead letter: a tail from the end does not show it.
    await produce_dead_letter(settings, "old")
    process = await asyncio.create_subprocess_exec(
        *MEMDEDUP,
        "tail",
        "--topic",
        "dlq",
        env={**os.environ, **cli_env(settings)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # A suite started in the background (`make test &`) ignores SIGINT, and the
        # child would inherit that; a terminal's Ctrl-C is what is tested here.
        preexec_fn=_default_sigint,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        # The header is printed once the start positions are taken.
        header = await asyncio.wait_for(process.stdout.readline(), timeout=60)
        assert header.split()[:2] == [b"input", b"event_id"]
        await asyncio.wait_for(process.stdout.readline(), timeout=10)  # the rule
        await produce_dead_letter(settings, "new")
        row = (await asyncio.wait_for(process.stdout.readline(), timeout=30)).decode()
        assert row.split()[1] == "new"
        assert "dlq:too_large" in row
    finally:
        process.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0
    assert rest == b""
    assert b"Traceback" not in err


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def produce_dead_letter(settings: Settings, event_id: str) -> None:
    """A record on the DLQ as the consumer writes one (no model needed)."""
    headers = DeadLetterHeaders(
        error_code=DeadLetterCode.TOO_LARGE,
        error_detail="record value is 70000 bytes; the limit is 65536",
        source_topic=settings.topics.input,
        source_partition=0,
        source_offset=0,
    ).to_kafka()
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(
            settings.topics.dlq,
            value=b"x",
            headers=[
                *((k, v.encode()) for k, v in headers.items()),
                ("event_id", event_id.encode()),
            ],
        )
    finally:
        await producer.stop()


async def test_tail_names_missing_topics_and_the_fix(local_broker: Any, tmp_path: Path) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    code, out, err = await cli(["tail", "--exit-at-end"], cli_env(settings))
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    assert settings.topics.accepted in err
    assert "memdedup topics" in err
    assert err.count("\n") == 1
