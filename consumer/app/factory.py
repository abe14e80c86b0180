"""The one place the service is wired: `create_app(settings)` returns a FastStream app.

Offsets are committed manually (AckPolicy.MANUAL), only after a batch's memories
are stored and its decision events are acknowledged by the broker: at-least-once,
made exact-once in effect by the decision records.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from consumer.chaos.stall import StallSwitch
from consumer.chaos.store import OutageSwitchStore
from consumer.domain.alignment import load_aligner
from consumer.domain.dedup import DedupEngine
from consumer.domain.merge import build_merger
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import Bands, ThresholdPolicy, lowest_band
from consumer.domain.verifier import build_verifier
from consumer.embedding.embedders import load_embedder
from consumer.errors import PartitionsLost, PermanentError, StoreUnavailable, TransientError
from consumer.kafka.partitioning import CachedDefaultPartitioner
from consumer.kafka.publisher import BrokerPublisher
from consumer.kafka.records import InputRecord
from consumer.kafka.security import aiokafka_kwargs, faststream_security
from consumer.kafka.topics import ensure_topics
from consumer.observability.health import HealthServer
from consumer.observability.metrics import ServiceMetrics, TimedEmbedder, component_of, hit_rate
from consumer.observability.progress import PartitionProgress
from consumer.observability.tracing import tracing_middlewares
from consumer.ports import Embedder, MembershipFence, MemoryStore
from consumer.service.processor import BatchProcessor, BatchSummary
from consumer.service.retention import warn_if_shorter_than_input
from consumer.settings import QdrantSettings, RetrySettings, Settings
from consumer.state.changelog import Changelog
from consumer.state.edge import EdgeMemoryStore
from consumer.state.membership import GroupMembership
from consumer.state.server import QdrantServerStore

log = structlog.get_logger(__name__)
T = TypeVar("T")


def threshold_policy(settings: Settings) -> ThresholdPolicy:
    dedup = settings.dedup
    return ThresholdPolicy(
        default=Bands(
            dedup.duplicate_threshold,
            dedup.merge_threshold,
            dedup.merge_policy,
            dedup.detail_policy,
        ),
        per_namespace={
            name: Bands(
                bands.duplicate_threshold,
                bands.merge_threshold,
                bands.merge_policy,
                bands.detail_policy,
            )
            for name, bands in dedup.namespaces.items()
        },
    )


def build_store(
    qdrant: QdrantSettings, *, input_topic: str, decision_retention: bool = False
) -> MemoryStore:
    """`decision_retention`: retention.decisions_hours is set (each decision's
    time is then indexed, for pruning by it)."""
    if qdrant.backend == "edge":
        return EdgeMemoryStore(
            root=qdrant.path,
            collection=qdrant.collection,
            topic=input_topic,
            decision_times=decision_retention,
        )
    return QdrantServerStore.connect(
        collection=qdrant.collection,
        url=qdrant.url,
        api_key=qdrant.api_key.get_secret_value() if qdrant.api_key else None,
        location=qdrant.location,
        timeout_s=qdrant.timeout_s,
        decision_times=decision_retention,
    )


def uses_changelog(settings: Settings, store: MemoryStore) -> bool:
    """Only an embedded store needs its state carried between machines."""
    inner = store.inner if isinstance(store, OutageSwitchStore) else store
    return isinstance(inner, EdgeMemoryStore) and bool(settings.topics.changelog)


def backoff_delay(attempt: int, retry: RetrySettings) -> float:
    """Exponential backoff with full jitter."""
    ceiling = min(retry.max_backoff_s, retry.initial_backoff_s * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


class ConsumerService:
    """Runs batches through the processor with retries, restores partitions from
    the changelog before their first batch, and hands partitions over."""

    def __init__(
        self,
        *,
        processor: BatchProcessor,
        store: MemoryStore,
        engine: DedupEngine,
        retry: RetrySettings,
        input_topic: str,
        changelog: Changelog | None = None,
        metrics: ServiceMetrics | None = None,
        fail_open: bool = False,
    ) -> None:
        """`fail_open`: when the store is down, accept (degraded) at once instead
        of waiting for it."""
        self._fail_open = fail_open
        self._metrics = metrics or ServiceMetrics()
        self._processor = processor
        self._store = store
        self._engine = engine
        self._retry = retry
        self._input_topic = input_topic
        self._changelog = changelog
        self._restored: set[int] = set()
        self._in_flight = asyncio.Lock()
        # Set on shutdown: a batch waiting to retry gives up at once (it is not
        # committed, so it is redelivered) instead of holding the shutdown.
        self._stopping = asyncio.Event()
        self.batches = 0
        self.retries = 0
        self.poisoned = 0

    async def _with_retries(self, operation: Callable[[], Awaitable[T]], records: int) -> T:
        """Retry transient failures with backoff (consumption pauses meanwhile);
        re-raise after `max_elapsed_s` so the batch is rewound and fetched again."""
        started = time.monotonic()
        attempt = 0
        try:
            while True:
                try:
                    return await operation()
                except TransientError as exc:
                    attempt += 1
                    self.retries += 1
                    self._metrics.retry(component_of(exc))
                    delay = backoff_delay(attempt, self._retry)
                    if time.monotonic() - started + delay > self._retry.max_elapsed_s:
                        raise
                    log.warning(
                        "transient_failure",
                        error=str(exc),
                        attempt=attempt,
                        retry_in_s=round(delay, 3),
                        records=records,
                    )
                    self._metrics.set_backoff(True)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), delay)
                    if self._stopping.is_set():
                        log.info("retry_abandoned_on_shutdown", records=records)
                        raise
        finally:
            self._metrics.set_backoff(False)

    def stop_retrying(self) -> None:
        """Shutting down: retries end, the batch stays uncommitted."""
        self._stopping.set()

    async def _restore(self, partitions: set[int]) -> None:
        changelog = self._changelog
        if changelog is None:
            return
        for partition in sorted(partitions - self._restored):
            await self._with_retries(partial(changelog.restore, partition, self._store), 0)
            self._restored.add(partition)

    async def handle(
        self, records: Sequence[InputRecord], *, partition_count: int | None = None
    ) -> BatchSummary:
        async with self._in_flight:
            if self._fail_open:
                try:
                    await self._restore({r.partition for r in records})
                    summary = await self._processor.process(
                        records, partition_count=partition_count
                    )
                except StoreUnavailable as exc:
                    log.warning("store_unavailable_failing_open", error=str(exc))
                    summary = await self._with_retries(
                        partial(self._processor.process_fail_open, records), len(records)
                    )
                self.batches += 1
                return summary
            await self._restore({r.partition for r in records})
            try:
                summary = await self._with_retries(
                    lambda: self._processor.process(records, partition_count=partition_count),
                    len(records),
                )
            except (TransientError, PartitionsLost):
                raise
            except Exception:
                log.exception("batch_failed_unclassified", records=len(records))
                summary = await self._isolate_poison(records, partition_count)
            self.batches += 1
            return summary

    async def _isolate_poison(
        self, records: Sequence[InputRecord], partition_count: int | None
    ) -> BatchSummary:
        """Process records one by one; a record that keeps failing for an
        unclassified reason is dead-lettered so its partition moves on."""
        total = BatchSummary(records=len(records))
        for record in records:
            failure: Exception | None = None
            attempts = 0
            while attempts < self._retry.poison_max_attempts:
                attempts += 1
                try:
                    single = await self._with_retries(
                        partial(self._processor.process, [record], partition_count=partition_count),
                        1,
                    )
                except (TransientError, PartitionsLost):
                    raise
                except PermanentError as exc:
                    # Refused for what it is: every attempt would be refused alike.
                    failure = exc
                    break
                except Exception as exc:
                    failure = exc
                    continue
                total.decisions.update(single.decisions)
                total.dead_letters.update(single.dead_letters)
                total.replayed += single.replayed
                total.rerouted += single.rerouted
                failure = None
                break
            if failure is not None:
                self.poisoned += 1
                self._metrics.poisoned()
                log.error(
                    "poison_record",
                    partition=record.partition,
                    offset=record.offset,
                    error=type(failure).__name__,
                    attempts=attempts,
                )
                plural = "s" if attempts > 1 else ""
                detail = f"{type(failure).__name__} after {attempts} attempt{plural}: {failure}"
                await self._with_retries(
                    partial(self._processor.dead_letter_unprocessable, record, detail), 1
                )
                total.dead_letters["processing_error"] += 1
        return total

    async def release(self, partitions: Sequence[int]) -> None:
        """Finish in-flight work, then give up the partitions' state."""
        async with self._in_flight:
            self._engine.recent.drop_partitions(partitions)
            for partition in partitions:
                self._engine.reviewed.forget(partition)
            self._restored.difference_update(partitions)
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
        if mine:
            if self._runtime.progress is not None:
                self._runtime.progress.revoked(mine)
            if self._runtime.publisher is not None:
                self._runtime.publisher.ledger.forget(mine)

    async def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        log.info("partitions_assigned", partitions=sorted(tp.partition for tp in assigned))


