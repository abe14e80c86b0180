"""The Kafka handler: one fetched batch of input records in, the batch's offsets
committed (or rewound) out."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError
from faststream.kafka.annotations import KafkaMessage

from consumer.errors import PartitionsLost
from consumer.kafka.records import InputRecord
from consumer.settings import Settings

from .runtime import Runtime, first_offsets, next_offsets, observe_batch, watch_progress

log = structlog.get_logger(__name__)


async def leave_undecoded(message: Any) -> None:
    """The handler parses the raw records itself (consumer.service.validation); FastStream's
    own decoding of a batch (a message object and a JSON parse per record) is waste."""
    return None


class BatchHandler:
    """Subscribed to the input topic as `consume_batch`: offsets are committed
    manually (AckPolicy.MANUAL), only after the batch's memories are stored and its
    decision events acknowledged by the broker."""

    def __init__(self, runtime: Runtime, settings: Settings) -> None:
        self._runtime = runtime
        self._input_topic = settings.topics.input
        self._stuck_after_s = settings.http.stuck_partition_after_s
        self._pause_s = settings.retry.initial_backoff_s

    async def consume_batch(self, message: KafkaMessage) -> None:
        runtime = self._runtime
        service = runtime.service
        assert service is not None, "consumer started before the service was built"
        raw: tuple[Any, ...] = message.raw_message
        assigned = (
            message.consumer.assignment() if hasattr(message.consumer, "assignment") else None
        )
        # Records fetched before a revocation belong to another consumer now.
        records = [
            InputRecord.from_consumer_record(r)
            for r in raw
            if assigned is None or TopicPartition(r.topic, r.partition) in assigned
        ]
        partitions = sorted({r.partition for r in records})
        structlog.contextvars.bind_contextvars(
            topic=self._input_topic,
            partitions=partitions,
            first_offset=records[0].offset if records else None,
        )
        consumer: Any = message.consumer
        if runtime.membership is not None and isinstance(consumer, AIOKafkaConsumer):
            runtime.membership.bind(consumer)
        watch_progress(runtime, consumer, self._stuck_after_s)
        if runtime.progress is not None:
            runtime.progress.fetched(first_offsets(records))
        known = consumer.partitions_for_topic(self._input_topic) if assigned else None
        try:
            summary = await service.handle(records, partition_count=len(known) if known else None)
        except PartitionsLost as exc:
            # Evicted mid-batch: the partitions' next owner decides these records.
            log.warning("batch_abandoned", records=len(records), reason=str(exc))
            runtime.metrics.abandoned()
            with contextlib.suppress(IllegalStateError, KafkaError):
                await message.nack()  # fails only if already unassigned: nothing to rewind
            return
        except Exception:
            log.exception("batch_failed", records=len(records))
            # Nothing committed; rewind so the batch is fetched again after a pause.
            await message.nack()
            await asyncio.sleep(self._pause_s)
            return
        try:
            await message.ack()
        except KafkaError as exc:
            # Lost the partitions mid-batch: the next owner replays the stored decisions.
            log.warning("commit_failed", error=type(exc).__name__)
            return
        committed = next_offsets(records)
        if runtime.progress is not None:
            runtime.progress.committed(committed)
        if runtime.publisher is not None:
            for partition, offset in committed.items():
                runtime.publisher.ledger.committed(partition, offset)
        observe_batch(runtime, summary)
        log.info(
            "batch_done",
            records=summary.records,
            replayed=summary.replayed,
            rerouted=summary.rerouted,
            dead_letters=sum(summary.dead_letters.values()),
            **dict(summary.decisions),
        )
