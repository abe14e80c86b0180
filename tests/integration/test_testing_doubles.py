"""The shipped test doubles (consumer.testing) run the whole service: the in-memory
store in place of the embedded one, the fake embedder in place of the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.testing import FakeEmbedder, InMemoryStore, base_vector, unit_vector
from tests.integration.harness import (
    decisions_by_event,
    event,
    make_settings,
    only,
    produce,
    read_outputs,
    running_consumer,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_the_service_decides_with_the_in_memory_store_and_the_fake_embedder(
    local_broker: Any, tmp_path: Path
) -> None:
    # Bands and guards only: the verifier and the parse judge real texts, not chosen vectors.
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={"verifier": {"kind": "off"}, "alignment_enabled": False},
    )
    embedder = FakeEmbedder()
    embedder.set("User likes green tea", base_vector())
    embedder.set("User enjoys green tea", unit_vector(0.85, axis=1))
    store = InMemoryStore()
    events = [
        event("e1", "User likes green tea"),
        event("e2", "User enjoys green tea"),
        event("e3", "user likes green tea"),
    ]
    async with running_consumer(settings, embedder, store):
        await produce(settings, events)
        outputs = await read_outputs(settings, at_least=len(events), settle_s=0.5)
    decided = decisions_by_event(outputs, settings)
    assert [only(decided, e)["decision"] for e in ("e1", "e2", "e3")] == [
        "accepted",
        "merged",
        "skipped",
    ]
    assert await store.count_memories() == 1
    # Every write went through the changelog, as the embedded store's do.
    [partition] = {only(decided, "e1")["record"]["partition"]}
    assert await store.changelog_position(partition) is not None
