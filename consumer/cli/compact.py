"""`memdedup compact`: fold duplicate clusters among stored memories.

Planning reads the stored memories without touching them: from the changelog
topic for the embedded store (shards belong to the consumers that own their
partitions, and the changelog holds every point a shard holds, vectors included)
or from the Qdrant server. Each cluster found (consumer.compaction) becomes a
command on the input topic, which the consumer that owns the scope applies in
order with the scope's events, only if no member changed since it was planned
(consumer.service.command_processor). `--dry-run` stops after planning and writes a report.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from consumer.app.factory import build_store, threshold_policy
from consumer.cli.auditlog import send_commands
from consumer.compaction import Progress, ScopeAnalysis, analyse_scope, write_reports
from consumer.compaction.plan import (
    StoredState,
    collect_points,
    commands_for,
    local_judge,
    pair_veto_for,
    state_from_store,
)
from consumer.domain.verifier import build_verifier
from consumer.kafka.topic_reader import read_all
from consumer.ports import MemoryStore
from consumer.settings import Settings
from consumer.state import codec
from schemas import (
    CommandResult,
    CommandStatus,
    MemoryCommand,
)


@dataclass(slots=True)
class CompactionOutcome:
    run_id: str
    analyses: list[ScopeAnalysis]
    commands: list[MemoryCommand] = field(default_factory=list)
    results: dict[str, CommandResult] = field(default_factory=dict)
    reports: tuple[Path, Path] | None = None

    @property
    def applied(self) -> list[CommandResult]:
        return [r for r in self.results.values() if r.status is CommandStatus.APPLIED]

    @property
    def rejected(self) -> list[CommandResult]:
        return [r for r in self.results.values() if r.status is CommandStatus.REJECTED]

    @property
    def unanswered(self) -> int:
        return len(self.commands) - len(self.results)


async def state_from_changelog(
    settings: Settings, *, tenant: str | None = None, namespace: str | None = None
) -> StoredState:
    """The embedded store's current content, rebuilt from its changelog."""
    latest: dict[tuple[int, bytes], tuple[int, bytes | None]] = {}
    async for record in read_all(settings, [settings.topics.changelog]):
        latest[(record.partition, record.key or b"")] = (record.offset, record.value)
    state = StoredState()
    # In the order written, as a restore applies them.
    written = sorted(
        (partition, offset, value) for (partition, _), (offset, value) in latest.items()
    )
    # A tombstone (null or empty value): the point was deleted.
    points = [codec.RawPoint.from_bytes(value) for _, _, value in written if value]
    collect_points(state, points, tenant, namespace)
    return state


def plan(
    settings: Settings, state: StoredState, *, progress_out: TextIO | None = None
) -> list[ScopeAnalysis]:
    policy = threshold_policy(settings)
    veto = pair_veto_for(
        state,
        guards=settings.dedup.guards_enabled,
        judge=local_judge(build_verifier(settings.dedup)),
    )
    total = sum(len(m) for m in state.memories.values())
    progress = Progress(total, "compact", progress_out) if progress_out is not None else None
    analyses = []
    try:
        for scope in sorted(state.memories, key=lambda s: (s.tenant_id, s.namespace)):
            memories = sorted(state.memories[scope], key=lambda m: m.memory_id)
            analyses.append(
                analyse_scope(
                    memories,
                    bands=policy.bands_for(scope.namespace),
                    pair_veto=veto,
                    scope=scope,
                    neighbours=settings.compaction.neighbours,
                    max_cluster_size=settings.compaction.max_cluster_size,
                    on_progress=progress.advance if progress is not None else None,
                )
            )
            if progress is not None:
                # Unembedded memories are never searched; count them as done.
                progress.advance(len(memories) - sum(1 for m in memories if m.vector is not None))
    finally:
        if progress is not None:
            progress.close()  # also on an error: the terminal gets its cursor back
    return analyses


