"""Planning shared by `memdedup compact` and the consumer's periodic compaction:
the stored state of scopes, what keeps two memories apart, and the commands
that fold each cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from consumer.compaction.clusters import PairVeto, ScopeAnalysis
from consumer.domain.guards import check_pair
from consumer.domain.models import MemoryRecord, Scope
from consumer.domain.reviewed import ReviewedPairs
from consumer.domain.verifier import LlmVerifier, LocalVerifier, PairJudge
from consumer.ports import MemoryStore
from consumer.state import codec
from schemas import SCHEMA_VERSION, CompactCommand, CompactionMember, MemoryCommand


@dataclass(slots=True)
class StoredState:
    """Memories (with vectors) and reviewed pairs, per scope."""

    memories: dict[Scope, list[MemoryRecord]] = field(default_factory=dict)
    reviewed_pairs: ReviewedPairs = field(default_factory=ReviewedPairs)


def collect_points(
    state: StoredState, points: Sequence[codec.RawPoint], tenant: str | None, namespace: str | None
) -> None:
    """`points` in the order they were written: a changelog's seen update applies to
    the memory written before it (a store's payloads carry theirs already)."""
    folded: dict[str, dict[str, Any]] = {}
    for point in points:
        if point.payload.get(codec.KIND_FIELD) != codec.SEEN_KIND:
            folded[point.point_id] = point.payload
            continue
        memory_id, fields = codec.seen_update(point.payload)
        if memory_id in folded:
            folded[memory_id] = codec.fold_seen(folded[memory_id], fields)
    for point in points:
        payload = folded.get(point.point_id, point.payload)
        kind = payload.get(codec.KIND_FIELD)
        scope = Scope(str(payload.get(codec.TENANT_FIELD)), str(payload.get(codec.NAMESPACE_FIELD)))
        if (tenant is not None and scope.tenant_id != tenant) or (
            namespace is not None and scope.namespace != namespace
        ):
            continue
        if kind in (codec.MEMORY_KIND, codec.PENDING_KIND):
            vector = point.vector if kind == codec.MEMORY_KIND else None
            memory = codec.memory_from_payload(point.point_id, payload, vector)
            state.memories.setdefault(scope, []).append(memory)
        elif kind == codec.REVIEWED_PAIR_KIND:
            _, _, first, second = codec.reviewed_pair_of(payload)
            state.reviewed_pairs.add(scope, first, second)


async def state_from_store(
    store: MemoryStore,
    partitions: Sequence[int],
    *,
    tenant: str | None = None,
    namespace: str | None = None,
) -> StoredState:
    """Memories (embedded or not) and reviewed pairs read from a store."""
    state = StoredState()
    for partition in partitions:
        for kind in (codec.MEMORY_KIND, codec.PENDING_KIND, codec.REVIEWED_PAIR_KIND):
            points = await store.points_of_kind(
                partition,
                kind,
                tenant_id=tenant,
                namespace=namespace,
                with_vectors=kind == codec.MEMORY_KIND,
            )
            collect_points(state, points, tenant, namespace)
    return state


def local_judge(verifier: object) -> PairJudge | None:
    """The verifier compaction asks: the local one (an LLM verifier's fallback), as
    a scan compares far more pairs than the consumer sends an LLM."""
    if isinstance(verifier, LlmVerifier):
        return verifier.fallback
    return verifier if isinstance(verifier, LocalVerifier) else None


def pair_veto_for(state: StoredState, *, guards: bool, judge: PairJudge | None = None) -> PairVeto:
    """What keeps two memories apart: a reviewer separated them, a guard fires,
    or the verifier judges them different facts (as in the consumer)."""

    def veto(first: MemoryRecord, second: MemoryRecord) -> str | None:
        if state.reviewed_pairs.separated(first.scope, first.content_hash, second.content_hash):
            return "reviewed_pair"
        if guards:
            found = check_pair(first.content, second.content)
            if found is not None:
                return found.guard.value
        if judge is not None and first.vector is not None and second.vector is not None:
            similarity = float(
                np.dot(np.asarray(first.vector, np.float32), np.asarray(second.vector, np.float32))
            )
            if not judge.judge(first.content, second.content, similarity).same_fact:
                return "verifier"
        return None

    return veto


def commands_for(analyses: Sequence[ScopeAnalysis], run_id: str) -> list[MemoryCommand]:
    now = datetime.now(UTC)
    commands = []
    for analysis in analyses:
        for index, cluster in enumerate(analysis.clusters):
            commands.append(
                MemoryCommand(
                    schema_version=SCHEMA_VERSION,
                    command_id=f"compact-{run_id}-{analysis.tenant_id}-{analysis.namespace}-{index}",
                    tenant_id=analysis.tenant_id,
                    namespace=analysis.namespace,
                    issued_at=now,
                    command=CompactCommand(
                        run_id=run_id,
                        keeper_id=cluster.keeper_id,
                        keeper_hash=cluster.keeper_hash,
                        text_source_id=cluster.text_source_id,
                        members=[
                            CompactionMember(
                                memory_id=m.memory_id,
                                content_hash=m.content_hash,
                                similarity=m.similarity_to_keeper,
                                decision="skipped" if m.decision.value == "skipped" else "merged",
                            )
                            for m in cluster.members
                        ],
                    ),
                )
            )
    return commands
