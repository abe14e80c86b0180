"""`memdedup replay` checks the group's membership without joining it.

Joining would make every live member of the group rebalance (once when the
replay joins, once when it leaves), so a refused replay must leave a running
consumer's assignment and generation alone. A group whose consumers were just
killed keeps their members for one session timeout: `--wait` waits that out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from consumer.cli.replay import ReplayRefused, ResetTarget, reset_offsets
from consumer.settings import KafkaSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 3


class Rebalances(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.revoked = 0
        self.assigned = 0

    async def on_partitions_revoked(self, revoked: object) -> None:
        self.revoked += 1

    async def on_partitions_assigned(self, assigned: object) -> None:
        self.assigned += 1


def names() -> tuple[str, str]:
    prefix = f"r{uuid.uuid4().hex[:8]}"
    return f"{prefix}.input", f"{prefix}-group"


async def create_topic(bootstrap: str, topic: str, records: int = 0) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    if records:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(records):
                await producer.send_and_wait(topic, b"x", partition=i % PARTITIONS)
        finally:
            await producer.stop()


async def committed(bootstrap: str, group: str, topic: str) -> dict[int, int | None]:
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await reader.start()
    try:
        return {p: await reader.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    finally:
        await reader.stop()


@contextlib.asynccontextmanager
async def live_member(
    bootstrap: str, group: str, topic: str, listener: Rebalances
) -> AsyncIterator[AIOKafkaConsumer]:
    """A group member that polls all along, as the service does."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=1500,
        heartbeat_interval_ms=500,
    )
    consumer.subscribe([topic], listener=listener)
    await consumer.start()

    async def poll() -> None:
        while True:
            await consumer.getmany(timeout_ms=200)

    poller = asyncio.create_task(poll())
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < PARTITIONS and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert len(consumer.assignment()) == PARTITIONS
        yield consumer
    finally:
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller
        await consumer.stop()


def generation(consumer: AIOKafkaConsumer) -> int:
    return int(consumer._coordinator.generation)


async def test_a_refused_replay_does_not_make_live_members_rebalance(local_broker: Any) -> None:
    bootstrap = local_broker.bootstrap_servers
    topic, group = names()
    await create_topic(bootstrap, topic, records=3)
    kafka = KafkaSettings(
        bootstrap_servers=bootstrap, session_timeout_ms=1500, heartbeat_interval_ms=500
    )
    listener = Rebalances()
    async with live_member(bootstrap, group, topic, listener) as member:
        await member.commit({TopicPartition(topic, p): 1 for p in range(PARTITIONS)})
        await asyncio.sleep(1.0)
        before = (listener.revoked, listener.assigned, generation(member), member.assignment())
        with pytest.raises(ReplayRefused, match="active members"):
            await reset_offsets(kafka, group=group, topic=topic, target=ResetTarget(earliest=True))
        waits: list[str] = []
        with pytest.raises(ReplayRefused, match="still has active members"):
            await reset_offsets(
                kafka,
                group=group,
                topic=topic,
                target=ResetTarget(earliest=True),
                wait_s=2.0,
                on_wait=waits.append,
            )
        assert len(waits) == 1
        assert group in waits[0]
        assert "1 member," in waits[0]
        # Two session timeouts: time for any rebalance the checks set off to show.
        await asyncio.sleep(3.0)
        after = (listener.revoked, listener.assigned, generation(member), member.assignment())
        assert after == before
        assert await committed(bootstrap, group, topic) == dict.fromkeys(range(PARTITIONS), 1)


# A group member in a process of its own, to be SIGKILLed: it commits offset 2 of
# every partition and says so, then idles, heartbeating, until killed.
MEMBER = """
import asyncio, sys
from aiokafka import AIOKafkaConsumer, TopicPartition

async def main(bootstrap, group, topic, partitions, session_ms):
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=session_ms, heartbeat_interval_ms=session_ms // 3,
    )
    consumer.subscribe([topic])
    await consumer.start()
    while len(consumer.assignment()) < partitions:
        await consumer.getmany(timeout_ms=100)
    await consumer.commit({TopicPartition(topic, p): 2 for p in range(partitions)})
    print("ready", flush=True)
    while True:
        await consumer.getmany(timeout_ms=200)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
"""


@contextlib.contextmanager
def killed_member(bootstrap: str, group: str, topic: str, session_ms: int) -> Iterator[float]:
    """Start a member, SIGKILL it once it holds every partition; yields when it
    was killed (time.monotonic())."""
    process = subprocess.Popen(
        [sys.executable, "-c", MEMBER, bootstrap, group, topic, str(PARTITIONS), str(session_ms)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        yield time.monotonic()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


async def test_wait_proceeds_once_a_killed_members_session_expires(local_broker: Any) -> None:
    bootstrap = local_broker.bootstrap_servers
    topic, group = names()
    await create_topic(bootstrap, topic, records=9)
    kafka = KafkaSettings(bootstrap_servers=bootstrap)
    waits: list[str] = []
    with killed_member(bootstrap, group, topic, session_ms=4000) as killed_at:
        assert await committed(bootstrap, group, topic) == dict.fromkeys(range(PARTITIONS), 2)
        with pytest.raises(ReplayRefused, match=r"active members \(1 member.*--wait SECONDS"):
            await reset_offsets(kafka, group=group, topic=topic, target=ResetTarget(earliest=True))
        reset = await reset_offsets(
            kafka,
            group=group,
            topic=topic,
            target=ResetTarget(earliest=True),
            wait_s=60,
            on_wait=waits.append,
        )
        waited = time.monotonic() - killed_at
    assert reset == dict.fromkeys(range(PARTITIONS), 0)
    assert await committed(bootstrap, group, topic) == dict.fromkeys(range(PARTITIONS), 0)
    assert len(waits) == 1
    assert group in waits[0]
    assert "1 member," in waits[0]
    # The member's last heartbeat came at most a third of its session before the kill.
    assert 4.0 * 2 / 3 - 0.5 <= waited < 30


def test_cli_replay_wait_prints_what_it_waits_for(
    local_broker: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from consumer.cli.main import main

    bootstrap = local_broker.bootstrap_servers
    topic, group = names()
    asyncio.run(create_topic(bootstrap, topic, records=3))
    monkeypatch.setenv("MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS", bootstrap)
    replay = ["replay", "--group", group, "--to-earliest", "--topic", topic]
    with killed_member(bootstrap, group, topic, session_ms=4000):
        assert main(replay) == 3
        refused = capsys.readouterr()
        assert "refused" in refused.err
        assert "--wait SECONDS" in refused.err
        assert main([*replay, "--wait", "60"]) == 0
    done = capsys.readouterr()
    waiting = [line for line in done.err.splitlines() if "waiting" in line]
    assert len(waiting) == 1
    assert f"group {group!r}" in waiting[0]
    assert "1 member," in waiting[0]
    assert f"group {group} on {topic} reset to the earliest offset" in done.out
