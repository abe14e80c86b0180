"""Resetting a consumer group's committed offsets so a topic is processed again.

Replaying decided events is safe: each re-emits its stored decision byte for
byte and writes nothing. The reset joins the group itself, which tells active
members apart from stale ones on every broker: if any other member is alive, it
keeps some partitions and the reset is refused without committing anything.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError

from consumer.kafka_security import aiokafka_kwargs
from consumer.offsets import exact_end_offsets
from consumer.settings import KafkaSettings, SecuritySettings


class ReplayRefused(Exception):
    """The reset cannot be done as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ResetTarget:
    earliest: bool = False
    at: datetime | None = None
    offsets: tuple[tuple[int, int], ...] = ()

    def describe(self) -> str:
        if self.earliest:
            return "the earliest offset"
        if self.at is not None:
            return f"the first offset at or after {self.at.isoformat()}"
        return "the given offsets"


class _JoinListener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, joined: asyncio.Event) -> None:
        self._joined = joined

    async def on_partitions_revoked(self, revoked: object) -> None:
        self._joined.clear()

    async def on_partitions_assigned(self, assigned: object) -> None:
        self._joined.set()


def parse_offset(spec: str) -> tuple[int, int]:
    """`P:O` -> (partition, offset)."""
    partition, sep, offset = spec.partition(":")
    if not sep or not partition.isdigit() or not offset.isdigit():
        raise ReplayRefused(f"--to-offset {spec!r}: expected PARTITION:OFFSET, e.g. 0:1200")
    return int(partition), int(offset)


async def reset_offsets(
    kafka: KafkaSettings,
    *,
    group: str,
    topic: str,
    target: ResetTarget,
    join_timeout_s: float = 30.0,
    security: SecuritySettings | None = None,
) -> dict[int, int]:
    """Commit the target offsets for every partition of `topic` in `group`;
    returns what was committed, by partition. `security`: the connection security
    of the clients (plaintext when None)."""
    client_kwargs = aiokafka_kwargs(security or SecuritySettings())
    joined = asyncio.Event()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        client_id="memdedup-replay",
        enable_auto_commit=False,
        session_timeout_ms=kafka.session_timeout_ms,
        heartbeat_interval_ms=kafka.heartbeat_interval_ms,
        **client_kwargs,
    )
    consumer.subscribe([topic], listener=_JoinListener(joined))
    try:
        # start() returns once the group has given this member its assignment.
        await asyncio.wait_for(consumer.start(), join_timeout_s)
    except KafkaError as exc:
        await consumer.stop()
        raise ReplayRefused(
            f"cannot reach the brokers at {kafka.bootstrap_servers}: {type(exc).__name__}"
        ) from exc
    except TimeoutError as exc:
        await consumer.stop()
        raise ReplayRefused(
            f"could not join group {group!r} within {join_timeout_s:.0f}s: its consumers "
            "may still be running or rebalancing; stop them, wait one session timeout "
            f"({kafka.session_timeout_ms} ms), and retry"
        ) from exc
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            await consumer.topics()
            partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise ReplayRefused(f"topic {topic!r} does not exist on {kafka.bootstrap_servers}")
        everything = {TopicPartition(topic, p) for p in partitions}
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(joined.wait(), join_timeout_s)
        assigned = set(consumer.assignment())
        if assigned != everything:
            raise ReplayRefused(
                f"group {group!r} has active members holding "
                f"{len(everything - assigned)} of {len(everything)} partitions of {topic!r}; "
                "stop its consumers (memdedup run) first, then replay"
            )
        reader = AIOKafkaConsumer(
            bootstrap_servers=kafka.bootstrap_servers, enable_auto_commit=False, **client_kwargs
        )
        await reader.start()
        try:
            wanted = await _target_offsets(consumer, reader, sorted(everything), target)
        finally:
            await reader.stop()
        await consumer.commit(wanted)
        return {tp.partition: offset for tp, offset in wanted.items()}
    finally:
        await consumer.stop()


async def _target_offsets(
    consumer: AIOKafkaConsumer,
    reader: AIOKafkaConsumer,
    partitions: list[TopicPartition],
    target: ResetTarget,
) -> dict[TopicPartition, int]:
    beginning = await consumer.beginning_offsets(partitions)
    end = await exact_end_offsets(reader, partitions)
    if target.earliest:
        return dict(beginning)
    if target.at is not None:
        stamp = int(target.at.timestamp() * 1000)
        found = await consumer.offsets_for_times({tp: stamp for tp in partitions})
        return {tp: found[tp].offset if found.get(tp) else end[tp] for tp in partitions}
    wanted: dict[TopicPartition, int] = {}
    by_number = {tp.partition: tp for tp in partitions}
    for partition, offset in target.offsets:
        tp = by_number.get(partition)
        if tp is None:
            raise ReplayRefused(f"partition {partition} does not exist (have {sorted(by_number)})")
        if not beginning[tp] <= offset <= end[tp]:
            raise ReplayRefused(
                f"offset {offset} of partition {partition} is outside {beginning[tp]}..{end[tp]}"
            )
        wanted[tp] = offset
    return wanted
