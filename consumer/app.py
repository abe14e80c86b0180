"""The one place the service is wired: `create_app(settings)` returns a FastStream app.

Offsets are committed manually (AckPolicy.MANUAL), only after a batch's memories
are stored and its decision events are acknowledged by the broker: at-least-once,
made exact-once in effect by the decision records.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiokafka import ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from consumer.embedding import SentenceTransformerEmbedder
from consumer.engine.dedup import DedupEngine
from consumer.engine.recent import RecentCache
from consumer.engine.thresholds import Bands, ThresholdPolicy
from consumer.errors import PublishFailed, TransientError
from consumer.pipeline import BatchProcessor, BatchSummary
from consumer.records import InputRecord
from consumer.settings import QdrantSettings, RetrySettings, Settings
from consumer.store.edge import EdgeMemoryStore
from consumer.store.server import QdrantServerStore
from consumer.topics import ensure_topics
from consumer.typing import Embedder, MemoryStore, OutgoingRecord

log = structlog.get_logger(__name__)


def threshold_policy(settings: Settings) -> ThresholdPolicy:
    dedup = settings.dedup
    return ThresholdPolicy(
        default=Bands(dedup.duplicate_threshold, dedup.merge_threshold),
        per_namespace={
            name: Bands(bands.duplicate_threshold, bands.merge_threshold)
            for name, bands in dedup.namespaces.items()
        },
    )


def build_store(qdrant: QdrantSettings, *, input_topic: str) -> MemoryStore:
    if qdrant.backend == "edge":
        return EdgeMemoryStore(root=qdrant.path, collection=qdrant.collection, topic=input_topic)
    return QdrantServerStore.connect(
        collection=qdrant.collection,
        url=qdrant.url,
        api_key=qdrant.api_key.get_secret_value() if qdrant.api_key else None,
        location=qdrant.location,
        timeout_s=qdrant.timeout_s,
    )


class BrokerPublisher:
    """Publishes concurrently and waits for every acknowledgement."""

    def __init__(self, broker: KafkaBroker) -> None:
        self._broker = broker

    async def publish_all(self, records: Sequence[OutgoingRecord]) -> None:
        try:
            pending = [
                await self._broker.publish(
                    record.value,
                    record.topic,
                    key=record.key,
                    headers=record.headers,
                    no_confirm=True,
                )
                for record in records
            ]
            await asyncio.gather(*pending)
        except (TimeoutError, KafkaError, OSError) as exc:
            raise PublishFailed(f"broker did not acknowledge: {type(exc).__name__}") from exc


def backoff_delay(attempt: int, retry: RetrySettings) -> float:
    """Exponential backoff with full jitter."""
    ceiling = min(retry.max_backoff_s, retry.initial_backoff_s * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


class ConsumerService:
    """Runs batches through the processor with retries, and hands partitions over."""

    def __init__(
        self,
        *,
        processor: BatchProcessor,
        store: MemoryStore,
        engine: DedupEngine,
        retry: RetrySettings,
        input_topic: str,
    ) -> None:
        self._processor = processor
        self._store = store
        self._engine = engine
        self._retry = retry
        self._input_topic = input_topic
        self._in_flight = asyncio.Lock()
        self.batches = 0
        self.retries = 0

    async def handle(self, records: Sequence[InputRecord]) -> BatchSummary:
        """Process one batch; transient failures are retried with backoff here
        (consumption pauses meanwhile) and re-raised after `max_elapsed_s`."""
        started = time.monotonic()
        attempt = 0
        async with self._in_flight:
            while True:
                try:
                    summary = await self._processor.process(records)
                    self.batches += 1
                    return summary
                except TransientError as exc:
                    attempt += 1
                    self.retries += 1
                    delay = backoff_delay(attempt, self._retry)
                    if time.monotonic() - started + delay > self._retry.max_elapsed_s:
                        raise
                    log.warning(
                        "transient_failure",
                        error=str(exc),
                        attempt=attempt,
                        retry_in_s=round(delay, 3),
                        records=len(records),
                    )
                    await asyncio.sleep(delay)

    async def release(self, partitions: Sequence[int]) -> None:
        """Finish in-flight work, then give up the partitions' state."""
        async with self._in_flight:
            self._engine.recent.drop_partitions(partitions)
            await self._store.release_partitions(partitions)


