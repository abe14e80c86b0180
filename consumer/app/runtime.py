"""What the app builds at start-up and tears down at shutdown, and the per-batch
bookkeeping the handler does with it (progress, metrics, readiness checks)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from faststream import FastStream
from faststream.kafka import KafkaBroker

from consumer.domain.dedup import DedupEngine
from consumer.kafka.publisher import BrokerPublisher
from consumer.kafka.records import InputRecord
from consumer.observability.health import HealthServer
from consumer.observability.metrics import ServiceMetrics, hit_rate
from consumer.observability.progress import PartitionProgress
from consumer.ports import Embedder, MemoryStore
from consumer.service.processor import BatchSummary
from consumer.state.changelog import Changelog
from consumer.state.membership import GroupMembership

from .runner import ConsumerService

RUNTIME_KEY = "memdedup_runtime"


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


def runtime_of(app: FastStream) -> Runtime:
    """The service parts of a running app (for the demo and tests)."""
    runtime = app.context.get(RUNTIME_KEY)
    assert isinstance(runtime, Runtime)
    return runtime


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
