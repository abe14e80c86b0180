"""Reading whole topics from the beginning to their current end (operator commands).

Nothing here joins a consumer group: the readers are assigned partitions and
never commit, so `memdedup log`, `review` and `compact` can run next to live
consumers without taking partitions away from them.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from consumer.errors import TransientError
from consumer.kafka.offsets import exact_end_offsets
from consumer.kafka.security import aiokafka_kwargs
from consumer.settings import Settings


class TopicsUnavailable(TransientError):
    """The broker cannot be reached or a topic cannot be read; the message says which."""


@asynccontextmanager
async def topic_reader(settings: Settings) -> AsyncIterator[AIOKafkaConsumer]:
    reader = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        client_id=f"{settings.kafka.client_id}-reader",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=8 * 1024 * 1024,
        # Some brokers answer an empty fetch only when this wait expires: keep the
        # tail reads of an operator command short.
        fetch_max_wait_ms=20,
        **aiokafka_kwargs(settings.security),
    )
    try:
        await reader.start()
    except KafkaError as exc:
        raise TopicsUnavailable(
            f"cannot reach Kafka at {settings.kafka.bootstrap_servers} ({type(exc).__name__}); "
            "check MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS"
        ) from exc
    try:
        yield reader
    finally:
        await reader.stop()


async def partitions_of(reader: AIOKafkaConsumer, topics: Sequence[str]) -> list[TopicPartition]:
    found: list[TopicPartition] = []
    existing = await reader.topics()  # also refreshes the metadata asked below
    for topic in topics:
        if topic not in existing:
            continue
        partitions = reader.partitions_for_topic(topic)
        found.extend(TopicPartition(topic, p) for p in sorted(partitions or ()))
    return found


async def end_offsets(settings: Settings, topics: Sequence[str]) -> dict[TopicPartition, int]:
    async with topic_reader(settings) as reader:
        partitions = await partitions_of(reader, topics)
        if not partitions:
            return {}
        return await exact_end_offsets(reader, partitions)


async def read_all(
    settings: Settings,
    topics: Sequence[str],
    *,
    start: dict[TopicPartition, int] | None = None,
    since_ms: int | None = None,
) -> AsyncIterator[Any]:
    """Every record of `topics` up to their end when called, from `start` where
    given, else from the first record timestamped at or after `since_ms` (where
    the broker can tell; otherwise from the beginning), else the beginning."""
    async with topic_reader(settings) as reader:
        partitions = await partitions_of(reader, topics)
        if not partitions:
            return
        ends = await exact_end_offsets(reader, partitions, poll_ms=50)
        if start is None and since_ms is not None:
            start = await _offsets_at(reader, partitions, since_ms, ends)
        remaining = {tp for tp in partitions if (start or {}).get(tp, 0) < ends[tp]}
        for tp in remaining:
            reader.seek(tp, (start or {}).get(tp, 0))
        idle_since = time.monotonic()
        while remaining:
            batches = await reader.getmany(*remaining, timeout_ms=200, max_records=5_000)
            if not any(batches.values()):
                if time.monotonic() - idle_since > 30:
                    stalled = ", ".join(f"{tp.topic}/{tp.partition}" for tp in remaining)
                    raise TopicsUnavailable(f"reading {stalled} stalled")
                continue
            idle_since = time.monotonic()
            for tp, records in batches.items():
                for record in records:
                    if record.offset >= ends[tp]:
                        break
                    yield record
                if records and records[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)


async def _offsets_at(
    reader: AIOKafkaConsumer,
    partitions: Sequence[TopicPartition],
    since_ms: int,
    ends: dict[TopicPartition, int],
) -> dict[TopicPartition, int]:
    try:
        found = await reader.offsets_for_times({tp: since_ms for tp in partitions})
    except (KafkaError, ValueError):  # older brokers: scan from the beginning
        return {}
    # None: nothing that recent in the partition.
    return {tp: ends[tp] if at is None else at.offset for tp, at in found.items()}


async def publish(settings: Settings, topic: str, records: Sequence[tuple[bytes, bytes]]) -> None:
    """Publish (key, value) records and wait for every acknowledgement."""
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        acks="all",
        **aiokafka_kwargs(settings.security),
    )
    try:
        await producer.start()
    except KafkaError as exc:
        raise TopicsUnavailable(
            f"cannot reach Kafka at {settings.kafka.bootstrap_servers} ({type(exc).__name__})"
        ) from exc
    try:
        pending = [await producer.send(topic, value=value, key=key) for key, value in records]
        for future in pending:
            await future
    finally:
        await producer.stop()


async def await_results(
    settings: Settings,
    topic: str,
    start: dict[TopicPartition, int],
    wanted: set[str],
    *,
    id_of: Any,
    timeout_s: float,
    on_result: Any = None,
) -> dict[str, Any]:
    """Records of `topic` from `start` whose `id_of(record)` is in `wanted`, until
    all arrived or `timeout_s` passed; returns what arrived, by id."""
    found: dict[str, Any] = {}
    async with topic_reader(settings) as reader:
        partitions = await partitions_of(reader, [topic])
        if not partitions:
            return found
        reader.assign(partitions)
        for tp in partitions:
            reader.seek(tp, start.get(tp, 0))
        deadline = time.monotonic() + timeout_s
        while len(found) < len(wanted) and time.monotonic() < deadline:
            batches = await reader.getmany(timeout_ms=300, max_records=2_000)
            for records in batches.values():
                for record in records:
                    key = id_of(record)
                    if key in wanted and key not in found:
                        found[key] = record
                        if on_result is not None:
                            on_result(record)
    return found
