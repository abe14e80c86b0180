"""The service against real Apache Kafka (KRaft) and a Qdrant server, started with
testcontainers: the scenarios of test_consumer.py that depend most on the broker
and the store. Skipped, with the reason, where no Docker engine is reachable."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from consumer.domain.normalize import decision_id_for
from consumer.settings import Settings
from consumer.state.server import VECTOR_NAME, QdrantServerStore
from schemas import MemoryDecisionEvent
from tests.integration.harness import (
    TIERS_BASE,
    TIERS_FOLLOW_UP,
    decisions_by_event,
    event,
    make_settings,
    only,
    produce,
    read_outputs,
    running_consumer,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]


@pytest.fixture
def settings(kafka_bootstrap: str, qdrant_url: str, tmp_path: Path) -> Settings:
    """Unique topics, group and collection; session timeouts real Kafka accepts."""
    return make_settings(
        kafka_bootstrap,
        tmp_path,
        kafka={"session_timeout_ms": 10_000, "heartbeat_interval_ms": 3_000},
        qdrant={"url": qdrant_url, "collection": f"memories-{uuid.uuid4().hex[:8]}"},
    )


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[QdrantServerStore]:
    assert settings.qdrant.url is not None
    server = QdrantServerStore.connect(
        url=settings.qdrant.url, collection=settings.qdrant.collection
    )
    try:
        yield server
    finally:
        await server.close()


async def test_exact_semantic_and_distinct_decisions(
    settings: Settings, store: QdrantServerStore, real_embedder: Any
) -> None:
    base = TIERS_BASE
    follow_up = TIERS_FOLLOW_UP
    async with running_consumer(settings, real_embedder, store):
        await produce(settings, base)
        await read_outputs(settings, at_least=len(base))
        await produce(settings, follow_up)
        outputs = await read_outputs(settings, at_least=len(base) + len(follow_up), settle_s=1.0)
    decisions = decisions_by_event(outputs, settings)
    for body in (copy for copies in decisions.values() for copy in copies):
        MemoryDecisionEvent.model_validate(body)

    e1 = only(decisions, "e1")
    assert (e1["decision"], e1["reason"]) == ("accepted", "new")

    exact = only(decisions, "e4")
    assert (exact["decision"], exact["reason"]) == ("skipped", "exact")
    assert exact["memory_id"] == e1["memory_id"]

    paraphrase = only(decisions, "e5")
    assert paraphrase["reason"] == "semantic"
    assert paraphrase["decision"] in {"skipped", "merged"}
    assert paraphrase["memory_id"] == e1["memory_id"]

    merged = only(decisions, "e6")
    assert (merged["decision"], merged["reason"]) == ("merged", "semantic")
    assert merged["memory_id"] == only(decisions, "e3")["memory_id"]
    assert merged["memory"]["importance"] == 0.9
    assert merged["memory"]["merged_event_ids"] == ["e6"]

    for distinct in ("e7", "e8", "e9"):
        body = only(decisions, distinct)
        assert (body["decision"], body["reason"]) == ("accepted", "new"), distinct
    assert await store.count_memories() == 6  # e1, e2, e3, e7, e8, e9

    # On a server too, only memories carry a vector: decisions store none.
    assert store.named_vectors
    decision_point = decision_id_for("e4")
    records = await store._client.retrieve(
        settings.qdrant.collection, [decision_point, e1["memory_id"]], with_vectors=True
    )
    vectors = {str(record.id): record.vector for record in records}
    assert vectors[decision_point] == {}
    memory_vector = vectors[e1["memory_id"]]
    assert isinstance(memory_vector, dict)
    dense = memory_vector[VECTOR_NAME]
    assert isinstance(dense, list)
    assert len(dense) == real_embedder.dimension


async def test_redelivered_events_reemit_identical_decisions(
    settings: Settings, store: QdrantServerStore, real_embedder: Any
) -> None:
    items = [
        event("p1", "User prefers Python for backend work"),
        event("p2", "User prefers Python for backend development work"),
        event("p3", "Python is the user's preferred language for backend work", topics=["lang"]),
        event("p4", "User lives in Paris"),
        event("p4b", "user lives in paris"),
    ]
    await produce(settings, items)
    async with running_consumer(settings, real_embedder, store):
        first = await read_outputs(settings, at_least=len(items), settle_s=0.5)
    memories = await store.count_memories()
    # A second group reads the topic from the start: every event is delivered again.
    again = settings.model_copy(
        update={
            "kafka": settings.kafka.model_copy(
                update={"group_id": settings.kafka.group_id + "-again"}
            )
        }
    )
    async with running_consumer(again, real_embedder, store):
        both = await read_outputs(settings, at_least=2 * len(items), settle_s=1.0)
    assert await store.count_memories() == memories
    first_values = sorted(o.value for o in first)
    assert len(first_values) == len(items)
    # Each decision appears exactly twice, byte for byte.
    assert sorted(o.value for o in both) == sorted(first_values * 2)
