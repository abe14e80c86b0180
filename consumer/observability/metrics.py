"""Prometheus metrics of the service, on a registry of their own.

`ServiceMetrics` owns a `CollectorRegistry` (never the global one), so several
consumers or tests in one process keep separate counts. consumer.observability.health serves
it on GET /metrics.

Where the service calls what:

- `observe_decision(...)`: once per *fresh* decision (not replays), in
  `BatchProcessor._process_partition` after `self._engine.commit(plan)`, for each
  `outcome` in `plan.outcomes`.
- `observe_dead_letters(summary.dead_letters)`, `observe_batch(summary.records)`,
  `rerouted(summary.rerouted)`: in `consume_batch` after `service.handle(...)`
  returned (poison records arrive there as `processing_error` dead letters).
- `observe_embed(seconds)`: around each model call; `TimedEmbedder` does it.
- `observe_store(seconds)`: what `DurableStore.write_decided` took, in `_decide_and_write`.
- `retry(component_of(exc))`, `set_backoff(True)` before the backoff sleep in
  `ConsumerService._with_retries`; `set_backoff(False)` once the operation
  succeeds or gives up.
- `poisoned()`: where `ConsumerService` counts a poison record.
- `abandoned(records)`: in `consume_batch` when a batch is left to the partitions'
  next owner because the group evicted this consumer (PartitionsLost).
- `set_cache(len(recent), hit_rate(recent.hits, recent.misses))` after each batch.
- `set_lag(partition, lag)` and `set_progress(stuck, oldest_waiting_s)` from
  `consumer.observability.progress.PartitionProgress`, every few seconds, from the broker's end
  offsets; `clear_lag(partitions)` when partitions are revoked.
- `degraded()`: for each decision taken in a degraded mode (e.g. without the
  semantic check).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from consumer.errors import (
    ChangelogUnavailable,
    EmbedderUnavailable,
    MembershipUnknown,
    PublishFailed,
    StoreUnavailable,
)
from consumer.ports import Embedder, Vectors

__all__ = [
    "CONTENT_TYPE",
    "ServiceMetrics",
    "TimedEmbedder",
    "component_of",
    "hit_rate",
]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

# Milliseconds: an exact lookup is ~1 ms, a semantic check of a batch tens of ms.
_CHECK_MS_BUCKETS: Final = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000)
# Dense around the default bands (merge 0.84, duplicate 0.96).
_SIMILARITY_BUCKETS: Final = (
    0.5,
    0.6,
    0.7,
    0.75,
    0.8,
    0.84,
    0.88,
    0.9,
    0.92,
    0.94,
    0.96,
    0.98,
    0.99,
    1.0,
)
_BATCH_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 10_000)
_SECONDS_BUCKETS: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)

DUPLICATE: Final = "duplicate"
UNIQUE: Final = "unique"


def hit_rate(hits: int, misses: int) -> float:
    """Hits over lookups; 0.0 before the first lookup."""
    total = hits + misses
    return hits / total if total else 0.0


def component_of(exc: BaseException) -> str:
    """The `component` label of a transient failure."""
    if isinstance(exc, StoreUnavailable):
        return "store"
    if isinstance(exc, EmbedderUnavailable):
        return "model"
    if isinstance(exc, PublishFailed | MembershipUnknown):
        return "broker"
    if isinstance(exc, ChangelogUnavailable):
        return "changelog"
    return "other"


class ServiceMetrics:
    """Every metric of the service, on its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        # Seed 004's set.
        self._children: dict[tuple[str, str, str], tuple[Any, Any, Any, Any]] = {}
        self._check_children: dict[str, Any] = {}
        self.checks = Counter(
            "dedup_checks",
            "Events decided, by namespace; result=duplicate for skipped or merged, unique for accepted.",
            ["namespace", "result"],
            registry=r,
        )
        self.skipped = Counter(
            "dedup_skipped",
            "Events skipped as duplicates, by namespace and the check that matched.",
            ["namespace", "reason"],
            registry=r,
        )
        self.check_duration = Histogram(
            "dedup_check_duration_ms",
            "Duration of the (batched) lookup that served a check, per event; total is their sum.",
            ["check_type"],
            buckets=_CHECK_MS_BUCKETS,
            registry=r,
        )
        self.similarity = Histogram(
            "dedup_similarity_score",
            "Best cosine similarity of a semantic check, by namespace.",
            ["namespace"],
            buckets=_SIMILARITY_BUCKETS,
            registry=r,
        )
        self.cache_size = Gauge(
            "dedup_cache_size", "Entries in the recent-decisions cache.", registry=r
        )
        self.cache_hit_rate = Gauge(
            "dedup_cache_hit_rate",
            "Hits over lookups of the recent-decisions cache since start.",
            registry=r,
        )
        # Service-level.
        self.decisions = Counter(
            "memdedup_decisions",
            "Fresh decisions (replays excluded), by decision and reason.",
            ["decision", "reason"],
            registry=r,
        )
        self.dead_letters = Counter(
            "memdedup_dead_letters",
            "Records sent to the dead-letter topic, by error code.",
            ["error_code"],
            registry=r,
        )
        self.rerouted_records = Counter(
            "memdedup_rerouted",
            "Records re-published to their scope's partition.",
            registry=r,
        )
        self.batch_size = Histogram(
            "memdedup_batch_size", "Records per batch.", buckets=_BATCH_BUCKETS, registry=r
        )
        self.embed_seconds = Histogram(
            "memdedup_embed_seconds",
            "Duration of one model call.",
            buckets=_SECONDS_BUCKETS,
            registry=r,
        )
        self.store_seconds = Histogram(
            "memdedup_store_seconds",
            "Duration of one store write.",
            buckets=_SECONDS_BUCKETS,
            registry=r,
        )
        self.retries = Counter(
            "memdedup_transient_retries",
            "Retries of transient failures, by component (store, model, broker, changelog).",
            ["component"],
            registry=r,
        )
        self.backoff_active = Gauge(
            "memdedup_backoff_active",
            "1 while consumption is paused in a retry backoff, else 0.",
            registry=r,
        )
        self.consumer_lag = Gauge(
            "memdedup_consumer_lag",
            "Records not yet committed, by owned input partition: the broker's end "
            "offset minus the group's committed offset.",
            ["partition"],
            registry=r,
        )
        self.stuck_partitions = Gauge(
            "memdedup_stuck_partitions",
            "Owned input partitions with records waiting whose committed offset has not "
            "moved for http.stuck_partition_after_s (readiness fails while above 0).",
            registry=r,
        )
        self.oldest_waiting = Gauge(
            "memdedup_oldest_waiting_seconds",
            "Longest time an owned input partition has had records waiting without its "
            "committed offset moving (0 when none waits).",
            registry=r,
        )
        self.poison_records = Counter(
            "memdedup_poison_records",
            "Records dead-lettered as processing_error after repeated unclassified failures.",
            registry=r,
        )
        self.abandoned_batches = Counter(
            "memdedup_abandoned_batches",
            "Batches left to the partitions' next owner: the group evicted this "
            "consumer while the batch was in flight.",
            registry=r,
        )
        self.guard_vetoes = Counter(
            "memdedup_guard_vetoes",
            "Semantic matches vetoed by a guard, by guard.",
            ["guard"],
            registry=r,
        )
        self.commands = Counter(
            "memdedup_commands",
            "Commands applied or rejected (reviews, compaction clusters), by type and status.",
            ["type", "status"],
            registry=r,
        )
        self.degraded_decisions = Counter(
            "memdedup_degraded_decisions",
            "Decisions taken in a degraded mode.",
            registry=r,
        )
        self.pruned_decisions = Counter(
            "memdedup_pruned_decisions",
            "Decision records deleted by decision retention (retention.decisions_hours).",
            registry=r,
        )
        self.prune_failures = Counter(
            "memdedup_decision_prune_failures",
            "Decision-retention checks that failed (tried again at the next check).",
            registry=r,
        )
        self._lag_partitions: set[str] = set()

    # -- decisions -----------------------------------------------------------

    def observe_decision(
        self,
        namespace: str,
        decision: str,
        reason: str,
        similarity: float | None = None,
        checks: Sequence[tuple[str, bool, float]] = (),
        guard: str | None = None,
    ) -> None:
        """One fresh decision. `checks` are (name, hit, duration_ms) of the checks
        that ran (exact, recent, semantic); `guard` names a guard that vetoed."""
        decision = str(decision)
        reason = str(reason)
        # Labelled children are cached: `labels()` validates and locks on every call,
        # which costs more than the increment itself on the duplicate path.
        children = self._children
        key = (namespace, decision, reason)
        cached = children.get(key)
        if cached is None:
            result = UNIQUE if decision == "accepted" else DUPLICATE
            cached = children[key] = (
                self.decisions.labels(decision=decision, reason=reason),
                self.checks.labels(namespace=namespace, result=result),
                self.skipped.labels(namespace=namespace, reason=reason)
                if decision == "skipped"
                else None,
                self.similarity.labels(namespace=namespace),
            )
        decided, checked, skipped, similarities = cached
        decided.inc()
        checked.inc()
        if skipped is not None:
            skipped.inc()
        total_ms = 0.0
        for name, _hit, duration_ms in checks:
            self._check_child(str(name)).observe(duration_ms)
            total_ms += duration_ms
        if checks:
            self._check_child("total").observe(total_ms)
        if similarity is not None:
            similarities.observe(similarity)
        if guard is not None:
            self.guard_vetoes.labels(guard=str(guard)).inc()

    def _check_child(self, check_type: str) -> Any:
        child = self._check_children.get(check_type)
        if child is None:
            child = self._check_children[check_type] = self.check_duration.labels(
                check_type=check_type
            )
        return child

    def command(self, command_type: str, status: str) -> None:
        self.commands.labels(type=command_type, status=status).inc()

    def degraded(self, count: int = 1) -> None:
        self.degraded_decisions.inc(count)

    # -- records and batches -------------------------------------------------

    def observe_dead_letter(self, code: str, count: int = 1) -> None:
        self.dead_letters.labels(error_code=str(code)).inc(count)

    def observe_dead_letters(self, counts: Mapping[str, int]) -> None:
        """A batch's dead letters by code (`BatchSummary.dead_letters`)."""
        for code, count in counts.items():
            if count:
                self.observe_dead_letter(code, count)

    def observe_batch(
        self, size: int, embed_s: float | None = None, store_s: float | None = None
    ) -> None:
        """One batch of `size` records; embed/store times if measured per batch
        (leave them out where `observe_embed`/`observe_store` are called per call)."""
        self.batch_size.observe(size)
        if embed_s is not None:
            self.observe_embed(embed_s)
        if store_s is not None:
            self.observe_store(store_s)

    def observe_embed(self, seconds: float) -> None:
        self.embed_seconds.observe(seconds)

    def observe_store(self, seconds: float) -> None:
        self.store_seconds.observe(seconds)

    def rerouted(self, count: int = 1) -> None:
        if count:
            self.rerouted_records.inc(count)

    def poisoned(self, count: int = 1) -> None:
        self.poison_records.inc(count)

    def abandoned(self) -> None:
        self.abandoned_batches.inc()

    def pruned(self, count: int) -> None:
        if count:
            self.pruned_decisions.inc(count)

    def prune_failed(self) -> None:
        self.prune_failures.inc()

    # -- state ---------------------------------------------------------------

    def set_cache(self, size: int, hit_rate: float) -> None:
        self.cache_size.set(size)
        self.cache_hit_rate.set(hit_rate)

    def set_lag(self, partition: int, lag: int) -> None:
        label = str(partition)
        self._lag_partitions.add(label)
        self.consumer_lag.labels(partition=label).set(max(lag, 0))

    def set_progress(self, stuck: int, oldest_waiting_s: float) -> None:
        self.stuck_partitions.set(stuck)
        self.oldest_waiting.set(oldest_waiting_s)

    def clear_lag(self, partitions: Iterable[int]) -> None:
        """Stop reporting partitions this consumer no longer owns."""
        for partition in partitions:
            label = str(partition)
            if label in self._lag_partitions:
                self._lag_partitions.discard(label)
                self.consumer_lag.remove(label)

    def retry(self, component: str) -> None:
        self.retries.labels(component=component).inc()

    def set_backoff(self, active: bool) -> None:
        self.backoff_active.set(1 if active else 0)

    # -- exposition ----------------------------------------------------------

    def render(self) -> bytes:
        """The registry in the Prometheus text format (CONTENT_TYPE)."""
        return generate_latest(self.registry)

    def metric_names(self) -> frozenset[str]:
        """Every sample name the registry can expose (with _total, _bucket, ...)."""
        names: set[str] = set()
        for family in self.registry.collect():
            names.add(family.name)
            if family.type == "counter":
                names.update({f"{family.name}_total", f"{family.name}_created"})
            elif family.type == "histogram":
                names.update(f"{family.name}{s}" for s in ("_bucket", "_sum", "_count", "_created"))
        return frozenset(names)


class TimedEmbedder:
    """An Embedder that observes the duration of each model call."""

    def __init__(self, inner: Embedder, metrics: ServiceMetrics) -> None:
        self._inner = inner
        self._metrics = metrics

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        try:
            return await self._inner.embed(texts)
        finally:
            self._metrics.observe_embed(time.perf_counter() - started)

    async def close(self) -> None:
        await self._inner.close()
