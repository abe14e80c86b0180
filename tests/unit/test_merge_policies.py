"""Merge policies and lineage: DedupEngine against the in-memory store with a fake
embedder, and the HTTP merger against a server on loopback."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consumer.app.factory import threshold_policy
from consumer.domain import merge
from consumer.domain.dedup import DedupEngine
from consumer.domain.merge import (
    FOLDED_CHARS_LIMIT,
    FOLDED_TEXTS_LIMIT,
    LINEAGE_LIMIT,
    HttpMerger,
    MergeFailed,
    MergeText,
    TextChoice,
    build_merger,
    fold,
    seen_again,
    text_event_id,
)
from consumer.domain.models import Candidate, FoldedText, MemoryRecord, MergeSource, Outcome
from consumer.domain.normalize import content_hash, normalize_content
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.ports import MemoryStore
from consumer.service.decisions import build_decision_event
from consumer.settings import ConfigError, load_settings
from consumer.state import codec
from schemas import Decision, MergePolicy
from schemas.events import MAX_ENTITIES, MAX_TOPICS
from tests.chat_server import Completions, chat_completions_server

from .conftest import EngineFactory
from .helpers import (
    FIXED_NOW,
    FakeEmbedder,
    base_vector,
    make_candidate,
    stored_memory,
    unit_vector,
)

BASE = "The user prefers dark mode"
NEAR = "User likes dark themes"  # 0.95 with BASE: duplicate band
CLOSE = "The user prefers a dark theme in the editor"  # 0.85: merge band
CLOSE_2 = "Dark mode is what the user prefers in every app"  # 0.82: merge band
CLOSE_3 = "The user picks dark colours for the terminal"  # 0.84 where set: merge band


@pytest.fixture
def vectors(embedder: FakeEmbedder) -> FakeEmbedder:
    embedder.set(BASE, base_vector())
    embedder.set(NEAR, unit_vector(0.95, axis=1))
    embedder.set(CLOSE, unit_vector(0.85, axis=2))
    embedder.set(CLOSE_2, unit_vector(0.82, axis=3))
    return embedder


def engine_with(make_engine: EngineFactory, policy: MergePolicy, **kwargs: Any) -> DedupEngine:
    bands = Bands(duplicate_threshold=0.90, merge_threshold=0.80, merge_policy=policy)
    return make_engine(policy=ThresholdPolicy(default=bands), **kwargs)


def cand(event_id: str, content: str, offset: int = 0, **extra: Any) -> Candidate:
    return make_candidate(event_id=event_id, content=content, offset=offset, **extra)


async def run(store: MemoryStore, engine: DedupEngine, *candidates: Candidate) -> list[Outcome]:
    plan = await engine.decide(0, list(candidates))
    await store.write(0, list(plan.writes.values()), [])
    engine.commit(plan)
    return plan.outcomes


async def stored(store: MemoryStore, memory_id: str) -> MemoryRecord:
    return (await store.get_memories(0, [memory_id]))[memory_id]


# keep_existing (the default) ------------------------------------------------------


async def test_keep_existing_keeps_text_and_records_lineage(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    engine = make_engine()  # default bands: keep_existing
    [first] = await run(store, engine, cand("e1", BASE, importance=0.3, topics=["ui"]))
    assert first.memory.seen_count == 1
    assert first.memory.first_seen_at == first.memory.last_seen_at == FIXED_NOW
    second = cand("e2", CLOSE, 1, importance=0.7, topics=["editor"])
    [merged] = await run(store, engine, second)
    assert merged.decision is Decision.MERGED
    assert merged.merge_policy == "keep_existing"
    assert merged.merge_fallback is None
    memory = merged.memory
    assert memory.memory_id == first.memory.memory_id
    assert memory.content == BASE
    assert memory.content_hash == first.memory.content_hash
    assert memory.importance == 0.7
    assert memory.topics == ["ui", "editor"]
    assert memory.merged_event_ids == ["e2"]
    assert memory.merged_from == [MergeSource("e2", second.memory_id)]
    assert memory.supersedes == []
    assert memory.folded_texts == [FoldedText("e2", CLOSE)]
    assert memory.seen_count == 2
    reloaded = await stored(store, memory.memory_id)
    assert reloaded.merged_from == memory.merged_from
    assert reloaded.folded_texts == memory.folded_texts
    assert build_decision_event(merged, "m").memory.folded_texts[0].content == CLOSE
    assert reloaded.seen_count == 2
    assert reloaded.vector is not None


# replace_with_newer -----------------------------------------------------------------


async def test_replace_with_newer_keeps_id_and_stores_new_text_and_hash(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    engine = engine_with(make_engine, "replace_with_newer")
    [first] = await run(store, engine, cand("e1", BASE))
    newer = cand("e2", CLOSE + ".", 1)
    [merged] = await run(store, engine, newer)
    memory = merged.memory
    assert merged.decision is Decision.MERGED
    assert merged.merge_policy == "replace_with_newer"
    assert memory.memory_id == first.memory.memory_id
    assert memory.content == CLOSE + "."
    assert memory.content_hash == newer.content_hash
    assert memory.supersedes == [first.memory.content_hash]
    # The replaced text is kept; the new one is the memory's text, not a folded one.
    assert memory.folded_texts == [FoldedText("e1", BASE)]
    assert memory.vector is not None
    assert float(np.dot(memory.vector, unit_vector(0.85, axis=2))) == pytest.approx(1.0, abs=1e-5)
    reloaded = await stored(store, memory.memory_id)
    assert (reloaded.content, reloaded.content_hash) == (memory.content, memory.content_hash)

    # A fresh consumer (no recent cache): the new text has no point of its own,
    # so its repeat is found by the semantic check; the old text by exact id.
    fresh = engine_with(make_engine, "replace_with_newer")
    again, old = await run(store, fresh, cand("e3", CLOSE, 2), cand("e4", BASE, 3))
    assert (again.decision, again.reason.value) == (Decision.SKIPPED, "semantic")
    assert again.memory.memory_id == first.memory.memory_id
    assert (old.decision, old.reason.value) == (Decision.SKIPPED, "exact")
    assert old.memory.content == CLOSE + "."
    assert (await stored(store, memory.memory_id)).seen_count == 4


async def test_replaced_vector_is_the_one_later_events_of_the_batch_meet(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    """In one batch: a memory accepted, then merged into with a newer text (its
    vector becomes that text's), then a third text with the newer text's vector:
    the third is measured against the memory as it now stands."""
    engine = engine_with(make_engine, "replace_with_newer")
    twin = "User wants a dark editor theme"
    vectors.set(twin, unit_vector(0.85, axis=2))  # CLOSE's vector: 0.85 with BASE
    first, merged, third = await run(
        store, engine, cand("e1", BASE), cand("e2", CLOSE, 1), cand("e3", twin, 2)
    )
    assert first.decision is Decision.ACCEPTED
    assert merged.decision is Decision.MERGED
    assert merged.memory.memory_id == first.memory.memory_id
    assert (third.decision, third.reason.value) == (Decision.SKIPPED, "semantic")
    assert third.memory.memory_id == first.memory.memory_id
    assert third.similarity == pytest.approx(1.0, abs=1e-5)


# keep_higher_importance ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("older", "newer", "expected"),
    [(0.4, 0.9, CLOSE), (0.9, 0.4, BASE), (0.5, 0.5, f"{BASE}; {CLOSE}")],
    ids=["newer-higher", "older-higher", "equal-combines"],
)
async def test_keep_higher_importance(
    make_engine: EngineFactory,
    vectors: FakeEmbedder,
    store: MemoryStore,
    older: float,
    newer: float,
    expected: str,
) -> None:
    engine = engine_with(make_engine, "keep_higher_importance")
    [first] = await run(store, engine, cand("e1", BASE, importance=older, topics=["a"]))
    [merged] = await run(store, engine, cand("e2", CLOSE, 1, importance=newer, topics=["b"]))
    memory = merged.memory
    assert merged.merge_policy == "keep_higher_importance"
    assert memory.memory_id == first.memory.memory_id
    assert memory.content == expected
    assert memory.content_hash == content_hash(normalize_content(expected))
    assert memory.importance == max(older, newer)
    assert memory.topics == ["a", "b"]
    assert memory.last_seen_at == FIXED_NOW
    assert memory.supersedes == ([] if expected == BASE else [first.memory.content_hash])
    # Whatever text is kept, neither text is lost.
    assert memory.folded_texts == {
        CLOSE: [FoldedText("e1", BASE)],
        BASE: [FoldedText("e2", CLOSE)],
    }.get(expected, [FoldedText("e1", BASE), FoldedText("e2", CLOSE)])
    if expected.startswith(f"{BASE};"):
        # The combined text was embedded: its vector is its own.
        assert normalize_content(expected) in vectors.texts_embedded
        assert memory.vector != first.memory.vector


async def test_keep_higher_importance_does_not_repeat_a_contained_text(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    long_text = f"{CLOSE}, and {BASE.lower()}"
    vectors.set(long_text, base_vector())
    vectors.set(BASE, unit_vector(0.85, axis=4))
    engine = engine_with(make_engine, "keep_higher_importance")
    await run(store, engine, cand("e1", long_text))
    [merged] = await run(store, engine, cand("e2", BASE, 1))
    assert merged.decision is Decision.MERGED
    assert merged.memory.content == long_text


# synthesize -----------------------------------------------------------------------


@dataclass
class FakeMerger:
    result: str | None = None
    calls: list[tuple[MergeText, MergeText]] = field(default_factory=list)

    async def merge(self, older: MergeText, newer: MergeText) -> str:
        self.calls.append((older, newer))
        if self.result is None:
            raise MergeFailed("down")
        return self.result


async def test_synthesize_uses_the_merger_text_and_embeds_it(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    merger = FakeMerger("The user prefers dark mode, including a dark editor theme")
    engine = engine_with(make_engine, "synthesize", merger=merger)
    [first] = await run(store, engine, cand("e1", BASE))
    [merged] = await run(store, engine, cand("e2", CLOSE, 1))
    [(older, newer)] = merger.calls
    assert (older.content, newer.content) == (BASE, CLOSE)
    assert merged.merge_policy == "synthesize"
    assert merged.merge_fallback is None
    assert merged.memory.content == merger.result
    assert merged.memory.supersedes == [first.memory.content_hash]
    assert merged.memory.folded_texts == [FoldedText("e1", BASE), FoldedText("e2", CLOSE)]
    assert normalize_content(merger.result or "") in vectors.texts_embedded


@pytest.mark.parametrize("configured", [True, False], ids=["merger-fails", "no-merger"])
async def test_synthesize_falls_back_to_replace_with_newer(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore, configured: bool
) -> None:
    engine = engine_with(make_engine, "synthesize", merger=FakeMerger() if configured else None)
    await run(store, engine, cand("e1", BASE))
    [merged] = await run(store, engine, cand("e2", CLOSE, 1))
    assert merged.decision is Decision.MERGED
    assert merged.merge_policy == "synthesize"
    assert merged.merge_fallback == "replace_with_newer"
    assert merged.memory.content == CLOSE
    event = build_decision_event(merged, "m")
    assert (event.merge_policy, event.merge_fallback) == ("synthesize", "replace_with_newer")


# Skips bump the counters ---------------------------------------------------------------


async def test_skips_bump_seen_count_of_the_matched_memory(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    engine = make_engine()
    [first] = await run(store, engine, cand("e1", BASE))
    # exact, recent (same text again in the batch) and semantic skips in one batch
    outcomes = await run(
        store, engine, cand("e2", BASE + ".", 1), cand("e3", BASE, 2), cand("e4", NEAR, 3)
    )
    assert [o.decision for o in outcomes] == [Decision.SKIPPED] * 3
    assert [o.reason.value for o in outcomes] == ["exact", "exact", "semantic"]
    assert [o.memory.seen_count for o in outcomes] == [2, 3, 4]
    memory = await stored(store, first.memory.memory_id)
    assert memory.seen_count == 4
    assert memory.content == BASE
    assert memory.merged_event_ids == []
    # A skip's text is word for word the memory's: no text is recorded.
    assert memory.folded_texts == []
    # recent: a repeat of a merged text whose hash has no point of its own
    [merged] = await run(store, engine, cand("e5", CLOSE, 4))
    assert merged.memory.seen_count == 5
    [recent] = await run(store, engine, cand("e6", CLOSE, 5))
    assert recent.reason.value == "recent"
    assert recent.memory.seen_count == 6
    assert (await stored(store, first.memory.memory_id)).seen_count == 6
    event = build_decision_event(recent, "m")
    assert event.memory.seen_count == 6
    assert event.memory.merged_from[0].event_id == "e5"
    assert event.memory.first_seen_at == FIXED_NOW


def test_payloads_without_lineage_still_load() -> None:
    now = FIXED_NOW.isoformat()
    payload = {
        "kind": "memory",
        "tenant_id": "t",
        "namespace": "n",
        "content_hash": "h",
        "content": "c",
        "importance": 0.5,
        "topics": [],
        "entities": [],
        "merged_event_ids": ["a", "b"],
        "origin_event_id": "e",
        "created_at": now,
        "updated_at": now,
    }
    memory = codec.memory_from_payload("m", payload, [1.0])
    assert memory.seen_count == 3
    assert memory.merged_from == []
    assert memory.supersedes == []
    assert memory.folded_texts == []
    assert memory.first_seen_at == memory.last_seen_at == FIXED_NOW
    round_trip = codec.memory_from_payload("m", codec.memory_payload(memory), [1.0])
    assert round_trip == memory


def test_folded_texts_round_trip_through_the_payload() -> None:
    memory = fold(base_memory(), make_candidate(event_id="e1", content=f" {CLOSE} "), FIXED_NOW)
    payload = codec.memory_payload(memory)
    assert payload["folded_texts"] == [{"event_id": "e1", "content": CLOSE}]
    point = codec.memory_point(memory, 4)
    again = codec.RawPoint.from_bytes(point.to_bytes())
    loaded = codec.memory_from_payload(memory.memory_id, again.payload, memory.vector)
    assert loaded.folded_texts == [FoldedText("e1", CLOSE)]


# Settings -------------------------------------------------------------------------------


def test_merge_policy_per_namespace_from_settings() -> None:
    settings = load_settings(
        dedup={
            "merge_policy": "replace_with_newer",
            "namespaces": {"notes": {"merge_policy": "keep_higher_importance"}},
        }
    )
    policy = threshold_policy(settings)
    assert policy.bands_for("other").merge_policy == "replace_with_newer"
    assert policy.bands_for("notes").merge_policy == "keep_higher_importance"
    assert build_merger(settings.dedup) is None
    assert load_settings().dedup.merge_policy == "keep_existing"


def test_synthesize_needs_a_merger_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"merger\.base_url"):
        load_settings(dedup={"namespaces": {"notes": {"merge_policy": "synthesize"}}})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = load_settings(
        dedup={
            "namespaces": {"notes": {"merge_policy": "synthesize"}},
            "merger": {"base_url": "http://127.0.0.1:9/v1"},
        }
    )
    assert isinstance(build_merger(settings.dedup), HttpMerger)
    with pytest.raises(ConfigError, match="merge_policy"):
        load_settings(dedup={"merge_policy": "newest"})


# The HTTP merger against a server on loopback ------------------------------------------


@pytest.fixture
def completions() -> Iterator[tuple[Completions, str]]:
    with chat_completions_server("merged text") as served:
        yield served


OLDER = MergeText("Lives in Paris", FIXED_NOW)
NEWER = MergeText("Home in Paris, France", FIXED_NOW)


async def test_http_merger_sends_the_prompt_and_returns_the_text(
    completions: tuple[Completions, str],
) -> None:
    state, url = completions
    state.text = "  Lives in Paris, France\n"
    merger = HttpMerger(base_url=url, model="tiny", api_key="sk-1", timeout_s=5)
    assert await merger.merge(OLDER, NEWER) == "Lives in Paris, France"
    [(path, headers, body)] = state.requests
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-1"
    assert body["model"] == "tiny"
    prompt = body["messages"][0]["content"]
    assert "prefer the NEWER memory" in prompt
    assert "OLDER memory" in prompt
    assert "Lives in Paris" in prompt
    assert prompt.index("Lives in Paris") < prompt.index("Home in Paris, France")


@pytest.mark.parametrize(
    ("status", "text", "delay_s"),
    [(500, "x", 0.0), (200, "   ", 0.0), (200, None, 0.0), (200, "late", 1.0)],
    ids=["server-error", "empty", "no-text", "timeout"],
)
async def test_http_merger_failures_raise_merge_failed(
    completions: tuple[Completions, str], status: int, text: str | None, delay_s: float
) -> None:
    state, url = completions
    state.status, state.text, state.delay_s = status, text, delay_s
    merger = HttpMerger(base_url=url, model="tiny", timeout_s=0.3)
    with pytest.raises(MergeFailed):
        await merger.merge(OLDER, NEWER)


async def test_http_merger_unreachable_falls_back_in_the_engine(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore, tmp_path: Path
) -> None:
    merger = HttpMerger(base_url="http://127.0.0.1:9/v1", model="tiny", timeout_s=0.5)
    engine = engine_with(make_engine, "synthesize", merger=merger)
    await run(store, engine, cand("e1", BASE))
    [merged] = await run(store, engine, cand("e2", CLOSE, 1))
    assert merged.merge_fallback == "replace_with_newer"
    assert merged.memory.content == CLOSE


async def test_engine_with_http_merger_uses_the_server_text(
    make_engine: EngineFactory,
    vectors: FakeEmbedder,
    store: MemoryStore,
    completions: tuple[Completions, str],
) -> None:
    state, url = completions
    state.text = "The user prefers dark mode everywhere, editor included"
    engine = engine_with(
        make_engine, "synthesize", merger=HttpMerger(base_url=url, model="tiny", timeout_s=5)
    )
    await run(store, engine, cand("e1", BASE))
    [merged] = await run(store, engine, cand("e2", CLOSE, 1))
    assert merged.merge_fallback is None
    assert merged.memory.content == state.text
    assert len(state.requests) == 1


async def test_only_a_memory_whose_only_change_is_being_seen_again_is_a_seen_update(
    make_engine: EngineFactory, vectors: FakeEmbedder, store: MemoryStore
) -> None:
    engine = make_engine()
    [first] = await run(store, engine, cand("e1", BASE))
    memory_id = first.memory.memory_id

    plan = await engine.decide(0, [cand("e2", BASE + ".", 1), cand("e3", BASE, 2)])
    assert plan.seen_only == {memory_id}
    assert plan.writes[memory_id].seen_count == 3

    # Seen, then merged into within the batch: stored whole.
    plan = await engine.decide(0, [cand("e4", BASE, 3), cand("e5", CLOSE, 4)])
    assert [o.decision for o in plan.outcomes] == [Decision.SKIPPED, Decision.MERGED]
    assert plan.seen_only == set()

    # Accepted, then repeated within the batch: stored whole.
    far = "User's sister lives in Lisbon"
    plan = await engine.decide(0, [cand("e6", far, 5), cand("e7", far, 6)])
    assert [o.decision for o in plan.outcomes] == [Decision.ACCEPTED, Decision.SKIPPED]
    assert plan.seen_only == set()


# lineage limit ----------------------------------------------------------------------


def base_memory() -> MemoryRecord:
    """BASE as a stored memory, before any merge."""
    base = make_candidate(event_id="e0", content=BASE)
    return stored_memory(
        memory_id=base.memory_id,
        content=BASE,
        content_hash=base.content_hash,
        vector=base_vector().tolist(),
        tenant_id=base.event.tenant_id,
        namespace=base.event.namespace,
    )


def fold_many(events: Iterable[Candidate], memory: MemoryRecord) -> MemoryRecord:
    for event in events:
        memory = fold(memory, event, FIXED_NOW)
    return memory


def test_lineage_keeps_the_latest_merges_and_every_merge_costs_the_same() -> None:
    memory = base_memory()
    sizes: dict[int, int] = {}
    merges = LINEAGE_LIMIT * 3
    for number in range(1, merges + 1):
        event = make_candidate(event_id=f"e{number}", content=f"{CLOSE} {number}")
        # Every merge replaces the text: `supersedes` grows with each one too.
        memory = fold(
            memory, event, FIXED_NOW, TextChoice(event.event.content, event.normalized, None)
        )
        sizes[number] = len(codec.memory_point(memory, 4).payload_json())
    assert memory.seen_count == merges + 1
    latest_ids = [f"e{n}" for n in range(merges - LINEAGE_LIMIT + 1, merges + 1)]
    assert memory.merged_event_ids == latest_ids
    assert [s.event_id for s in memory.merged_from] == latest_ids
    assert len(memory.supersedes) == LINEAGE_LIMIT
    assert memory.supersedes[-1] == content_hash(normalize_content(f"{CLOSE} {merges - 1}"))
    # Past the limit a memory (and the decision event carrying it) stops growing.
    assert sizes[merges] - sizes[LINEAGE_LIMIT * 2] < 10


def test_topics_and_entities_keep_the_latest_an_event_may_carry() -> None:
    memory = fold_many(
        (
            make_candidate(
                event_id=f"e{number}",
                content=BASE,
                topics=[f"topic-{number}-{k}" for k in range(MAX_TOPICS)],
                entities=[f"entity-{number}-{k}" for k in range(MAX_ENTITIES)],
            )
            for number in range(1, 4)
        ),
        base_memory(),
    )
    assert memory.topics == [f"topic-3-{k}" for k in range(MAX_TOPICS)]
    assert memory.entities == [f"entity-3-{k}" for k in range(MAX_ENTITIES)]
    # Two new topics push the two oldest out.
    again = fold_many([make_candidate(event_id="e9", content=BASE, topics=["a", "b"])], memory)
    assert again.topics == [*memory.topics[2:], "a", "b"]


async def test_a_memory_merged_past_the_limit_is_stored_with_its_latest_lineage(
    make_engine: EngineFactory,
    vectors: FakeEmbedder,
    store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(merge, "LINEAGE_LIMIT", 2)
    engine = make_engine()
    [first] = await run(store, engine, cand("e1", BASE))
    for offset, (event_id, text) in enumerate([("e2", CLOSE), ("e3", CLOSE_2), ("e4", NEAR)], 1):
        await run(store, engine, cand(event_id, text, offset))
    memory = await stored(store, first.memory.memory_id)
    # Merged (e2, e3), then skipped as a duplicate (e4): seen, not merged.
    assert memory.merged_event_ids == ["e2", "e3"]
    assert memory.seen_count == 4
    vectors.set(CLOSE_3, unit_vector(0.84, axis=5))
    [merged] = await run(store, engine, cand("e5", CLOSE_3, 4))
    assert merged.decision is Decision.MERGED
    memory = await stored(store, first.memory.memory_id)
    assert memory.merged_event_ids == ["e3", "e5"]
    assert [s.event_id for s in memory.merged_from] == ["e3", "e5"]
    assert memory.seen_count == 5
    event = build_decision_event(merged, "model")
    assert event.memory.merged_event_ids == ["e3", "e5"]


# folded texts -------------------------------------------------------------------------


def replacing(candidate: Candidate) -> TextChoice:
    return TextChoice(candidate.event.content, candidate.normalized, None)


def test_every_merge_keeps_the_folded_text_once_and_never_the_memory_text() -> None:
    memory = base_memory()
    memory = fold(memory, make_candidate(event_id="e1", content=CLOSE), FIXED_NOW)
    # The same text again (differently written), and the memory's own text: kept once.
    memory = fold(memory, make_candidate(event_id="e2", content=CLOSE.upper() + "!"), FIXED_NOW)
    memory = fold(memory, make_candidate(event_id="e3", content=BASE.lower()), FIXED_NOW)
    memory = fold(memory, make_candidate(event_id="e4", content=CLOSE_2), FIXED_NOW)
    assert memory.content == BASE
    assert memory.folded_texts == [FoldedText("e1", CLOSE), FoldedText("e4", CLOSE_2)]
    assert memory.merged_event_ids == ["e1", "e2", "e3", "e4"]


def test_a_text_a_merge_replaces_is_kept_with_the_event_it_came_from() -> None:
    memory = base_memory()
    first, second = (
        make_candidate(event_id="e1", content=CLOSE),
        make_candidate(event_id="e2", content=CLOSE_2),
    )
    memory = fold(memory, first, FIXED_NOW, replacing(first))
    assert memory.folded_texts == [FoldedText("e0", BASE)]
    assert text_event_id(memory) == "e1"
    memory = fold(memory, second, FIXED_NOW, replacing(second))
    assert memory.content == CLOSE_2
    assert memory.folded_texts == [FoldedText("e0", BASE), FoldedText("e1", CLOSE)]
    # Back to the first text: it is the memory's text again, no longer a folded one.
    back = make_candidate(event_id="e3", content=BASE)
    memory = fold(memory, back, FIXED_NOW, replacing(back))
    assert memory.content == BASE
    assert text_event_id(memory) == "e0"
    assert memory.folded_texts == [FoldedText("e1", CLOSE), FoldedText("e2", CLOSE_2)]
    # A text a merge wrote (combined, synthesized) is that merge's.
    written = "The user prefers dark mode everywhere"
    memory = fold(
        memory,
        make_candidate(event_id="e4", content=CLOSE_3),
        FIXED_NOW,
        TextChoice(written, normalize_content(written), None),
    )
    assert text_event_id(memory) == "e4"
    assert memory.folded_texts[-2:] == [FoldedText("e0", BASE), FoldedText("e4", CLOSE_3)]


def test_folded_texts_keep_the_latest_within_the_entry_limit() -> None:
    merges = FOLDED_TEXTS_LIMIT + 7
    memory = fold_many(
        (make_candidate(event_id=f"e{n}", content=f"{CLOSE} {n}") for n in range(merges)),
        base_memory(),
    )
    assert [t.event_id for t in memory.folded_texts] == [
        f"e{n}" for n in range(merges - FOLDED_TEXTS_LIMIT, merges)
    ]


def test_folded_texts_keep_the_latest_within_the_character_budget() -> None:
    size = 1000
    texts = [f"{n:03d} " + "x" * (size - 4) for n in range(12)]
    memory = fold_many(
        (make_candidate(event_id=f"e{n}", content=text) for n, text in enumerate(texts)),
        base_memory(),
    )
    fits = FOLDED_CHARS_LIMIT // size
    assert [t.content for t in memory.folded_texts] == texts[-fits:]
    assert sum(len(t.content) for t in memory.folded_texts) <= FOLDED_CHARS_LIMIT
    # A text longer than the budget on its own is still kept (the newest always is).
    # (Events are limited after normalisation: runs of spaces make a longer raw text.)
    long_text = "   ".join(["y"] * (FOLDED_CHARS_LIMIT // 3))
    assert len(long_text) > FOLDED_CHARS_LIMIT
    memory = fold(memory, make_candidate(event_id="e99", content=long_text), FIXED_NOW)
    assert memory.folded_texts == [FoldedText("e99", long_text)]


def test_a_skip_records_no_text() -> None:
    memory = fold(base_memory(), make_candidate(event_id="e1", content=CLOSE), FIXED_NOW)
    seen = seen_again(memory, FIXED_NOW)
    assert seen.folded_texts == [FoldedText("e1", CLOSE)]
    assert seen.seen_count == memory.seen_count + 1
