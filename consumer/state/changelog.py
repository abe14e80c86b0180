"""State follows the partition: the embedded store's changes, as a compacted topic.

Every point written to a partition's shard is first published to the changelog
topic (same partition number, keyed by point id, compacted), then stored with the
changelog offset that covers it. A consumer that is assigned a partition whose
shard it lacks, or holds behind the changelog, replays the missing tail into the
shard before deciding anything for that partition, as Kafka Streams restores a
state store. Vectors travel with the points, so nothing is embedded again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from consumer.errors import ChangelogUnavailable
from consumer.kafka.offsets import exact_end_offsets
from consumer.kafka.records import OutgoingRecord
from consumer.ports import MembershipFence, RecordPublisher, ShardStore
from consumer.state.codec import RawPoint
from consumer.state.membership import fenced

log = structlog.get_logger(__name__)

RESTORE_CHUNK = 2_000


def _changes(records: Sequence[Any]) -> tuple[list[RawPoint], list[str]]:
    """A run of changelog records as (points to store, point ids to delete first).
    A tombstone (null or empty value) deletes its key; the points written before it
    under that key are dropped, those written after it are stored again."""
    last_tombstone: dict[bytes, int] = {}
    for index, record in enumerate(records):
        if not record.value:
            last_tombstone[record.key] = index
    points = [
        RawPoint.from_bytes(record.value)
        for index, record in enumerate(records)
        if record.value and index > last_tombstone.get(record.key, -1)
    ]
    return points, [key.decode() for key in last_tombstone]


class Changelog:
    def __init__(
        self,
        *,
        topic: str,
        bootstrap_servers: str,
        publisher: RecordPublisher,
        client_id: str = "memdedup-restore",
        client_kwargs: dict[str, Any] | None = None,
        membership: MembershipFence | None = None,
    ) -> None:
        """`membership`: asked before and after each append (consumer.state.membership),
        so that a consumer its group has evicted neither appends nor goes on to
        publish what the append covers."""
        self.topic = topic
        self._bootstrap_servers = bootstrap_servers
        self._publisher = publisher
        self._client_id = client_id
        # Connection security of the reader (consumer.kafka.security.aiokafka_kwargs).
        self._client_kwargs = dict(client_kwargs or {})
        self._reader: AIOKafkaConsumer | None = None
        self._membership = membership

    async def append(
        self, partition: int, points: Sequence[RawPoint], *, deleted_ids: Sequence[str] = ()
    ) -> int | None:
        """Publish a tombstone per deleted point id, then the points; returns the
        offset of the last record (None if none). Raises PartitionsLost if this
        consumer's group has evicted it: the records may then be in the changelog,
        but nothing may be published on them."""
        if not points and not deleted_ids:
            return None
        records = [
            OutgoingRecord(
                self.topic,
                point_id.encode(),
                b"",
                {},
                partition,
                broker_headers=False,
                tombstone=True,
            )
            for point_id in deleted_ids
        ]
        records.extend(
            OutgoingRecord(
                self.topic, p.point_id.encode(), p.to_bytes(), {}, partition, broker_headers=False
            )
            for p in points
        )
        offsets = await fenced(self._membership, self._publisher.publish_all(records))
        return max(offsets)

    async def _consumer(self) -> AIOKafkaConsumer:
        if self._reader is None:
            reader = AIOKafkaConsumer(
                bootstrap_servers=self._bootstrap_servers,
                client_id=self._client_id,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                max_partition_fetch_bytes=8 * 1024 * 1024,
                **self._client_kwargs,
            )
            try:
                await reader.start()
            except KafkaError as exc:
                raise ChangelogUnavailable(f"changelog reader: {type(exc).__name__}") from exc
            self._reader = reader
        return self._reader

    async def restore(self, partition: int, store: ShardStore) -> int:
        """Bring the partition's shard up to the changelog's end; returns how many
        points were applied. The caller owns the partition, so nobody appends
        meanwhile: an empty fetch at the tail means the shard has caught up."""
        position = await store.changelog_position(partition)
        reader = await self._consumer()
        tp = TopicPartition(self.topic, partition)
        start = 0 if position is None else position + 1
        try:
            end = (await exact_end_offsets(reader, [tp]))[tp]
        except KafkaError as exc:
            raise ChangelogUnavailable(f"changelog end offset: {type(exc).__name__}") from exc
        if start >= end:
            return 0
        started = time.monotonic()
        reader.seek(tp, start)
        applied = 0
        last = start - 1
        while last < end - 1:
            try:
                batches = await reader.getmany(tp, timeout_ms=1_000, max_records=RESTORE_CHUNK)
            except KafkaError as exc:
                raise ChangelogUnavailable(f"changelog read: {type(exc).__name__}") from exc
            records = [r for r in batches.get(tp, []) if r.offset < end]
            if not records:
                if time.monotonic() - started > 60:
                    raise ChangelogUnavailable(
                        f"changelog restore of partition {partition} stalled"
                    )
                continue
            chunk, deleted = _changes(records)
            last = records[-1].offset
            await store.apply_points(partition, chunk, changelog_offset=last, deleted_ids=deleted)
            applied += len(chunk) + len(deleted)
        log.info(
            "shard_restored",
            partition=partition,
            points=applied,
            from_offset=start,
            to_offset=last,
            seconds=round(time.monotonic() - started, 3),
        )
        return applied

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.stop()
            self._reader = None
