"""DedupEngine against the in-memory store, with a fake embedder whose vectors the
tests choose, so similarities are exact."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from consumer.domain.dedup import DedupEngine
from consumer.domain.models import BatchPlan, Candidate, MemoryRecord, MergeSource, Outcome
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.ports import MemoryStore
from schemas import CheckName, Decision, DecisionReason

from .conftest import EngineFactory
from .helpers import (
    DEFAULT_BANDS,
    FIXED_NOW,
    FakeEmbedder,
    base_vector,
    make_candidate,
    unit_vector,
)

BASE = "The user prefers dark mode"
NEAR = "User likes dark themes"  # similarity 0.95 with BASE: duplicate band
CLOSE = "The user prefers a dark theme in the editor"  # 0.85: merge band
FAR = "The user is learning Rust"  # 0.5: below merge


@pytest.fixture
def vectors(embedder: FakeEmbedder) -> FakeEmbedder:
    embedder.set(BASE, base_vector())
    embedder.set(NEAR, unit_vector(0.95, axis=1))
    embedder.set(CLOSE, unit_vector(0.85, axis=2))
    embedder.set(FAR, unit_vector(0.5, axis=3))
    return embedder


@pytest.fixture
def engine(make_engine: EngineFactory, vectors: FakeEmbedder) -> DedupEngine:
    return make_engine()


async def persist(store: MemoryStore, engine: DedupEngine, plan: BatchPlan) -> None:
    await store.write(plan.partition, list(plan.writes.values()), [])
    engine.commit(plan)


async def decide_and_store(
    store: MemoryStore, engine: DedupEngine, *candidates: Candidate, partition: int = 0
) -> list[Outcome]:
    plan = await engine.decide(partition, list(candidates))
    await persist(store, engine, plan)
    return plan.outcomes


def cand(event_id: str, content: str, offset: int = 0, **extra: Any) -> Candidate:
    return make_candidate(event_id=event_id, content=content, offset=offset, **extra)


def checks_of(outcome: Outcome) -> dict[CheckName, bool]:
    return {check.name: check.hit for check in outcome.checks}


async def test_empty_batch(engine: DedupEngine, embedder: FakeEmbedder) -> None:
    plan = await engine.decide(0, [])
    assert plan.outcomes == []
    assert plan.writes == {}
    assert embedder.calls == []


async def test_new_memory_is_accepted(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    candidate = cand("e1", BASE + "!", importance=0.6, topics=["ui", "ui"], entities=["user"])
    plan = await engine.decide(0, [candidate])
    [outcome] = plan.outcomes
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.reason is DecisionReason.NEW
    assert outcome.similarity is None
    assert outcome.threshold is None
    memory = outcome.memory
    assert memory.memory_id == candidate.memory_id
    assert memory.content == BASE + "!"
    assert memory.content_hash == candidate.content_hash
    assert memory.importance == 0.6
    assert memory.topics == ["ui"]
    assert memory.entities == ["user"]
    assert memory.merged_event_ids == []
    assert memory.origin_event_id == "e1"
    assert memory.created_at == memory.updated_at == FIXED_NOW
    assert outcome.decided_at == FIXED_NOW
    assert list(plan.writes) == [candidate.memory_id]
    assert checks_of(outcome) == {
        CheckName.EXACT: False,
        CheckName.RECENT: False,
        CheckName.SEMANTIC: False,
    }
    assert embedder.calls == [[candidate.normalized]]
    # decide writes nothing.
    assert await store.count_memories(0) == 0


async def test_exact_repeat_from_earlier_batch_skips_without_model(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    [first] = await decide_and_store(store, engine, cand("e1", BASE))
    calls_before = len(embedder.calls)
    plan = await engine.decide(0, [cand("e2", "  the USER prefers dark mode. ", offset=1)])
    [outcome] = plan.outcomes
    assert outcome.decision is Decision.SKIPPED
    assert outcome.reason is DecisionReason.EXACT
    assert outcome.memory.memory_id == first.memory.memory_id
    assert outcome.memory.content == BASE
    assert outcome.similarity is None
    # The skip bumps the matched memory's counters: it is written again.
    assert list(plan.writes) == [first.memory.memory_id]
    assert plan.writes[first.memory.memory_id].seen_count == 2
    assert len(embedder.calls) == calls_before
    assert checks_of(outcome) == {CheckName.EXACT: True}


async def test_exact_repeat_found_in_store_without_recent_cache(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    """A fresh consumer (empty cache) still finds the stored memory by id."""
    await decide_and_store(store, make_engine(), cand("e1", BASE))
    fresh = make_engine()
    calls_before = len(vectors.calls)
    [outcome] = (await fresh.decide(0, [cand("e2", BASE)])).outcomes
    assert (outcome.decision, outcome.reason) == (Decision.SKIPPED, DecisionReason.EXACT)
    assert len(vectors.calls) == calls_before


async def test_an_event_whose_memory_was_stored_without_its_decision_is_accepted_again(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    """An earlier try stored e1's memory but not its decision (an append cut short):
    e1 decided again is accepted into that very memory, left as it was, and not
    announced as a skip into a memory nobody heard of; another event with the text
    is still an exact skip."""
    [first] = await decide_and_store(store, make_engine(), cand("e1", BASE))
    fresh = make_engine()
    plan = await fresh.decide(0, [cand("e1", BASE), cand("e2", BASE, offset=1)])
    again, other = plan.outcomes
    assert (again.decision, again.reason) == (Decision.ACCEPTED, DecisionReason.NEW)
    assert again.memory.memory_id == first.memory.memory_id
    assert again.memory.created_at == first.memory.created_at
    assert again.memory.seen_count == 1
    assert (other.decision, other.reason) == (Decision.SKIPPED, DecisionReason.EXACT)
    assert other.memory.memory_id == first.memory.memory_id
    # Only e2's skip changes the memory.
    assert plan.writes[first.memory.memory_id].seen_count == 2


async def test_in_batch_repeat_is_exact_and_model_called_once(
    engine: DedupEngine, embedder: FakeEmbedder
) -> None:
    plan = await engine.decide(
        0, [cand("e1", BASE, 0), cand("e2", BASE.upper() + ".", 1), cand("e3", BASE, 2)]
    )
    first, second, third = plan.outcomes
    assert first.decision is Decision.ACCEPTED
    for repeat in (second, third):
        assert repeat.decision is Decision.SKIPPED
        # As it would be had the batch split before it: a reason never depends
        # on batch boundaries.
        assert repeat.reason is DecisionReason.EXACT
        assert repeat.memory.memory_id == first.memory.memory_id
        assert checks_of(repeat) == {CheckName.EXACT: True}
    assert embedder.calls == [[first.candidate.normalized]]
    assert len(plan.writes) == 1


async def test_an_exact_repeat_gets_one_reason_however_the_batches_split(
    make_engine: EngineFactory, store: MemoryStore
) -> None:
    together = await make_engine().decide(0, [cand("e1", BASE, 0), cand("e2", BASE, 1)])
    await decide_and_store(store, make_engine(), cand("e1", BASE, 0))
    [apart] = (await make_engine().decide(0, [cand("e2", BASE, 1)])).outcomes
    in_batch = together.outcomes[1]
    assert (in_batch.decision, in_batch.reason) == (apart.decision, apart.reason)
    assert checks_of(in_batch) == checks_of(apart)


# A neighbour found only by search (stored in an earlier batch) must be usable.
async def test_semantic_duplicate_is_skipped(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    [first] = await decide_and_store(store, engine, cand("e1", BASE))
    plan = await engine.decide(0, [cand("e2", NEAR, 1)])
    [outcome] = plan.outcomes
    assert outcome.decision is Decision.SKIPPED
    assert outcome.reason is DecisionReason.SEMANTIC
    assert outcome.similarity == pytest.approx(0.95, abs=1e-4)
    assert outcome.threshold == DEFAULT_BANDS.duplicate_threshold
    assert outcome.memory.memory_id == first.memory.memory_id
    assert outcome.memory.content == BASE
    # The skip bumps the matched memory's counters: it is written again.
    assert list(plan.writes) == [first.memory.memory_id]
    assert plan.writes[first.memory.memory_id].seen_count == 2
    semantic = next(c for c in outcome.checks if c.name is CheckName.SEMANTIC)
    assert semantic.hit is True
    assert semantic.score == pytest.approx(0.95, abs=1e-4)
    assert embedder.calls[-1] == [outcome.candidate.normalized]


async def test_merge_band_merges_into_existing_memory(
    engine: DedupEngine, store: MemoryStore
) -> None:
    [first] = await decide_and_store(
        store,
        engine,
        cand("e1", BASE, importance=0.4, topics=["ui", "prefs"], entities=["user"]),
    )
    plan = await engine.decide(
        0,
        [cand("e2", CLOSE, 1, importance=0.9, topics=["prefs", "editor"], entities=["editor"])],
    )
    [outcome] = plan.outcomes
    assert outcome.decision is Decision.MERGED
    assert outcome.reason is DecisionReason.SEMANTIC
    assert outcome.similarity == pytest.approx(0.85, abs=1e-4)
    assert outcome.threshold == DEFAULT_BANDS.merge_threshold
    merged = outcome.memory
    assert merged.memory_id == first.memory.memory_id
    assert merged.content == BASE
    assert merged.content_hash == first.memory.content_hash
    assert merged.topics == ["ui", "prefs", "editor"]
    assert merged.entities == ["user", "editor"]
    assert merged.importance == 0.9
    assert merged.merged_event_ids == ["e2"]
    assert merged.origin_event_id == "e1"
    assert list(plan.writes) == [merged.memory_id]
    assert plan.writes[merged.memory_id].vector == pytest.approx(list(base_vector()))

    await persist(store, engine, plan)
    stored = await store.get_memories(0, [merged.memory_id])
    assert stored[merged.memory_id].merged_event_ids == ["e2"]
    assert stored[merged.memory_id].topics == ["ui", "prefs", "editor"]
    assert await store.count_memories(0) == 1


async def test_merge_keeps_higher_existing_importance(
    engine: DedupEngine, store: MemoryStore
) -> None:
    await decide_and_store(store, engine, cand("e1", BASE, importance=0.8))
    [outcome] = (await engine.decide(0, [cand("e2", CLOSE, 1, importance=0.1)])).outcomes
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.importance == 0.8


async def test_two_merges_accumulate_event_ids(
    engine: DedupEngine, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    other_close = "Dark theme is preferred by the user"
    vectors.set(other_close, unit_vector(0.82, axis=4))
    await decide_and_store(store, engine, cand("e1", BASE))
    await decide_and_store(store, engine, cand("e2", CLOSE, 1))
    [outcome] = await decide_and_store(store, engine, cand("e3", other_close, 2))
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.merged_event_ids == ["e2", "e3"]


async def test_an_event_merged_already_is_no_new_sighting(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    await decide_and_store(store, make_engine(), cand("e1", BASE))
    # A changelog append cut short after the memories: the merge is stored, its
    # decision is not, and the event is decided again (by a fresh engine).
    plan = await make_engine().decide(0, [cand("e2", CLOSE, 1)])
    [merged] = plan.outcomes
    await store.write(0, list(plan.writes.values()), [])
    assert (merged.decision, merged.memory.seen_count) == (Decision.MERGED, 2)
    [again] = (await make_engine().decide(0, [cand("e2", CLOSE, 1)])).outcomes
    assert again.decision is Decision.MERGED
    assert again.memory.memory_id == merged.memory.memory_id
    assert again.memory.merged_event_ids == ["e2"]
    assert again.memory.seen_count == 2
    # Met in the skip band instead (the merge kept its text), it is not counted either.
    plan = await make_engine().decide(0, [cand("e2", NEAR, 1)])
    [skipped] = plan.outcomes
    assert (skipped.decision, skipped.memory.seen_count) == (Decision.SKIPPED, 2)
    assert plan.writes == {}
    # Another event is a new sighting.
    [other] = (await make_engine().decide(0, [cand("e3", NEAR, 2)])).outcomes
    assert (other.decision, other.memory.seen_count) == (Decision.SKIPPED, 3)


async def test_an_event_skipped_already_is_no_new_sighting(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    [first] = await decide_and_store(store, make_engine(), cand("e1", BASE))
    # A changelog append cut short after the memories: the skips' seen update is
    # stored, their decisions are not, and the batch is decided again.
    batch = [cand("e2", NEAR, 1), cand("e3", BASE, 2)]
    plan = await make_engine().decide(0, batch)
    assert [o.decision for o in plan.outcomes] == [Decision.SKIPPED] * 2
    assert plan.outcomes[-1].memory.seen_count == 3
    await store.write(0, list(plan.writes.values()), [])
    again = await make_engine().decide(0, batch)
    assert [(o.decision, o.memory.seen_count) for o in again.outcomes] == [
        (Decision.SKIPPED, 3),
        (Decision.SKIPPED, 3),
    ]
    assert again.writes == {}
    # The retry may read more events than the first try: those are new sightings,
    # and what it writes still names the first try's, for a retry after it.
    longer = await make_engine().decide(0, [*batch, cand("e4", NEAR, 3)])
    assert [o.memory.seen_count for o in longer.outcomes] == [3, 3, 4]
    await store.write(0, list(longer.writes.values()), [])
    stored = (await store.get_memories(0, [first.memory.memory_id]))[first.memory.memory_id]
    assert (stored.seen_count, stored.skipped_event_ids) == (4, ["e2", "e3", "e4"])
    last = await make_engine().decide(0, [*batch, cand("e4", NEAR, 3)])
    assert [o.memory.seen_count for o in last.outcomes] == [4, 4, 4]
    # A later batch's skip is counted, and its record names that batch's events only.
    later = await make_engine().decide(0, [cand("e5", NEAR, 4)])
    [seen] = later.writes.values()
    assert (seen.seen_count, seen.skipped_event_ids) == (5, ["e5"])


async def test_below_merge_is_accepted(engine: DedupEngine, store: MemoryStore) -> None:
    await decide_and_store(store, engine, cand("e1", BASE))
    [outcome] = await decide_and_store(store, engine, cand("e2", FAR, 1))
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.reason is DecisionReason.NEW
    semantic = next(c for c in outcome.checks if c.name is CheckName.SEMANTIC)
    assert semantic.hit is False
    assert semantic.score == pytest.approx(0.5, abs=1e-4)
    assert await store.count_memories(0) == 2


async def test_semantic_match_inside_one_batch(engine: DedupEngine, embedder: FakeEmbedder) -> None:
    plan = await engine.decide(0, [cand("e1", BASE, 0), cand("e2", NEAR, 1), cand("e3", CLOSE, 2)])
    first, near, close = plan.outcomes
    assert first.decision is Decision.ACCEPTED
    assert (near.decision, near.reason) == (Decision.SKIPPED, DecisionReason.SEMANTIC)
    assert near.similarity == pytest.approx(0.95, abs=1e-5)
    assert close.decision is Decision.MERGED
    assert close.memory.memory_id == first.memory.memory_id
    assert close.memory.merged_event_ids == ["e3"]
    assert list(plan.writes) == [first.memory.memory_id]
    assert plan.writes[first.memory.memory_id].merged_event_ids == ["e3"]
    assert len(embedder.calls) == 1


@pytest.mark.parametrize(
    "other",
    [
        {"tenant_id": "tenant-b"},
        {"namespace": "facts"},
        {"tenant_id": "tenant-b", "namespace": "facts"},
    ],
)
async def test_scopes_are_isolated_across_batches(
    engine: DedupEngine, store: MemoryStore, other: dict[str, str]
) -> None:
    [first] = await decide_and_store(store, engine, cand("e1", BASE))
    [same_text] = await decide_and_store(store, engine, cand("e2", BASE, 1, **other))
    assert same_text.decision is Decision.ACCEPTED
    assert same_text.reason is DecisionReason.NEW
    assert same_text.memory.memory_id != first.memory.memory_id
    # The search is scoped too: a close text elsewhere finds nothing to merge into.
    [close] = await decide_and_store(
        store, engine, cand("e3", CLOSE, 2, **{"tenant_id": "tenant-z", "namespace": "elsewhere"})
    )
    assert close.decision is Decision.ACCEPTED
    semantic = next(c for c in close.checks if c.name is CheckName.SEMANTIC)
    assert semantic.score is None
    assert await store.count_memories(0, tenant_id="tenant-a", namespace="prefs") == 1
    assert await store.count_memories(0) == 3


async def test_scopes_are_isolated_in_one_batch(
    engine: DedupEngine, embedder: FakeEmbedder
) -> None:
    plan = await engine.decide(
        0,
        [
            cand("e1", BASE, 0),
            cand("e2", BASE, 1, tenant_id="tenant-b"),
            cand("e3", NEAR, 2, namespace="facts"),
            cand("e4", CLOSE, 3, tenant_id="tenant-c"),
        ],
    )
    assert [o.decision for o in plan.outcomes] == [Decision.ACCEPTED] * 4
    assert len(plan.writes) == 4
    # One embedding per distinct text, in one call.
    assert len(embedder.calls) == 1
    assert sorted(embedder.calls[0]) == sorted({o.candidate.normalized for o in plan.outcomes})


async def test_commit_fills_recent_cache(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    recent = RecentCache(ttl_s=300, max_entries=100)
    engine = make_engine(recent=recent)
    candidate = cand("e1", BASE)
    plan = await engine.decide(5, [candidate])
    assert len(recent) == 0
    await store.write(5, list(plan.writes.values()), [])
    assert len(recent) == 0
    engine.commit(plan)
    entry = recent.get(candidate.scoped_hash)
    assert entry is not None
    assert entry.memory_id == candidate.memory_id
    assert entry.partition == 5
    assert engine.recent is recent


async def test_uncommitted_plan_is_invisible_to_next_batch(
    engine: DedupEngine, embedder: FakeEmbedder
) -> None:
    """A failed attempt (nothing stored, nothing committed) must not turn its own
    retry into a skip."""
    await engine.decide(0, [cand("e1", BASE)])
    assert len(engine.recent) == 0
    [retry] = (await engine.decide(0, [cand("e1", BASE)])).outcomes
    assert retry.decision is Decision.ACCEPTED
    assert len(embedder.calls) == 2


async def test_recent_cache_catches_text_merged_earlier(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    """A merged text has no point of its own; its repeat is caught by the cache."""
    await decide_and_store(store, engine, cand("e1", BASE))
    [merged] = await decide_and_store(store, engine, cand("e2", CLOSE, 1))
    assert merged.decision is Decision.MERGED
    calls = len(embedder.calls)
    [again] = await decide_and_store(store, engine, cand("e3", CLOSE + "!", 2))
    assert (again.decision, again.reason) == (Decision.SKIPPED, DecisionReason.RECENT)
    assert again.memory.memory_id == merged.memory.memory_id
    assert len(embedder.calls) == calls


async def test_per_namespace_bands(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    strict = Bands(duplicate_threshold=0.99, merge_threshold=0.97)
    loose = Bands(duplicate_threshold=0.8, merge_threshold=0.4)
    engine = make_engine(
        policy=ThresholdPolicy(
            default=DEFAULT_BANDS, per_namespace={"facts": strict, "notes": loose}
        )
    )
    # Duplicate band, decided inside one batch.
    outcomes: dict[str, Outcome] = {}
    for offset, namespace in enumerate(("prefs", "facts", "notes")):
        _, outcomes[namespace] = await decide_and_store(
            store,
            engine,
            cand(f"{namespace}-1", BASE, 2 * offset, namespace=namespace),
            cand(f"{namespace}-2", NEAR, 2 * offset + 1, namespace=namespace),
        )
    assert outcomes["prefs"].decision is Decision.SKIPPED
    assert outcomes["prefs"].threshold == 0.9
    assert outcomes["facts"].decision is Decision.ACCEPTED
    assert outcomes["facts"].threshold is None
    assert outcomes["notes"].decision is Decision.SKIPPED
    assert outcomes["notes"].threshold == 0.8

    # Merge band, against stored memories.
    [far_prefs] = await decide_and_store(store, engine, cand("prefs-3", FAR, 10))
    assert far_prefs.decision is Decision.ACCEPTED
    [far_notes] = await decide_and_store(store, engine, cand("notes-3", FAR, 11, namespace="notes"))
    assert far_notes.decision is Decision.MERGED
    assert far_notes.threshold == 0.4
    [close_facts] = await decide_and_store(
        store, engine, cand("facts-3", CLOSE, 12, namespace="facts")
    )
    assert close_facts.decision is Decision.ACCEPTED


async def test_partitions_are_separate_shards(engine: DedupEngine, store: MemoryStore) -> None:
    await decide_and_store(store, engine, cand("e1", BASE), partition=0)
    assert await store.count_memories(0) == 1
    assert await store.count_memories(1) == 0


async def test_guard_veto_falls_through_to_the_next_match(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    # Stored: a 9am flight (closest) and a paraphrase of the new fact (further).
    embedder.set("Flight leaves at 9am", base_vector())
    embedder.set("The flight departs at 9pm", unit_vector(0.90, axis=3))
    embedder.set("Flight leaves at 9pm", unit_vector(0.97, axis=4))
    await decide_and_store(store, engine, cand("f1", "Flight leaves at 9am"))
    await decide_and_store(store, engine, cand("f2", "The flight departs at 9pm", 1))
    [outcome] = await decide_and_store(store, engine, cand("f3", "Flight leaves at 9pm", 2))
    # 9am is vetoed (numbers); the 9pm paraphrase (cosine ~0.87) is in the merge band.
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.content == "The flight departs at 9pm"
    assert outcome.guard is not None
    assert outcome.guard.veto.guard.value == "numbers"


async def test_guard_veto_alone_accepts_with_the_guard_recorded(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    embedder.set("Alice loves Bob", base_vector())
    embedder.set("Bob loves Alice", unit_vector(0.98, axis=5))
    [first] = await decide_and_store(store, engine, cand("r1", "Alice loves Bob"))
    [outcome] = await decide_and_store(store, engine, cand("r2", "Bob loves Alice", 1))
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.reason is DecisionReason.NEW
    assert outcome.guard is not None
    assert outcome.guard.veto.guard.value == "word_order"
    assert outcome.guard.memory_id == first.memory.memory_id
    assert outcome.guard.similarity > 0.97


async def test_guards_can_be_switched_off(
    make_engine: EngineFactory, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    engine = make_engine(guards=False)
    embedder.set("Alice loves Bob", base_vector())
    embedder.set("Bob loves Alice", unit_vector(0.98, axis=5))
    await decide_and_store(store, engine, cand("r1", "Alice loves Bob"))
    [outcome] = await decide_and_store(store, engine, cand("r2", "Bob loves Alice", 1))
    assert outcome.decision is Decision.SKIPPED
    assert outcome.guard is None


def test_memory_copy_is_a_shallow_copy_of_every_field() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    memory = MemoryRecord(
        memory_id="m",
        tenant_id="t",
        namespace="n",
        content="c",
        content_hash="h",
        importance=0.7,
        topics=["a"],
        entities=["b"],
        merged_event_ids=["e2"],
        origin_event_id="e1",
        created_at=now,
        updated_at=now + timedelta(seconds=1),
        vector=[0.5, 0.5],
        merged_from=[MergeSource("e2", "m2")],
        supersedes=["h0"],
        seen_count=3,
        first_seen_at=now - timedelta(days=1),
        last_seen_at=now + timedelta(seconds=2),
    )
    # Every field set to a non-default value: a field the copy forgot would differ.
    assert all(getattr(memory, f.name) != f.default for f in fields(MemoryRecord))
    copied = memory.copy()
    assert copied == replace(memory)
    assert copied is not memory
    assert copied.topics is memory.topics  # shallow, as replace() is


async def test_a_lookahead_that_matches_is_used_instead_of_a_second_model_call(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    await decide_and_store(store, engine, cand("s1", "User plays the cello"))
    batch = [
        cand("a1", "User plays the cello.", 1),  # exact: no model
        cand("a2", "User keeps two cats", 2),
        cand("a3", "User keeps two cats!", 3),  # same text as a2: embedded once
        cand("a4", "User is allergic to peanuts", 4),
    ]
    embedder.calls.clear()
    [(_, ahead)] = await engine.look_ahead(0, batch)
    assert ahead.texts == ["user keeps two cats", "user is allergic to peanuts"]
    plan = await engine.decide(0, batch, ahead)
    assert embedder.calls == [["user keeps two cats", "user is allergic to peanuts"]]
    assert [(o.decision, o.reason) for o in plan.outcomes] == [
        (Decision.SKIPPED, DecisionReason.EXACT),
        (Decision.ACCEPTED, DecisionReason.NEW),
        (Decision.SKIPPED, DecisionReason.EXACT),
        (Decision.ACCEPTED, DecisionReason.NEW),
    ]


async def test_lookahead_segments_count_only_texts_the_model_embeds(
    engine: DedupEngine, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    await decide_and_store(store, engine, cand("s1", "User plays the cello"))
    batch = [
        cand("a1", "User keeps two cats", 1),
        cand("a2", "User plays the cello.", 2),  # stored: does not count
        cand("a3", "User is allergic to peanuts", 3),
        cand("a4", "User keeps two cats!", 4),  # a1's text: does not count
        cand("a5", "User lives near the sea", 5),
    ]
    embedder.calls.clear()
    (first, first_ahead), (second, second_ahead) = await engine.look_ahead(
        0, batch, texts_per_segment=2
    )
    assert [c.event.event_id for c in first] == ["a1", "a2", "a3", "a4"]
    assert [c.event.event_id for c in second] == ["a5"]
    assert first_ahead.texts == ["user keeps two cats", "user is allergic to peanuts"]
    assert second_ahead.texts == ["user lives near the sea"]
    # One model call per segment, in order; the later segment reads again.
    second_vectors = await second_ahead.vectors_for(second_ahead.texts)
    assert second_vectors is not None
    assert len(second_vectors) == 1
    assert embedder.calls == [first_ahead.texts, second_ahead.texts]
    assert first_ahead.memory_ids
    assert not second_ahead.memory_ids
    first_ahead.close()


async def test_a_lookahead_that_no_longer_matches_is_dropped(
    make_engine: EngineFactory, embedder: FakeEmbedder, store: MemoryStore
) -> None:
    recent = RecentCache(ttl_s=300, max_entries=1)
    engine = make_engine(recent=recent)
    embedder.set("User rides a red bike", base_vector())
    embedder.set("User rides a bright red bike", unit_vector(0.85, axis=2))
    [kept] = await decide_and_store(store, engine, cand("b0", "User rides a red bike"))
    [merged] = await decide_and_store(store, engine, cand("b1", "User rides a bright red bike", 1))
    assert merged.decision is Decision.MERGED  # its text has no point of its own
    batch = [
        cand("b2", "User rides a bright red bike", 2),  # recent, when looked ahead
        cand("b3", "User lives near the sea", 3),
    ]
    [(_, ahead)] = await engine.look_ahead(0, batch)
    assert ahead.texts == ["user lives near the sea"]
    # Meanwhile another partition's commit evicts the recent entry (capacity 1).
    recent.put(("tenant-b", "prefs", "f" * 64), "elsewhere", 1)
    embedder.calls.clear()
    plan = await engine.decide(0, batch, ahead)
    # Deciding now needs both texts: embedded together, not taken from the lookahead.
    assert embedder.calls == [["user rides a bright red bike", "user lives near the sea"]]
    again, accepted = plan.outcomes
    assert (again.decision, again.reason) == (Decision.MERGED, DecisionReason.SEMANTIC)
    assert again.memory.memory_id == kept.memory.memory_id
    assert accepted.decision is Decision.ACCEPTED
    assert accepted.memory.vector is not None


def test_batch_state_reuses_model_rows_and_never_mistakes_another_list() -> None:
    import numpy as np

    from consumer.domain.batch import BatchState
    from consumer.domain.models import BatchPlan

    state = BatchState(plan=BatchPlan(partition=0), stored={}, vectors={}, neighbours={})
    row = np.array([0.6, 0.8], dtype=np.float32)
    vector = state.keep_vector("a text", row)
    assert vector == row.tolist()
    assert state.vectors["a text"] is vector
    assert np.array_equal(state.array_of(vector), row)
    # An equal list of its own (say, read from the store) gets an array of its own.
    other = list(vector)
    assert state.array_of(other) is not state.array_of(vector)
    assert np.array_equal(state.array_of(other), row)
    # A cached id whose list is not the one asked about is not trusted.
    state.arrays[id(other)] = ([9.0, 9.0], np.array([9.0, 9.0], dtype=np.float32))
    assert np.array_equal(state.array_of(other), row)
