"""Decision retention: decision records older than `retention.decisions_hours`
are deleted (off by default: every decision is kept).

One decision record is stored per event (~2 KB), so that a redelivered event
re-emits its first decision; without a limit they grow with the input for ever.
Kafka deletes input events after the topic's retention, so a decision is needed
for about as long: an event redelivered after its decision was pruned is decided
again, against the memories as they are then (accepted again into the memory it
made, or an exact skip into the memory its text made; one merged already into a
memory that still lists it is not counted again), and creates no new memory.

After a batch, each partition the batch touched is checked at most every
`interval_s`: up to `max_per_run` of its decisions decided before the cut-off are
deleted, with a changelog tombstoned there first (a restore then deletes them
too, and the compacted changelog forgets them). A partition that had more is
checked again after its next batch. A failed check is logged, counted and tried
again at the next check: the batch it follows is already published.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import structlog
from aiokafka.errors import KafkaError

from consumer.kafka.topics import topic_retention
from consumer.observability.metrics import ServiceMetrics
from consumer.settings import RetentionSettings, Settings
from consumer.state.durable import DurableStore

log = structlog.get_logger(__name__)


class DecisionRetention:
    def __init__(
        self,
        *,
        settings: RetentionSettings,
        state: DurableStore,
        metrics: ServiceMetrics,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`state` deletes as every write is made: changelog tombstones first, or
        fenced by membership (consumer.state.durable)."""
        if settings.decisions_hours is None:
            raise ValueError("decision retention is off (retention.decisions_hours unset)")
        self._keep_s = settings.decisions_hours * 3600.0
        self._interval_s = settings.interval_s
        self._max_per_run = settings.max_per_run
        self._state = state
        self._metrics = metrics
        self._clock = clock
        self._monotonic = monotonic
        # Monotonic time of each partition's next check.
        self._next_check: dict[int, float] = {}

    async def after_batch(self, partitions: Iterable[int]) -> int:
        """Prune the due partitions among `partitions`; returns how many decisions
        were deleted."""
        pruned = 0
        for partition in sorted(set(partitions)):
            if self._next_check.get(partition, float("-inf")) > self._monotonic():
                continue
            try:
                count = await self._prune(partition)
            except Exception as exc:  # never fails the batch, which is published already
                self._metrics.prune_failed()
                self._next_check[partition] = self._monotonic() + self._interval_s
                log.warning(
                    "decision_prune_failed",
                    partition=partition,
                    error=f"{type(exc).__name__}: {exc}",
                )
                continue
            pruned += count
            # More may be left: checked again after the partition's next batch.
            again = 0.0 if count >= self._max_per_run else self._interval_s
            self._next_check[partition] = self._monotonic() + again
        return pruned

    async def _prune(self, partition: int) -> int:
        cut_off = self._clock() - self._keep_s
        expired = await self._state.store.expired_decisions(partition, cut_off, self._max_per_run)
        if not expired:
            return 0
        await self._state.apply(partition, [], deleted_ids=expired)
        self._metrics.pruned(len(expired))
        log.info(
            "decisions_pruned",
            partition=partition,
            decisions=len(expired),
            older_than_hours=round(self._keep_s / 3600.0, 3),
        )
        return len(expired)


async def warn_if_shorter_than_input(settings: Settings) -> bool:
    """At start-up: whether decisions would be pruned while the input topic can
    still redeliver their events (logged as a warning, with both figures). Keeps
    going either way; an unreadable topic configuration is logged, not fatal."""
    hours = settings.retention.decisions_hours
    if hours is None:
        return False
    topic = settings.topics.input
    try:
        kept = await topic_retention(settings, topic)
    except (KafkaError, OSError) as exc:
        log.info("input_retention_unknown", topic=topic, error=type(exc).__name__)
        return False
    if hours >= kept.longest_kept_hours:
        return False
    log.warning(
        "decision_retention_shorter_than_input",
        topic=topic,
        decisions_hours=hours,
        input_kept_hours=kept.longest_kept_hours,
        retention_ms=kept.retention_ms,
        segment_ms=kept.segment_ms,
        effect="an event redelivered after its decision is pruned is decided again",
        fix="set MEMDEDUP_RETENTION__DECISIONS_HOURS to at least input_kept_hours",
    )
    return True
