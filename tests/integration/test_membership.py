"""The group fence against the real broker: a member of the current generation is
confirmed; one whose event loop stalled past its session, while another member
joined, has been evicted; a write during which the group moved to another
generation is not acted on, however recent the answer before it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from consumer.errors import PartitionsLost
from consumer.kafka.topics import ensure_topics
from consumer.settings import Settings
from consumer.state.membership import GroupMembership, fenced
from tests.integration.harness import make_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def group_consumer(settings: Settings) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        settings.topics.input,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=settings.kafka.group_id,
        enable_auto_commit=False,
        session_timeout_ms=1_500,
        heartbeat_interval_ms=500,
    )


async def poll_until_assigned(consumer: AIOKafkaConsumer, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not consumer.assignment():
        assert time.monotonic() < deadline, "never got a partition"
        await consumer.getmany(timeout_ms=200)


class OtherMember(threading.Thread):
    """A second member on its own event loop, which the stall does not block."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(daemon=True)
        self._settings = settings
        self.stop = threading.Event()
        self.assigned: set[int] = set()

    def run(self) -> None:
        asyncio.run(self._member())

    async def _member(self) -> None:
        consumer = group_consumer(self._settings)
        await consumer.start()
        try:
            while not self.stop.is_set():
                await consumer.getmany(timeout_ms=200)
                self.assigned = {tp.partition for tp in consumer.assignment()}
        finally:
            await consumer.stop()


@asynccontextmanager
async def assigned_member(
    settings: Settings,
) -> AsyncIterator[tuple[AIOKafkaConsumer, OtherMember]]:
    """A group member holding every partition, and a second member not started yet."""
    await ensure_topics(settings)
    consumer = group_consumer(settings)
    await consumer.start()
    other = OtherMember(settings)
    try:
        await poll_until_assigned(consumer)
        yield consumer, other
    finally:
        other.stop.set()
        await consumer.stop()
        if other.is_alive():
            other.join(10)


async def test_a_member_is_confirmed_until_a_stall_past_its_session_evicts_it(
    local_broker: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    async with assigned_member(settings) as (consumer, other):
        membership = GroupMembership(lease_s=0.0)  # ask every time
        membership.bind(consumer)
        await membership.ensure()
        await membership.ensure()
        assert membership.confirmations == 2

        other.start()  # joins while this loop is stalled and cannot rejoin
        deadline = time.monotonic() + 30
        while len(other.assigned) < settings.topics.partitions:
            assert time.monotonic() < deadline, "the stalled member was never evicted"
            time.sleep(0.2)  # the stall under test: blocks the loop, no heartbeat goes out
        with pytest.raises(PartitionsLost):
            await membership.ensure()


async def test_a_write_during_which_the_group_rebalanced_is_not_acted_on(
    local_broker: Any, tmp_path: Path
) -> None:
    """The answer before the write covers a long lease, and the consumer rejoins
    the new generation on its own (nothing holds its rebalance back): the write
    landed, but the partitions it was for may have moved meanwhile, so the check
    after it fails."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    async with assigned_member(settings) as (consumer, other):
        membership = GroupMembership(lease_s=600.0)
        membership.bind(consumer)
        coordinator: Any = consumer._coordinator
        before = coordinator.generation
        written: list[int] = []

        async def write_while_another_member_joins() -> None:
            other.start()
            deadline = time.monotonic() + 30
            while coordinator.generation == before:
                assert time.monotonic() < deadline, "the group never rebalanced"
                await consumer.getmany(timeout_ms=200)
            written.append(coordinator.generation)

        with pytest.raises(PartitionsLost):
            await fenced(membership, write_while_another_member_joins())
        assert len(written) == 1
        assert written[0] != before
        asked = membership.confirmations
        await membership.ensure()  # the old answer covers no write of the new generation
        assert membership.confirmations == asked + 1
