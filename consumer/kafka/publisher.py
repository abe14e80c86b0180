"""Publishing outgoing records through the broker's producer and waiting for the
broker's acknowledgements, each answer to an input record once per consumer
(consumer.kafka.publish_ledger), with failures sorted into transient (retried) and
permanent (the record is dead-lettered)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import (
    CorruptRecordException,
    InvalidTopicError,
    KafkaError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)
from faststream.exceptions import IncorrectState as FastStreamIncorrectState
from faststream.kafka import KafkaBroker

from consumer.errors import PublishFailed, PublishRejected
from consumer.kafka.partitioning import CachedDefaultPartitioner
from consumer.kafka.publish_ledger import PublishLedger, ledger_keys
from consumer.kafka.records import OutgoingRecord

# Refusals of a record for what it is: the same record is refused every time.
PERMANENT_PUBLISH_ERRORS: tuple[type[BaseException], ...] = (
    MessageSizeTooLargeError,
    RecordTooLargeError,
    RecordListTooLargeError,
    InvalidTopicError,
    CorruptRecordException,
)

# What a record costs in a produce request beyond its key, value and headers: the
# record's and its batch's framing, the request's own, the broker's headers
# (content type, a correlation id). Generous, so an estimate never falls short.
RECORD_OVERHEAD_BYTES = 512

# The default of kafka.max_request_bytes (and of aiokafka's max_request_size).
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024


def record_size(record: OutgoingRecord) -> int:
    """An upper estimate of the bytes a record takes in a produce request."""
    value = 0 if record.tombstone else len(record.value)
    headers = sum(len(name) + len(text.encode()) for name, text in record.headers.items())
    return len(record.key or b"") + value + headers + RECORD_OVERHEAD_BYTES


def failure_of(exc: BaseException, records: int) -> Exception:
    """The service's error for a failed publish: permanent when retrying cannot help."""
    if isinstance(exc, PERMANENT_PUBLISH_ERRORS):
        return PublishRejected(f"broker refused a record: {type(exc).__name__}")
    if isinstance(exc, TimeoutError):
        return PublishFailed(f"broker did not acknowledge {records} records in time")
    return PublishFailed(f"broker did not acknowledge: {type(exc).__name__}")


# A future for one record, or for a record batch, and the indexes of its records.
_Sent = tuple["asyncio.Future[Any]", list[int]]


