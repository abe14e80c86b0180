"""BrokerPublisher through the real broker: records with set partitions go out as
record batches built by the publisher, and every record's offset is exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from faststream.kafka import KafkaBroker

from consumer.app import BrokerPublisher
from consumer.records import OutgoingRecord
from consumer.topic_reader import read_all
from consumer.topics import ensure_topics
from tests.integration.harness import make_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_batched_records_get_the_offsets_they_are_stored_at(
    local_broker: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    await ensure_topics(settings)
    topic = settings.topics.changelog
    broker = KafkaBroker(local_broker.bootstrap_servers, max_batch_size=4_096)
    await broker.connect()
    try:
        publisher = BrokerPublisher(broker)
        assert publisher._direct_producer() is not None  # the batching path runs
        # Interleaved partitions, and more bytes than one batch holds (4 KiB).
        records = [
            OutgoingRecord(topic, f"k{i}".encode(), f"v{i}".encode() * 200, {}, i % 2, False)
            for i in range(40)
        ]
        first = await publisher.publish_all(records[:25])
        second = await publisher.publish_all(records[25:])
        # Keyed records (no partition set) still go one by one.
        keyed = await publisher.publish_all(
            [OutgoingRecord(settings.topics.accepted, b"key", b"keyed")]
        )
    finally:
        await broker.stop()
    assert keyed == [0]

    stored = {
        (r.partition, r.offset): (r.key, r.value, list(r.headers))
        async for r in read_all(settings, [topic])
    }
    assert len(stored) == len(records)
    for record, offset in zip(records, first + second, strict=True):
        assert stored[(record.partition, offset)] == (record.key, record.value, [])
