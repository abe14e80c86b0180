"""What keeps two memories apart in compaction: reviewers, guards, the verifier."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consumer.compaction.plan import StoredState, local_judge, pair_veto_for
from consumer.domain.models import MemoryRecord
from consumer.domain.normalize import content_hash, normalize_content
from consumer.domain.verifier import LocalVerifier, Verdict

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def memory(text: str, vector: list[float]) -> MemoryRecord:
    return MemoryRecord(
        memory_id=text,
        tenant_id="t",
        namespace="n",
        content=text,
        content_hash=content_hash(normalize_content(text)),
        importance=0.5,
        topics=[],
        entities=[],
        merged_event_ids=[],
        origin_event_id=text,
        created_at=NOW,
        updated_at=NOW,
        vector=vector,
    )


class RecordingJudge:
    def __init__(self, same: bool) -> None:
        self.same = same
        self.calls: list[tuple[str, str, float]] = []

    def judge(self, existing: str, new: str, similarity: float) -> Verdict:
        self.calls.append((existing, new, similarity))
        return Verdict(self.same, None, "test", "")


def test_reviewed_pairs_come_first_then_guards_then_the_verifier() -> None:
    a = memory("User lives in Paris", [1.0, 0.0])
    b = memory("The user lives in Paris", [0.8, 0.6])
    c = memory("User's flight is at 9am", [1.0, 0.0])
    d = memory("User's flight is at 9pm", [1.0, 0.0])
    state = StoredState()
    agree, disagree = RecordingJudge(same=True), RecordingJudge(same=False)
    assert pair_veto_for(state, guards=True, judge=agree)(a, b) is None
    ((existing, new, similarity),) = agree.calls
    assert (existing, new) == ("User lives in Paris", "The user lives in Paris")
    assert similarity == pytest.approx(0.8)
    assert pair_veto_for(state, guards=True, judge=disagree)(a, b) == "verifier"
    assert pair_veto_for(state, guards=True, judge=disagree)(c, d) == "numbers"
    assert pair_veto_for(state, guards=False, judge=None)(c, d) is None
    state.reviewed_pairs.add(a.scope, a.content_hash, b.content_hash)
    assert pair_veto_for(state, guards=True, judge=agree)(b, a) == "reviewed_pair"


def test_compaction_asks_the_local_verifier_never_an_llm() -> None:
    from consumer.domain.verifier import LlmVerifier

    local = LocalVerifier.load()
    llm = LlmVerifier(base_url="http://127.0.0.1:9", model="m", fallback=local)
    assert local_judge(llm) is local
    assert local_judge(local) is local
    assert local_judge(None) is None


def test_a_changelogs_seen_updates_apply_to_the_memory_written_before_them() -> None:
    from dataclasses import replace

    from consumer.compaction.plan import collect_points
    from consumer.state import codec

    from .test_edge_storage import memory

    stored = memory(seen_count=1)
    seen = replace(stored, seen_count=2, last_seen_at=datetime(2026, 3, 1, tzinfo=UTC))
    lowered = replace(stored, seen_count=1, updated_at=datetime(2026, 4, 1, tzinfo=UTC))

    def collected(*points: codec.RawPoint) -> list[MemoryRecord]:
        state = StoredState()
        collect_points(state, points, None, None)
        return [m for ms in state.memories.values() for m in ms]

    dimension = len(stored.vector or [])
    written, update = codec.memory_point(stored, dimension), codec.seen_point(seen)
    assert collected(written, update) == [seen]
    # A whole write after the update (a reversed skip) carries its own count.
    assert collected(update, codec.memory_point(lowered, dimension)) == [lowered]
    # An update of a memory not among the points changes nothing.
    assert collected(update) == []
