"""Rebuilding into a new collection with other settings, then comparing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from consumer.cli.rebuild import RebuildRefused, rebuild
from consumer.settings import CrossEncoderSettings, DedupSettings
from tests.integration.harness import (
    StoreFactory,
    event,
    make_settings,
    produce,
    read_outputs,
    running_consumer,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


async def test_rebuild_with_stricter_thresholds_reports_what_changes(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    stores = StoreFactory("edge", settings)
    items = [
        event("b1", "User prefers Python for backend work"),
        event("b2", "user prefers python for backend work"),
        event("b3", "Python is the user's preferred language for backend work"),
        event("b4", "User is allergic to peanuts", namespace="bio"),
        event("b5", "The user has a peanut allergy", namespace="bio"),
        event("b6", "User's daughter is named Emma", namespace="bio"),
    ]
    await produce(settings, items)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await read_outputs(settings, at_least=len(items), settle_s=0.5)
        live_memories = await stores.count()
    finally:
        await stores.close()

    # Stricter bands and no cross-encoder: its rescue band reaches up to the merge
    # threshold, so it would still merge the paraphrases below 0.99.
    strict = settings.model_copy(
        update={
            "dedup": DedupSettings(
                duplicate_threshold=0.995,
                merge_threshold=0.99,
                cross_encoder=CrossEncoderSettings(enabled=False),
            )
        }
    )
    progress = io.StringIO()
    report = await rebuild(strict, target_collection="strict", progress=progress)
    text = report.render()
    print(text)
    assert report.records == len(items)
    assert set(report.rebuilt) == set(report.live) == {e["event_id"] for e in items}
    # Paraphrases that were merged live stand alone under the stricter bands.
    assert report.live["b3"] == "merged"
    assert report.rebuilt["b3"] == "accepted"
    assert report.rebuilt["b2"] == "skipped"  # exact repeats do not depend on thresholds
    assert report.transitions[("merged", "accepted")] == 2
    assert "merged -> accepted: 2" in text
    assert f"{len(items)}/{len(items)}" in progress.getvalue()
    # The live collection is untouched; the new one holds the rebuilt state.
    assert await StoreFactory("edge", settings).count() == live_memories
    rebuilt = settings.model_copy(
        update={"qdrant": settings.qdrant.model_copy(update={"collection": "strict"})}
    )
    assert await StoreFactory("edge", rebuilt).count() == live_memories + 2

    with pytest.raises(RebuildRefused, match="live collection"):
        await rebuild(strict, target_collection=settings.qdrant.collection, progress=None)
    with pytest.raises(RebuildRefused, match="already holds memories"):
        await rebuild(strict, target_collection="strict", progress=None)
