"""BrokerPublisher through the real broker: records with set partitions, and keyed
records (to the partition the producer's partitioner picks), go out as record
batches built by the publisher, and every record's offset is exact."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import DefaultPartitioner
from faststream import BaseMiddleware
from faststream.kafka import KafkaBroker

from consumer.kafka.partitioning import CachedDefaultPartitioner
from consumer.kafka.publisher import BrokerPublisher
from consumer.kafka.records import OCTET_STREAM, OutgoingRecord
from consumer.kafka.topic_reader import read_all
from consumer.kafka.topics import ensure_topics
from consumer.settings import Settings
from tests.integration.harness import make_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@asynccontextmanager
async def connected_broker(
    local_broker: Any, tmp_path: Path, **broker_options: Any
) -> AsyncIterator[tuple[Settings, KafkaBroker]]:
    """A test's settings with its topics created, and a connected broker client."""
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    await ensure_topics(settings)
    broker = KafkaBroker(local_broker.bootstrap_servers, **broker_options)
    await broker.connect()
    try:
        yield settings, broker
    finally:
        await broker.stop()


async def test_batched_records_get_the_offsets_they_are_stored_at(
    local_broker: Any, tmp_path: Path
) -> None:
    async with connected_broker(local_broker, tmp_path, max_batch_size=4_096) as (
        settings,
        broker,
    ):
        topic = settings.topics.changelog
        publisher = BrokerPublisher(broker)
        assert publisher._direct_producer() is not None  # the batching path runs
        # Interleaved partitions, and more bytes than one batch holds (4 KiB).
        records = [
            OutgoingRecord(topic, f"k{i}".encode(), f"v{i}".encode() * 200, {}, i % 2, False)
            for i in range(40)
        ]
        first = await publisher.publish_all(records[:25])
        second = await publisher.publish_all(records[25:])
        # Without the producer's partitioner, keyed records go one by one.
        keyed = await publisher.publish_all(
            [OutgoingRecord(settings.topics.accepted, b"key", b"keyed")]
        )
    assert keyed == [0]

    stored = {
        (r.partition, r.offset): (r.key, r.value, list(r.headers))
        async for r in read_all(settings, [topic])
    }
    assert len(stored) == len(records)
    for record, offset in zip(records, first + second, strict=True):
        assert stored[(record.partition, offset)] == (record.key, record.value, [])


async def test_keyed_records_are_batched_to_the_partitions_the_producer_would_pick(
    local_broker: Any, tmp_path: Path
) -> None:
    sent_one_by_one: list[bytes] = []
    async with connected_broker(local_broker, tmp_path, partitioner=CachedDefaultPartitioner()) as (
        settings,
        broker,
    ):
        topic = settings.topics.accepted
        publisher = BrokerPublisher(broker, partitioner=CachedDefaultPartitioner())
        producer = publisher._direct_producer()
        assert producer is not None
        send = producer.send

        async def counting_send(*args: Any, **kwargs: Any) -> Any:
            sent_one_by_one.append(kwargs["value"])
            return await send(*args, **kwargs)

        producer.send = counting_send
        count = len(await producer.partitions_for(topic))
        assert count > 1
        records = [
            OutgoingRecord(topic, f"tenant-{i % 7}/prefs".encode(), f"decision-{i}".encode())
            for i in range(30)
        ]
        offsets = await publisher.publish_all(records)
        # A record with neither key nor partition joins a batch too (one `send`
        # would be bound by the producer's max_request_size, not the broker's).
        keyless = await publisher.publish_all([OutgoingRecord(topic, None, b"keyless")])
    assert sent_one_by_one == []
    assert len(keyless) == 1

    stored = {(r.partition, r.offset): r async for r in read_all(settings, [topic])}
    partitions = list(range(count))
    for record, offset in zip(records, offsets, strict=True):
        assert record.key is not None
        expected = DefaultPartitioner()(record.key, partitions, partitions)
        found = stored[(expected, offset)]
        assert (found.key, found.value) == (record.key, record.value)
        # The headers the broker's own publish writes.
        assert [name for name, _ in found.headers] == ["content-type", "correlation_id"]
        assert dict(found.headers)["content-type"] == b"application/json"
    assert [r.value for r in stored.values() if r.key is None] == [b"keyless"]


@pytest.mark.parametrize("path", ["record batches", "the broker's publish"])
async def test_a_dead_letter_is_not_typed_json_and_a_decision_is(
    local_broker: Any, tmp_path: Path, path: str
) -> None:
    """A dead letter's bytes are whatever came in: its content type does not
    claim JSON; a decision says it is JSON (never an empty content type). Both
    ways of publishing: a publish middleware (tracing) makes it the broker's."""
    middlewares = [BaseMiddleware] if path == "the broker's publish" else []
    async with connected_broker(local_broker, tmp_path, middlewares=middlewares) as (
        settings,
        broker,
    ):
        publisher = BrokerPublisher(broker, partitioner=CachedDefaultPartitioner())
        assert (publisher._direct_producer() is None) == bool(middlewares)
        await publisher.publish_all(
            [
                OutgoingRecord(settings.topics.accepted, b"k", b"{}"),
                OutgoingRecord(
                    settings.topics.dlq,
                    None,
                    b"\x00junk",
                    {"error_code": "x"},
                    content_type=OCTET_STREAM,
                ),
            ]
        )
    found = {
        r.topic: dict(r.headers)
        async for r in read_all(settings, [settings.topics.accepted, settings.topics.dlq])
    }
    assert found[settings.topics.accepted]["content-type"] == b"application/json"
    assert found[settings.topics.dlq]["content-type"] == b"application/octet-stream"
    assert found[settings.topics.dlq]["error_code"] == b"x"
