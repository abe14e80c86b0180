"""Whether each owned input partition moves.

Lag is measured from the broker's end offsets (not from what this consumer has
fetched, which says nothing once a batch is stuck). A partition is stuck when
records wait on it (end offset past the committed one) and its committed offset
has not moved for `stuck_after_s`: a batch retried without end, a poison record,
a stalled store. /readyz fails while one is, and two gauges show it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from consumer.observability.metrics import ServiceMetrics

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class _PartitionState:
    # The next offset to process, as committed; None until known.
    committed: int | None = None
    lag: int = 0
    # Since when records have waited without the committed offset moving.
    waiting_since: float | None = None


class PartitionProgress:
    def __init__(
        self,
        *,
        topic: str,
        stuck_after_s: float,
        metrics: ServiceMetrics,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._topic = topic
        self._stuck_after_s = stuck_after_s
        self._metrics = metrics
        self._clock = clock
        self._partitions: dict[int, _PartitionState] = {}
        self._was_stuck: set[int] = set()

    # -- what the consumer reports ------------------------------------------------

    def fetched(self, first_offsets: dict[int, int]) -> None:
        """A batch starts at these offsets: the committed offset of a partition
        nothing has been committed for yet (a new group) is where it starts."""
        for partition, offset in first_offsets.items():
            state = self._partitions.setdefault(partition, _PartitionState())
            if state.committed is None:
                state.committed = offset

    def committed(self, next_offsets: dict[int, int]) -> None:
        now = self._clock()
        for partition, offset in next_offsets.items():
            state = self._partitions.setdefault(partition, _PartitionState())
            if state.committed is None or offset > state.committed:
                state.committed = offset
                state.lag = 0
                # Progress: a wait that is still on starts again from now.
                state.waiting_since = None if state.waiting_since is None else now
        self._publish()

    def revoked(self, partitions: Iterable[int]) -> None:
        gone = list(partitions)
        for partition in gone:
            self._partitions.pop(partition, None)
            self._was_stuck.discard(partition)
        self._metrics.clear_lag(gone)
        self._publish()

    # -- what the broker reports ---------------------------------------------------

    def observe(self, end_offsets: dict[int, int]) -> None:
        """The broker's end offset of owned partitions (partitions not listed are
        no longer owned)."""
        now = self._clock()
        for partition in set(self._partitions) - set(end_offsets):
            self.revoked([partition])
        for partition, end in end_offsets.items():
            state = self._partitions.setdefault(partition, _PartitionState())
            if state.committed is None:
                continue
            state.lag = max(0, end - state.committed)
            if state.lag == 0:
                state.waiting_since = None
            elif state.waiting_since is None:
                state.waiting_since = now
            self._metrics.set_lag(partition, state.lag)
        self._publish()

    # -- what it concludes -----------------------------------------------------------

    def waiting_s(self, partition: int) -> float:
        state = self._partitions.get(partition)
        if state is None or state.waiting_since is None:
            return 0.0
        return self._clock() - state.waiting_since

    @property
    def stuck(self) -> list[int]:
        return sorted(p for p in self._partitions if self.waiting_s(p) > self._stuck_after_s)

    def refresh(self) -> list[int]:
        """The stuck partitions now, with the gauges brought up to date (so
        /metrics agrees with a /readyz that just failed on them)."""
        self._publish()
        return self.stuck

    def lag(self, partition: int) -> int:
        state = self._partitions.get(partition)
        return 0 if state is None else state.lag

    def _publish(self) -> None:
        stuck = self.stuck
        oldest = max((self.waiting_s(p) for p in self._partitions), default=0.0)
        self._metrics.set_progress(len(stuck), oldest)
        for partition in set(stuck) - self._was_stuck:
            log.error(
                "partition_stuck",
                partition=partition,
                lag=self.lag(partition),
                waiting_s=round(self.waiting_s(partition), 1),
            )
        self._was_stuck = set(stuck)

    # -- the loop --------------------------------------------------------------------

    async def poll(self, consumer: Any) -> None:
        """Reads the end offsets (and any unknown committed offsets) of the
        consumer's assignment from the broker."""
        owned: Sequence[TopicPartition] = [
            tp for tp in consumer.assignment() if tp.topic == self._topic
        ]
        for tp in owned:
            state = self._partitions.setdefault(tp.partition, _PartitionState())
            if state.committed is None:
                state.committed = await consumer.committed(tp)
        ends = await consumer.end_offsets(list(owned)) if owned else {}
        self.observe({tp.partition: end for tp, end in ends.items()})

    async def run(self, consumer: Any, interval_s: float) -> None:
        """Polls until cancelled; a failed poll is logged and tried again."""
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                try:
                    await asyncio.wait_for(self.poll(consumer), timeout=max(interval_s, 5.0))
                except (KafkaError, OSError) as exc:
                    log.warning("progress_poll_failed", error=type(exc).__name__)
            await asyncio.sleep(interval_s)
