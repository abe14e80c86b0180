"""The service process's garbage-collector policy: applied, collecting, undone."""

from __future__ import annotations

import asyncio
import gc

from consumer.cli.gc_policy import THRESHOLDS, GcPolicy


async def test_start_freezes_the_startup_heap_and_raises_thresholds() -> None:
    before = gc.get_threshold()
    policy = GcPolicy(full_collection_interval_s=3600)
    await policy.start()
    try:
        assert gc.get_threshold() == THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        await policy.stop()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


async def test_full_collections_still_run_and_reclaim_cycles() -> None:
    policy = GcPolicy(full_collection_interval_s=0.02)
    await policy.start()
    try:
        # Cycles made after start, promoted to the oldest generation, then dropped:
        # only a full collection reclaims them.
        cycles: list[list[object]] = [[] for _ in range(100)]
        for item in cycles:
            item.append(item)
        gc.collect(1)
        gc.collect(1)
        del cycles, item
        tracked = len(gc.get_objects(generation=2))
        for _ in range(100):
            if policy.full_collections >= 2:
                break
            await asyncio.sleep(0.02)
        assert policy.full_collections >= 2
        assert len(gc.get_objects(generation=2)) < tracked - 90
    finally:
        await policy.stop()
    collections = policy.full_collections
    await asyncio.sleep(0.06)
    assert policy.full_collections == collections  # stopped
