"""The garbage collector's policy in the service process (`memdedup run`).

CPython's defaults (a young collection every 700 allocations, an older one every
10 of those) suit small programs. A batch of 1,024 events allocates well over
100,000 container objects that stay alive until the batch is done, so the young
collections keep traversing them and promote them, and full collections then
traverse the whole grown heap: in `bench/e2e.py` (20,000 mixed events, then
20,000 exact duplicates) the defaults cost a quarter of the mixed throughput and
a third of the duplicates' (docs/performance-log.md). Here:

- young collections run every 50,000 allocations and older ones rarely;
- what exists once the service has started (libraries, the model, settings) is
  frozen: never garbage, so no collection traverses it again;
- a full collection still runs every few minutes, so reference cycles that die
  old are reclaimed all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from typing import Final

import structlog

log = structlog.get_logger(__name__)

THRESHOLDS: Final = (50_000, 50, 1_000)
FULL_COLLECTION_INTERVAL_S: Final = 300.0


class GcPolicy:
    """Applied by `start` (after the service has started), undone by `stop`."""

    def __init__(
        self,
        *,
        thresholds: tuple[int, int, int] = THRESHOLDS,
        full_collection_interval_s: float = FULL_COLLECTION_INTERVAL_S,
    ) -> None:
        self._thresholds = thresholds
        self._interval_s = full_collection_interval_s
        self._previous: tuple[int, int, int] | None = None
        self._collector: asyncio.Task[None] | None = None
        self.full_collections = 0

    async def start(self) -> None:
        self._previous = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(*self._thresholds)
        self._collector = asyncio.create_task(self._collect_periodically())
        log.info("gc_policy", thresholds=list(self._thresholds), frozen=gc.get_freeze_count())

    async def stop(self) -> None:
        if self._collector is not None:
            self._collector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._collector
            self._collector = None
        if self._previous is not None:
            gc.set_threshold(*self._previous)
            gc.unfreeze()
            self._previous = None

    async def _collect_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            started = time.perf_counter()
            found = gc.collect()
            self.full_collections += 1
            log.debug(
                "gc_full_collection",
                unreachable=found,
                ms=round((time.perf_counter() - started) * 1000, 1),
            )
