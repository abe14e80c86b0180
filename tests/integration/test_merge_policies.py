"""Merge policies per namespace through the real broker, model and embedded store;
the synthesize policy's merger is an OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas import MemoryDecisionEvent
from tests.chat_server import Completions, chat_completions_server
from tests.integration.harness import (
    StoreFactory,
    decisions_by_event,
    event,
    make_settings,
    produce,
    read_outputs,
    running_consumer,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SYNTHESIZED = "User has a severe peanut allergy"


@pytest.fixture
def merger_url() -> Iterator[tuple[str, Completions]]:
    with chat_completions_server(SYNTHESIZED) as (state, url):
        yield url, state


async def test_merge_policies_per_namespace(
    local_broker: Any,
    real_embedder: Any,
    tmp_path: Path,
    merger_url: tuple[str, Completions],
) -> None:
    url, merger = merger_url
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={
            "namespaces": {
                "bio": {"merge_policy": "replace_with_newer"},
                "prefs": {"merge_policy": "keep_higher_importance"},
                "health": {"merge_policy": "synthesize"},
            },
            "merger": {"base_url": url, "model": "tiny", "timeout_s": 5},
        },
    )
    stores = StoreFactory("edge", settings)
    first = [
        event("b1", "User is allergic to peanuts", namespace="bio", importance=0.9),
        event("p1", "User prefers Python for backend work", importance=0.4, topics=["code"]),
        event("h1", "User is allergic to peanuts", namespace="health"),
        event("k1", "User drinks coffee every morning", namespace="other"),
    ]
    second = [
        event("b2", "The user has a peanut allergy", namespace="bio", importance=0.5),
        event("p2", "User prefers Python for backend development work", importance=0.8),
        event("h2", "The user has a peanut allergy", namespace="health"),
        event("k2", "user drinks coffee every morning!", namespace="other"),
    ]
    third = [event("b3", "user is allergic to peanuts", namespace="bio")]
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(settings, first)
            await read_outputs(settings, at_least=len(first))
            await produce(settings, second)
            await read_outputs(settings, at_least=len(first) + len(second))
            await produce(settings, third)
            outputs = await read_outputs(settings, at_least=9, settle_s=1.0)
    finally:
        await stores.close()
    found = decisions_by_event(outputs, settings)
    assert all(len(copies) == 1 for copies in found.values())
    d = {key: MemoryDecisionEvent.model_validate(copies[0]) for key, copies in found.items()}

    b1, b2, b3 = d["b1"], d["b2"], d["b3"]
    assert (b2.decision.value, b2.merge_policy, b2.merge_fallback) == (
        "merged",
        "replace_with_newer",
        None,
    )
    assert b2.memory_id == b1.memory_id
    assert b2.memory.content == "The user has a peanut allergy"
    assert b2.memory.content_hash != b1.memory.content_hash
    assert b2.memory.supersedes == [b1.memory.content_hash]
    assert b2.memory.importance == 0.9
    assert [(s.event_id) for s in b2.memory.merged_from] == ["b2"]
    assert b2.memory.seen_count == 2
    # The first text still maps to the memory's id: an exact skip, counted.
    assert (b3.decision.value, b3.reason.value) == ("skipped", "exact")
    assert b3.memory_id == b1.memory_id
    assert b3.memory.seen_count == 3
    assert b3.merge_policy is None

    p2 = d["p2"]
    assert (p2.decision.value, p2.merge_policy) == ("merged", "keep_higher_importance")
    assert p2.memory.content == "User prefers Python for backend development work"
    assert p2.memory.importance == 0.8

    h2 = d["h2"]
    assert (h2.decision.value, h2.merge_policy, h2.merge_fallback) == (
        "merged",
        "synthesize",
        None,
    )
    assert h2.memory.content == SYNTHESIZED
    [(_, _, request)] = merger.requests
    assert request["model"] == "tiny"
    assert "The user has a peanut allergy" in request["messages"][0]["content"]

    k2 = d["k2"]
    assert (k2.decision.value, k2.reason.value) == ("skipped", "exact")
    assert k2.memory.seen_count == 2
    assert k2.memory.last_seen_at is not None
    assert k2.memory.first_seen_at == d["k1"].memory.first_seen_at
