"""The one place the service is wired: `create_app(settings)` returns a FastStream app.

Offsets are committed manually (AckPolicy.MANUAL), only after a batch's memories
are stored and its decision events are acknowledged by the broker: at-least-once,
made exact-once in effect by the decision records.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from aiokafka.errors import KafkaError
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker

from consumer.chaos.stall import StallSwitch
from consumer.chaos.store import OutageSwitchStore
from consumer.compaction.plan import local_judge
from consumer.domain.alignment import load_aligner
from consumer.domain.dedup import DedupEngine
from consumer.domain.merge import build_merger
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import ThresholdPolicy, lowest_band, policy_from_settings
from consumer.domain.verifier import build_verifier
from consumer.embedding.cross_encoder import load_cross_encoder
from consumer.embedding.embedders import load_embedder, with_subject_form
from consumer.kafka.partitioning import CachedDefaultPartitioner
from consumer.kafka.publisher import BrokerPublisher
from consumer.kafka.security import aiokafka_kwargs, faststream_security
from consumer.kafka.topics import ensure_topics
from consumer.observability.health import HealthServer
from consumer.observability.metrics import ServiceMetrics, TimedEmbedder
from consumer.observability.progress import PartitionProgress
from consumer.observability.tracing import tracing_middlewares
from consumer.ports import Embedder, MembershipFence, MemoryStore
from consumer.service.command_processor import CommandProcessor
from consumer.service.periodic_compaction import PeriodicCompaction
from consumer.service.processor import BatchProcessor
from consumer.service.retention import DecisionRetention, warn_if_shorter_than_input
from consumer.settings import QdrantSettings, Settings
from consumer.state.changelog import Changelog
from consumer.state.durable import DurableStore
from consumer.state.edge import EdgeMemoryStore
from consumer.state.membership import GroupMembership
from consumer.state.server import QdrantServerStore

from .handler import BatchHandler, leave_undecoded
from .handover import PartitionHandover
from .runner import ConsumerService
from .runtime import RUNTIME_KEY, Runtime, add_readiness_checks

log = structlog.get_logger(__name__)


def threshold_policy(settings: Settings) -> ThresholdPolicy:
    return policy_from_settings(settings.dedup)


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
    """Only an embedded store (one with shards) needs its state carried between
    machines."""
    return store.shards() is not None and bool(settings.topics.changelog)


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
    broker.subscriber(
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
    )(BatchHandler(runtime, settings).consume_batch)

    app = FastStream(broker, logger=None)

    async def on_startup() -> None:
        await start_service(runtime, settings, broker, partitioner)

    async def on_shutdown() -> None:
        if runtime.service is not None:
            runtime.service.stop_retrying()

    async def after_shutdown() -> None:
        await stop_service(runtime)

    app.on_startup(on_startup)
    app.on_shutdown(on_shutdown)
    app.after_shutdown(after_shutdown)
    app.context.set_global(RUNTIME_KEY, runtime)
    return app


async def start_service(
    runtime: Runtime,
    settings: Settings,
    broker: KafkaBroker,
    partitioner: CachedDefaultPartitioner,
) -> None:
    """Everything the handler needs, built before the first batch: health server,
    topics, model, store, engine, publisher, changelog, processor and service."""
    kafka = settings.kafka
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
        runtime.embedder = await load_embedder(settings.embedding, data_dir=settings.qdrant.path)
    # An injected embedder compares texts as a loaded one does.
    runtime.embedder = with_subject_form(runtime.embedder, settings.embedding)
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
    cross_encoder = await load_cross_encoder(settings.dedup.cross_encoder)
    policy = threshold_policy(settings)
    shards = runtime.store.shards()
    if shards is not None:
        shards.full_results_from(lowest_band(policy))
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
        verifier=build_verifier(settings.dedup, aligner=aligner),
        aligner=aligner,
        cross_encoder=cross_encoder,
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
    state = DurableStore(
        runtime.store,
        changelog=runtime.changelog,
        membership=runtime.membership,
        dimension=runtime.embedder.dimension,
    )
    model_id = runtime.embedder.model_id
    commands = CommandProcessor(
        engine=engine,
        state=state,
        topics=settings.topics,
        model_id=model_id,
        dimension=runtime.embedder.dimension,
        metrics=runtime.metrics,
    )
    compaction = settings.compaction
    periodic = (
        PeriodicCompaction(
            settings=compaction,
            state=state,
            commands=commands,
            publisher=publisher,
            guards=engine.guards_enabled,
            input_topic=settings.topics.input,
            judge=local_judge(engine.verifier),
            dimension=runtime.embedder.dimension,
        )
        if compaction.periodic
        else None
    )
    retention = (
        DecisionRetention(settings=settings.retention, state=state, metrics=runtime.metrics)
        if settings.retention.decisions_hours is not None
        else None
    )
    processor = BatchProcessor(
        engine=engine,
        state=state,
        commands=commands,
        publisher=publisher,
        topics=settings.topics,
        model_id=model_id,
        max_event_bytes=settings.limits.max_event_bytes,
        max_record_bytes=kafka.max_request_bytes,
        metrics=runtime.metrics,
        # A shared server can see two consumers' work overlap; a shard cannot.
        reconcile=runtime.changelog is None,
        periodic=periodic,
        retention=retention,
    )
    runtime.service = ConsumerService(
        processor=processor,
        state=state,
        engine=engine,
        retry=settings.retry,
        input_topic=settings.topics.input,
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


async def stop_service(runtime: Runtime) -> None:
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