async def load_state(
    settings: Settings,
    *,
    store: MemoryStore | None = None,
    tenant: str | None = None,
    namespace: str | None = None,
) -> StoredState:
    if store is not None:
        partitions = range(settings.topics.partitions) if settings.qdrant.backend == "edge" else [0]
        return await state_from_store(store, list(partitions), tenant=tenant, namespace=namespace)
    if settings.qdrant.backend == "edge":
        return await state_from_changelog(settings, tenant=tenant, namespace=namespace)
    server = build_store(settings.qdrant, input_topic=settings.topics.input)
    try:
        await server.start(0)
        return await state_from_store(server, [0], tenant=tenant, namespace=namespace)
    finally:
        await server.close()


async def run_compaction(
    settings: Settings,
    *,
    tenant: str | None = None,
    namespace: str | None = None,
    dry_run: bool = False,
    report_dir: Path | None = None,
    show_text: bool = False,
    wait_s: float = 60.0,
    store: MemoryStore | None = None,
    progress_out: TextIO | None = None,
) -> CompactionOutcome:
    """Plan, then (unless `dry_run`) send one command per cluster and wait up to
    `wait_s` for their results. `store`: read from this store instead (tests, or
    an operator holding the store)."""
    state = await load_state(settings, store=store, tenant=tenant, namespace=namespace)
    analyses = plan(settings, state, progress_out=progress_out)
    outcome = CompactionOutcome(run_id=uuid.uuid4().hex[:12], analyses=analyses)
    if dry_run:
        texts = (
            {m.memory_id: m.content for ms in state.memories.values() for m in ms}
            if show_text
            else None
        )
        outcome.reports = write_reports(
            analyses,
            report_dir or Path("compaction-report"),
            texts=texts,
            settings_summary={
                "store": settings.qdrant.backend,
                "tenant": tenant or "(all)",
                "namespace": namespace or "(all)",
                "guards": settings.dedup.guards_enabled,
                "verifier": settings.dedup.verifier.kind,
            },
        )
        return outcome
    outcome.commands = commands_for(analyses, outcome.run_id)
    if not outcome.commands:
        return outcome
    progress = (
        Progress(len(outcome.commands), "apply", progress_out) if progress_out is not None else None
    )
    try:
        outcome.results = await send_commands(
            settings,
            outcome.commands,
            wait_s=wait_s,
            on_result=(lambda _record: progress.advance()) if progress is not None else None,
        )
    finally:
        if progress is not None:
            progress.close()
    return outcome


def render_outcome(outcome: CompactionOutcome, *, dry_run: bool) -> str:
    memories = sum(a.memories for a in outcome.analyses)
    clusters = sum(len(a.clusters) for a in outcome.analyses)
    removed = sum(a.removed for a in outcome.analyses)
    vetoes: dict[str, int] = defaultdict(int)
    for analysis in outcome.analyses:
        for name, count in analysis.vetoes.items():
            vetoes[name] += count
    lines = [
        f"scanned {memories} memories in {len(outcome.analyses)} scopes: "
        f"{clusters} clusters, {removed} memories to fold into their keepers"
    ]
    if vetoes:
        lines.append(
            "pairs kept apart: " + ", ".join(f"{k} {v}" for k, v in sorted(vetoes.items()))
        )
    if dry_run:
        if outcome.reports is not None:
            lines.append(
                f"dry run, nothing changed; report: {outcome.reports[0]} and {outcome.reports[1]}"
            )
        return "\n".join(lines)
    folded = sum(len(r.removed_memory_ids) for r in outcome.applied)
    lines.append(
        f"run {outcome.run_id}: {len(outcome.applied)} clusters applied ({folded} memories folded), "
        f"{len(outcome.rejected)} rejected, {outcome.unanswered} not answered yet"
    )
    for result in outcome.rejected[:10]:
        lines.append(f"  rejected {result.command_id}: {result.detail}")
    if outcome.unanswered:
        lines.append(
            "  unanswered commands stay queued on the input topic and are applied when the "
            "consumers that own their scopes run"
        )
    return "\n".join(lines)