@dataclass
class Runtime:
    """What the app builds at start-up and tears down at shutdown."""

    input_topic: str
    metrics: ServiceMetrics
    embedder: Embedder | None = None
    store: MemoryStore | None = None
    service: ConsumerService | None = None
    changelog: Changelog | None = None
    engine: DedupEngine | None = None
    health: HealthServer | None = None
    owned: dict[str, bool] = field(default_factory=dict)
    # Bound to the group's consumer by its first batch; fences writes of shared
    # state (changelog appends, a shared store's writes).
    membership: GroupMembership | None = None
    publisher: BrokerPublisher | None = None
    progress: PartitionProgress | None = None
    progress_task: asyncio.Task[None] | None = None


async def leave_undecoded(message: Any) -> None:
    """The handler parses the raw records itself (consumer.service.validation); FastStream's
    own decoding of a batch (a message object and a JSON parse per record) is waste."""
    return None


def create_app(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    store: MemoryStore | None = None,
    metrics: ServiceMetrics | None = None,
) -> FastStream:
    """Build the consumer. `embedder` and `store` may be injected (tests); what is
    not injected is built from settings at start-up and closed at shutdown."""
    kafka = settings.kafka
    partitioner = CachedDefaultPartitioner()
    broker = KafkaBroker(
        kafka.bootstrap_servers,
        client_id=kafka.client_id,
        acks="all",
        partitioner=partitioner,
        enable_idempotence=kafka.enable_idempotence,
        request_timeout_ms=kafka.request_timeout_ms,
        max_request_size=kafka.max_request_bytes,
        graceful_timeout=settings.shutdown_timeout_s,
        # The service logs its own structured records (decided, batch_done, ...).
        logger=None,
        security=faststream_security(settings.security),
        middlewares=tracing_middlewares(settings),
    )
    runtime = Runtime(
        input_topic=settings.topics.input,
        metrics=metrics or ServiceMetrics(),
        embedder=embedder,
        store=store,
    )
    runtime.owned = {"embedder": embedder is None, "store": store is None}
    runtime.progress = PartitionProgress(
        topic=settings.topics.input,
        stuck_after_s=settings.http.stuck_partition_after_s,
        metrics=runtime.metrics,
    )
    runtime.membership = GroupMembership.for_group(
        session_timeout_ms=kafka.session_timeout_ms,
        rebalance_timeout_ms=kafka.effective_rebalance_timeout_ms,
    )

    @broker.subscriber(
        settings.topics.input,
        batch=True,
        group_id=kafka.group_id,
        group_instance_id=kafka.group_instance_id,
        max_records=kafka.batch_max_records,
        batch_timeout_ms=kafka.batch_timeout_ms,
        auto_offset_reset=kafka.auto_offset_reset,
        session_timeout_ms=kafka.session_timeout_ms,
        heartbeat_interval_ms=kafka.heartbeat_interval_ms,
        max_poll_interval_ms=kafka.max_poll_interval_ms,
        rebalance_timeout_ms=kafka.effective_rebalance_timeout_ms,
        fetch_max_wait_ms=kafka.fetch_max_wait_ms,
        listener=PartitionHandover(runtime),
        ack_policy=AckPolicy.MANUAL,
        decoder=leave_undecoded,
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
        consumer: Any = message.consumer
        if runtime.membership is not None and isinstance(consumer, AIOKafkaConsumer):
            runtime.membership.bind(consumer)
        watch_progress(runtime, consumer, settings.http.stuck_partition_after_s)
        if runtime.progress is not None:
            runtime.progress.fetched(first_offsets(records))
        known = consumer.partitions_for_topic(settings.topics.input) if assigned else None
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
            await asyncio.sleep(settings.retry.initial_backoff_s)
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

    app = FastStream(broker, logger=None)

    @app.on_startup
    async def start_service() -> None:
        if settings.http.enabled:
            runtime.health = HealthServer(
                runtime.metrics,
                settings.http.host,
                settings.http.port,
                readiness_timeout_s=settings.http.readiness_timeout_s,
            )
            add_readiness_checks(runtime, broker)
            # Before the model loads, so liveness answers from the start.
            await runtime.health.start()
            log.info("http_listening", port=runtime.health.port)
        if settings.topics.create:
            try:
                created = await ensure_topics(settings)
                if created:
                    log.info("topics_created", topics=created)
            except KafkaError as exc:
                log.warning("topic_creation_failed", error=type(exc).__name__)
        await warn_if_shorter_than_input(settings)
        if runtime.embedder is None:
            runtime.embedder = await load_embedder(
                settings.embedding, data_dir=settings.qdrant.path
            )
        if runtime.store is None:
            runtime.store = build_store(
                settings.qdrant,
                input_topic=settings.topics.input,
                decision_retention=settings.retention.decisions_hours is not None,
            )
            if settings.chaos.store_outage_file is not None:
                runtime.store = OutageSwitchStore(
                    runtime.store, outage_file=settings.chaos.store_outage_file
                )
        await runtime.store.start(runtime.embedder.dimension)
        aligner = await load_aligner(settings.dedup.alignment_enabled)
        policy = threshold_policy(settings)
        inner = (
            runtime.store.inner if isinstance(runtime.store, OutageSwitchStore) else runtime.store
        )
        if isinstance(inner, EdgeMemoryStore):
            inner.full_results_from(lowest_band(policy))
        engine = DedupEngine(
            store=runtime.store,
            embedder=TimedEmbedder(runtime.embedder, runtime.metrics),
            policy=policy,
            recent=RecentCache(
                ttl_s=settings.dedup.recent_ttl_s, max_entries=settings.dedup.recent_max_entries
            ),
            search_limit=settings.dedup.search_limit,
            guards=settings.dedup.guards_enabled,
            decide_without_model=settings.dedup.on_model_unavailable == "exact_recent_only",
            merger=build_merger(settings.dedup),
            verifier=build_verifier(settings.dedup),
            aligner=aligner,
        )
        # Past the producer's own request timeout, a wait for acknowledgements is a hang.
        publisher = runtime.publisher = BrokerPublisher(
            broker,
            ack_timeout_s=kafka.request_timeout_ms / 1000 + 10,
            partitioner=partitioner,
            max_request_bytes=kafka.max_request_bytes,
        )
        if uses_changelog(settings, runtime.store):
            fence: MembershipFence | None = runtime.membership
            if fence is not None and settings.chaos.stall_file is not None:
                fence = StallSwitch(fence, stall_file=settings.chaos.stall_file)
            runtime.changelog = Changelog(
                topic=settings.topics.changelog,
                bootstrap_servers=kafka.bootstrap_servers,
                publisher=publisher,
                client_kwargs=aiokafka_kwargs(settings.security),
                membership=fence,
            )
        processor = BatchProcessor(
            engine=engine,
            store=runtime.store,
            publisher=publisher,
            topics=settings.topics,
            model_id=runtime.embedder.model_id,
            max_event_bytes=settings.limits.max_event_bytes,
            changelog=runtime.changelog,
            dimension=runtime.embedder.dimension,
            metrics=runtime.metrics,
            # A shared server can see two consumers' work overlap; a shard cannot.
            reconcile=runtime.changelog is None,
            compaction=settings.compaction,
            membership=runtime.membership,
            retention=settings.retention,
            max_record_bytes=kafka.max_request_bytes,
        )
        runtime.service = ConsumerService(
            processor=processor,
            store=runtime.store,
            engine=engine,
            retry=settings.retry,
            input_topic=settings.topics.input,
            changelog=runtime.changelog,
            metrics=runtime.metrics,
            fail_open=settings.dedup.on_store_unavailable == "accept",
        )
        runtime.engine = engine
        log.info(
            "service_ready",
            store=settings.qdrant.backend,
            group_id=kafka.group_id,
            input_topic=settings.topics.input,
            model=runtime.embedder.model_id,
        )

    @app.on_shutdown
    async def stop_retrying() -> None:
        if runtime.service is not None:
            runtime.service.stop_retrying()

    @app.after_shutdown
    async def stop_service() -> None:
        if runtime.progress_task is not None:
            runtime.progress_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runtime.progress_task
        if runtime.changelog is not None:
            await runtime.changelog.close()
        if runtime.store is not None and runtime.owned["store"]:
            await runtime.store.close()
        if runtime.embedder is not None and runtime.owned["embedder"]:
            await runtime.embedder.close()
        if runtime.health is not None:
            await runtime.health.stop()
        log.info("service_stopped")

    app.context.set_global(_RUNTIME_KEY, runtime)
    return app


_RUNTIME_KEY = "memdedup_runtime"


def add_readiness_checks(runtime: Runtime, broker: KafkaBroker) -> None:
    assert runtime.health is not None

    async def broker_connected() -> bool:
        return bool(await broker.ping(timeout=1.5))

    async def model_loaded() -> bool:
        return runtime.service is not None

    async def store_reachable() -> bool:
        if runtime.store is None or runtime.service is None:
            return False
        await runtime.store.ping()
        return True

    runtime.health.add_readiness_check("broker", broker_connected)
    runtime.health.add_readiness_check("model", model_loaded)

    async def partitions_moving() -> bool:
        return runtime.progress is None or not runtime.progress.refresh()

    runtime.health.add_readiness_check("store", store_reachable)
    runtime.health.add_readiness_check("progress", partitions_moving)


def observe_batch(runtime: Runtime, summary: BatchSummary) -> None:
    metrics = runtime.metrics
    metrics.observe_batch(summary.records)
    metrics.observe_dead_letters(summary.dead_letters)
    metrics.rerouted(summary.rerouted)
    if runtime.engine is not None:
        recent = runtime.engine.recent
        metrics.set_cache(len(recent), hit_rate(recent.hits, recent.misses))


def first_offsets(records: Sequence[InputRecord]) -> dict[int, int]:
    first: dict[int, int] = {}
    for record in records:
        first[record.partition] = min(record.offset, first.get(record.partition, record.offset))
    return first


def next_offsets(records: Sequence[InputRecord]) -> dict[int, int]:
    """What committing a batch of these records commits, per partition."""
    following: dict[int, int] = {}
    for record in records:
        following[record.partition] = max(record.offset + 1, following.get(record.partition, 0))
    return following


def watch_progress(runtime: Runtime, consumer: Any, stuck_after_s: float) -> None:
    """Starts polling the broker's end offsets once the group's consumer is known."""
    if runtime.progress is None or runtime.progress_task is not None:
        return
    if not hasattr(consumer, "end_offsets"):
        return  # a test double of the consumer
    interval_s = min(5.0, stuck_after_s / 4)
    runtime.progress_task = asyncio.create_task(runtime.progress.run(consumer, interval_s))


def runtime_of(app: FastStream) -> Runtime:
    """The service parts of a running app (for the demo and tests)."""
    runtime = app.context.get(_RUNTIME_KEY)
    assert isinstance(runtime, Runtime)
    return runtime