class PartitionHandover(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        service = self._runtime.service
        mine = [tp.partition for tp in revoked if tp.topic == self._runtime.input_topic]
        if service is not None and mine:
            log.info("partitions_revoked", partitions=sorted(mine))
            await service.release(mine)

    async def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        log.info("partitions_assigned", partitions=sorted(tp.partition for tp in assigned))


@dataclass
class Runtime:
    """What the app builds at start-up and tears down at shutdown."""

    input_topic: str
    embedder: Embedder | None = None
    store: MemoryStore | None = None
    service: ConsumerService | None = None
    owned: dict[str, bool] = field(default_factory=dict)


def create_app(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    store: MemoryStore | None = None,
) -> FastStream:
    """Build the consumer. `embedder` and `store` may be injected (tests); what is
    not injected is built from settings at start-up and closed at shutdown."""
    kafka = settings.kafka
    broker = KafkaBroker(
        kafka.bootstrap_servers,
        client_id=kafka.client_id,
        acks="all",
        enable_idempotence=kafka.enable_idempotence,
        request_timeout_ms=kafka.request_timeout_ms,
        graceful_timeout=settings.shutdown_timeout_s,
        # The service logs its own structured records (decided, batch_done, ...).
        logger=None,
    )
    runtime = Runtime(input_topic=settings.topics.input, embedder=embedder, store=store)
    runtime.owned = {"embedder": embedder is None, "store": store is None}

    @broker.subscriber(
        settings.topics.input,
        batch=True,
        group_id=kafka.group_id,
        max_records=kafka.batch_max_records,
        batch_timeout_ms=kafka.batch_timeout_ms,
        auto_offset_reset=kafka.auto_offset_reset,
        session_timeout_ms=kafka.session_timeout_ms,
        heartbeat_interval_ms=kafka.heartbeat_interval_ms,
        max_poll_interval_ms=kafka.max_poll_interval_ms,
        listener=PartitionHandover(runtime),
        ack_policy=AckPolicy.MANUAL,
        description="Extracted memories to deduplicate, keyed {tenant_id}/{namespace}.",
    )
    async def consume_batch(message: KafkaMessage) -> None:
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
            topic=settings.topics.input,
            partitions=partitions,
            first_offset=records[0].offset if records else None,
        )
        try:
            summary = await service.handle(records)
        except Exception:
            log.exception("batch_failed", records=len(records))
            # Nothing committed; rewind so the batch is fetched again after a pause.
            await message.nack()
            await asyncio.sleep(settings.retry.initial_backoff_s)
            return
        try:
            await message.ack()
        except KafkaError as exc:
            # Lost the partitions mid-batch: the next owner replays the stored decisions.
            log.warning("commit_failed", error=type(exc).__name__)
            return
        log.info(
            "batch_done",
            records=summary.records,
            replayed=summary.replayed,
            dead_letters=sum(summary.dead_letters.values()),
            **dict(summary.decisions),
        )

    app = FastStream(broker, logger=None)

    @app.on_startup
    async def start_service() -> None:
        if settings.topics.create:
            try:
                created = await ensure_topics(settings)
                if created:
                    log.info("topics_created", topics=created)
            except KafkaError as exc:
                log.warning("topic_creation_failed", error=type(exc).__name__)
        if runtime.embedder is None:
            emb = settings.embedding
            runtime.embedder = await SentenceTransformerEmbedder.load(
                model_path=emb.model_path,
                model_id=emb.model_id,
                batch_size=emb.batch_size,
                torch_threads=emb.torch_threads,
            )
        if runtime.store is None:
            runtime.store = build_store(settings.qdrant, input_topic=settings.topics.input)
        await runtime.store.start(runtime.embedder.dimension)
        engine = DedupEngine(
            store=runtime.store,
            embedder=runtime.embedder,
            policy=threshold_policy(settings),
            recent=RecentCache(
                ttl_s=settings.dedup.recent_ttl_s, max_entries=settings.dedup.recent_max_entries
            ),
            search_limit=settings.dedup.search_limit,
        )
        processor = BatchProcessor(
            engine=engine,
            store=runtime.store,
            publisher=BrokerPublisher(broker),
            topics=settings.topics,
            model_id=runtime.embedder.model_id,
            max_event_bytes=settings.limits.max_event_bytes,
        )
        runtime.service = ConsumerService(
            processor=processor,
            store=runtime.store,
            engine=engine,
            retry=settings.retry,
            input_topic=settings.topics.input,
        )
        log.info(
            "service_ready",
            store=settings.qdrant.backend,
            group_id=kafka.group_id,
            input_topic=settings.topics.input,
            model=runtime.embedder.model_id,
        )

    @app.after_shutdown
    async def stop_service() -> None:
        if runtime.store is not None and runtime.owned["store"]:
            await runtime.store.close()
        if runtime.embedder is not None and runtime.owned["embedder"]:
            await runtime.embedder.close()
        log.info("service_stopped")

    app.context.set_global(_RUNTIME_KEY, runtime)
    return app


_RUNTIME_KEY = "memdedup_runtime"


def runtime_of(app: FastStream) -> Runtime:
    """The service parts of a running app (for the demo and tests)."""
    runtime = app.context.get(_RUNTIME_KEY)
    assert isinstance(runtime, Runtime)
    return runtime