class BrokerPublisher:
    """Publishes concurrently and waits for every acknowledgement, for at most
    `ack_timeout_s`: the producer should fail a request within its request timeout,
    and a wait that outlasts it (aiokafka can hang on a broker that went away) must
    fail the batch, which is then retried, rather than hold it, and with it the
    partitions a rebalance needs released, forever.

    Records the broker acknowledged are kept in `ledger` until their input offsets
    are committed: a retry of the batch gets their offsets back without publishing
    them again."""

    def __init__(
        self,
        broker: KafkaBroker,
        *,
        ack_timeout_s: float = 60.0,
        partitioner: CachedDefaultPartitioner | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    ) -> None:
        """`partitioner`: the broker's producer's; with it, records without a
        partition (decisions) join the record batches built here too.
        `max_request_bytes`: the producer's max_request_size; a larger record is
        refused here, before anything of its batch is sent."""
        self._broker = broker
        self._ack_timeout_s = ack_timeout_s
        self._partitioner = partitioner
        self._max_request_bytes = max_request_bytes
        self._correlation_ids = correlation_ids()
        self.ledger = PublishLedger()

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> list[int]:
        keys = ledger_keys(records)
        known = [self.ledger.offset_of(key) for key in keys]
        pending = [index for index, offset in enumerate(known) if offset is None]
        if not pending:
            return [offset for offset in known if offset is not None]
        todo = [records[index] for index in pending]
        for record in todo:
            size = record_size(record)
            if size > self._max_request_bytes:
                raise PublishRejected(
                    f"a record of about {size} bytes for {record.topic} exceeds "
                    f"max_request_bytes ({self._max_request_bytes})"
                )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._ack_timeout_s
        failure: BaseException | None = None
        try:
            sent, failure = await asyncio.wait_for(self._enqueue(todo), self._ack_timeout_s)
        except TimeoutError as exc:
            raise PublishFailed(
                f"broker did not acknowledge {len(records)} records "
                f"within {self._ack_timeout_s:g} s"
            ) from exc
        futures = [future for future, _ in sent]
        done: set[asyncio.Future[Any]] = set()
        if futures:
            done, _ = await asyncio.wait(futures, timeout=max(0.0, deadline - loop.time()))
        offsets: list[int | None] = list(known)
        for future, members in sent:
            if future not in done:
                failure = failure or TimeoutError()
                continue
            error = future.exception()
            if error is not None:
                failure = failure or error
                continue
            base = future.result().offset
            for position, member in enumerate(members):
                index = pending[member]
                offsets[index] = base + position
                self.ledger.acknowledged(keys[index], base + position)
        if failure is not None:
            if isinstance(failure, TimeoutError):
                raise PublishFailed(
                    f"broker did not acknowledge {len(records)} records "
                    f"within {self._ack_timeout_s:g} s"
                ) from failure
            raise failure_of(failure, len(records)) from failure
        return [offset for offset in offsets if offset is not None]

    async def _enqueue(
        self, records: Sequence[OutgoingRecord]
    ) -> tuple[list[_Sent], BaseException | None]:
        """Hands every record to the producer; returns what was handed over, and
        the error that stopped the rest (what was handed over may still land)."""
        sent: list[_Sent] = []
        try:
            producer = self._direct_producer()
            if producer is None:
                for index, record in enumerate(records):
                    future = await self._broker.publish(
                        _value(record),
                        record.topic,
                        key=record.key,
                        partition=record.partition,
                        headers=_with_content_type(record),
                        no_confirm=True,
                    )
                    sent.append((future, [index]))
                return sent, None
            partitions = await self._partitions(producer, records)
            await self._send_batches(producer, records, partitions, sent)
        except (KafkaError, OSError, TimeoutError) as exc:
            return sent, exc
        return sent, None

    def _direct_producer(self) -> AIOKafkaProducer | None:
        """The broker's own aiokafka producer, when publishing through the broker
        would add nothing but cost (~20 us per record): no publish middleware
        (tracing) to run. None otherwise, or if the broker's internals differ.

        The one place that reaches into FastStream's internals (its producer
        wrapper's private `_producer`), on purpose: FastStream's public API has no
        way to the aiokafka producer, and what it offers instead cannot carry the
        records as they are. `KafkaBroker.publish` sends one record and one future
        at a time (the fallback below); `KafkaBroker.publish_batch` gives every
        record of a batch the same headers and correlation id (decisions have one
        each, dead letters their own reasons) and sends an empty value where a
        changelog tombstone must be null. When the internals move, this returns
        None and every record goes through `KafkaBroker.publish`, correct but slower
        (tests/integration/test_publisher.py pins the fast path)."""
        if self._broker.middlewares:
            return None
        try:
            fast_producer: Any = self._broker.config.producer
            producer = fast_producer._producer.producer
        except (AttributeError, FastStreamIncorrectState):
            return None
        return producer if isinstance(producer, AIOKafkaProducer) else None

    def _headers(self, record: OutgoingRecord) -> list[tuple[str, bytes]]:
        # What the broker's publish writes: the content type, a correlation id,
        # then the record's own headers.
        own = record.headers
        if record.broker_headers:
            added = {"correlation_id": self._correlation_ids.__next__()}
            if record.content_type:
                added = {"content-type": record.content_type, **added}
            own = {**added, **own}
        return [(name, value.encode()) for name, value in own.items()]

    async def _partitions(
        self, producer: AIOKafkaProducer, records: Sequence[OutgoingRecord]
    ) -> list[int]:
        """Each record's partition: its own (the changelog's), else the one the
        producer's partitioner picks from its key, as `send` would (any available
        one for a record without a key)."""
        partitioner = self._partitioner or CachedDefaultPartitioner()
        partitions: list[int] = []
        topics: dict[str, list[int]] = {}
        for record in records:
            if record.partition is not None:
                partitions.append(record.partition)
                continue
            every = topics.get(record.topic)
            if every is None:
                # The producer's own metadata, in its order (waits for it, as `send`).
                every = topics[record.topic] = list(await producer.partitions_for(record.topic))
            partitions.append(partitioner(record.key, every, every))
        return partitions

    async def _send_batches(
        self,
        producer: AIOKafkaProducer,
        records: Sequence[OutgoingRecord],
        partitions: Sequence[int],
        sent: list[_Sent],
    ) -> None:
        """Records (to `partitions`) as record batches built here: one future per
        batch instead of per record (~4 us a record less). A partition's records
        keep their order; a record's offset is its batch's base offset plus its
        place in the batch. Each batch sent is added to `sent` at once."""

        async def send(batch: Any, topic: str, partition: int) -> asyncio.Future[Any]:
            batch.close()  # nothing else joins it: offsets are counted from its base
            future: asyncio.Future[Any] = await producer.send_batch(
                batch, topic, partition=partition
            )
            return future

        headers: Callable[[OutgoingRecord], list[tuple[str, bytes]]] = self._headers
        open_batches: dict[tuple[str, int], tuple[Any, list[int]]] = {}
        for index, (record, partition) in enumerate(zip(records, partitions, strict=True)):
            topic = record.topic
            target = (topic, partition)
            batch, members = open_batches.get(target) or (producer.create_batch(), [])
            own_headers = headers(record)
            for attempt in range(2):
                appended = batch.append(
                    key=record.key, value=_value(record), timestamp=None, headers=own_headers
                )
                if appended is not None:
                    break
                if attempt:
                    raise RecordTooLargeError(
                        f"a record of {len(record.value)} bytes fits no batch"
                    )
                # Full: send it and start the next one.
                sent.append((await send(batch, topic, partition), members))
                batch, members = producer.create_batch(), []
            members.append(index)
            open_batches[target] = (batch, members)
        for (topic, partition), (batch, members) in open_batches.items():
            sent.append((await send(batch, topic, partition), members))


def _value(record: OutgoingRecord) -> bytes | None:
    return None if record.tombstone else record.value


def _with_content_type(record: OutgoingRecord) -> dict[str, str]:
    if record.content_type and record.broker_headers:
        return {"content-type": record.content_type, **record.headers}
    return dict(record.headers)


def correlation_ids() -> Iterator[str]:
    """UUID-shaped ids, unique as uuid4's (96 random bits per publisher, then a
    counter), at a tenth of the cost: one per published decision."""
    while True:  # fresh random bits whenever the counter runs out
        prefix = secrets.token_hex(12)
        variant = "89ab"[int(prefix[16], 16) & 3]  # RFC 4122, as uuid4's
        head = (
            f"{prefix[:8]}-{prefix[8:12]}-4{prefix[13:16]}-{variant}{prefix[17:20]}-{prefix[20:24]}"
        )
        for count in range(1 << 32):
            yield f"{head}{count:08x}"
