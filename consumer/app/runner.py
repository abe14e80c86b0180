"""The consumer loop around the batch processor: retries with backoff, restoring
partitions before their first batch, poison isolation, and giving partitions up."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

import structlog

from consumer.domain.dedup import DedupEngine
from consumer.errors import PartitionsLost, PermanentError, StoreUnavailable, TransientError
from consumer.kafka.records import InputRecord
from consumer.observability.metrics import ServiceMetrics, component_of
from consumer.service.processor import BatchProcessor, BatchSummary
from consumer.settings import RetrySettings
from consumer.state.durable import DurableStore

log = structlog.get_logger(__name__)
T = TypeVar("T")


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
        state: DurableStore,
        engine: DedupEngine,
        retry: RetrySettings,
        input_topic: str,
        metrics: ServiceMetrics | None = None,
        fail_open: bool = False,
    ) -> None:
        """`fail_open`: when the store is down, accept (degraded) at once instead
        of waiting for it."""
        self._fail_open = fail_open
        self._metrics = metrics or ServiceMetrics()
        self._processor = processor
        self._state = state
        self._engine = engine
        self._retry = retry
        self._input_topic = input_topic
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
        for partition in self._state.unrestored(partitions):
            await self._with_retries(partial(self._state.restore, partition), 0)

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
            await self._state.release(partitions)
