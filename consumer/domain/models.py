"""Plain data the engine works on. Pydantic stays at the edges (schemas/, settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from consumer.domain.vetoes import GuardVeto
from schemas import CheckName, Decision, DecisionReason, MemoryExtracted, MergePolicy


@dataclass(frozen=True, slots=True)
class Scope:
    """Deduplication never crosses a (tenant, namespace) pair."""

    tenant_id: str
    namespace: str


@dataclass(frozen=True, slots=True)
class RecordRef:
    topic: str
    partition: int
    offset: int


@dataclass(slots=True)
class MemoryRecord:
    """A stored memory: the payload of a point plus its vector."""

    memory_id: str
    tenant_id: str
    namespace: str
    content: str
    content_hash: str
    importance: float
    topics: list[str]
    entities: list[str]
    merged_event_ids: list[str]
    origin_event_id: str
    created_at: datetime
    updated_at: datetime
    vector: list[float] | None = None
    # Lineage. `merged_from`: what was folded in (event id and the memory id that
    # event's text would have had); `supersedes`: content hashes this memory's text
    # replaced (the id stays derived from the first text's hash).
    merged_from: list[MergeSource] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    # Texts folded into this memory that it does not hold as its text: each merged
    # event's own text, and each text a merge replaced (newest last, bounded; see
    # consumer.domain.merge). A false merge loses no text.
    folded_texts: list[FoldedText] = field(default_factory=list)
    # How often the fact was seen (accepted once, then each merge or skip into it).
    seen_count: int = 1
    # None only on records built before lineage existed; the codec fills them in.
    first_seen_at: datetime | None = None
    last_seen_at: datetime | None = None
    # The events skipped into this memory by the batch that last counted a skip:
    # a retry of that batch (its decisions cut short after the memories) finds
    # them here and does not count them again.
    skipped_event_ids: list[str] = field(default_factory=list)

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id, self.namespace)

    def copy(self) -> MemoryRecord:
        """A shallow copy, as `dataclasses.replace(self)` makes, for a third of its
        cost (two per skipped duplicate)."""
        return MemoryRecord(
            memory_id=self.memory_id,
            tenant_id=self.tenant_id,
            namespace=self.namespace,
            content=self.content,
            content_hash=self.content_hash,
            importance=self.importance,
            topics=self.topics,
            entities=self.entities,
            merged_event_ids=self.merged_event_ids,
            origin_event_id=self.origin_event_id,
            created_at=self.created_at,
            updated_at=self.updated_at,
            vector=self.vector,
            merged_from=self.merged_from,
            supersedes=self.supersedes,
            folded_texts=self.folded_texts,
            seen_count=self.seen_count,
            first_seen_at=self.first_seen_at,
            last_seen_at=self.last_seen_at,
            skipped_event_ids=self.skipped_event_ids,
        )


@dataclass(frozen=True, slots=True)
class MergeSource:
    """One event folded into a memory, and the memory id its own text maps to."""

    event_id: str
    memory_id: str


@dataclass(frozen=True, slots=True)
class FoldedText:
    """A text a memory took in without keeping it as its text, and the event whose
    text it is (for a text a merge wrote, combined or synthesized: that merge's
    event)."""

    event_id: str
    content: str


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    """A similarity match. Below the lowest band a search may return a query's best
    match for its score alone: then `memory` is None and only its id is known."""

    memory: MemoryRecord | None
    score: float
    unread_id: str = ""

    @property
    def memory_id(self) -> str:
        return self.memory.memory_id if self.memory is not None else self.unread_id

    def read(self) -> MemoryRecord:
        """The matched memory: only a match that reaches a band is asked for it."""
        if self.memory is None:
            raise LookupError(f"match {self.unread_id} was scored, not read")
        return self.memory


@dataclass(frozen=True, slots=True)
class SimilarityQuery:
    scope: Scope
    vector: list[float]
    limit: int


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """What was decided for one event, kept so a redelivery re-emits it verbatim."""

    event_id: str
    decision_id: str
    tenant_id: str
    namespace: str
    content_hash: str
    memory_id: str
    decision: Decision
    # The decision event exactly as first published.
    event_json: str
    # Semantic skips and merges: what a reversal needs (the event's own text and
    # the target memory before the decision), as JSON; see consumer.review.
    basis_json: str | None = None
    # When it was decided (Unix seconds), for decision retention. None: unknown
    # (the embedded store then dates it when it stores it; a server keeps it).
    decided_at_s: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A validated input event, ready to be decided."""

    event: MemoryExtracted
    normalized: str
    content_hash: str
    memory_id: str
    record: RecordRef
    occurred_at: datetime

    @property
    def scope(self) -> Scope:
        return Scope(self.event.tenant_id, self.event.namespace)

    @property
    def scoped_hash(self) -> tuple[str, str, str]:
        return (self.event.tenant_id, self.event.namespace, self.content_hash)


@dataclass(frozen=True, slots=True)
class CheckRun:
    name: CheckName
    hit: bool
    duration_ms: float
    score: float | None = None


@dataclass(frozen=True, slots=True)
class GuardHit:
    """A guard vetoed a semantic match: the pair differs in a way cosine misses."""

    veto: GuardVeto
    memory_id: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of the check pipeline for one candidate (seed 004's
    DuplicateCheckResult, as data), with the memory as it stands afterwards."""

    candidate: Candidate
    decision: Decision
    reason: DecisionReason
    memory: MemoryRecord
    similarity: float | None
    threshold: float | None
    checks: tuple[CheckRun, ...]
    decided_at: datetime
    # The first veto met on the way to this decision, if any.
    guard: GuardHit | None = None
    # Every match in a band that was vetoed for a changed fact (guards.related_kind).
    related: tuple[GuardHit, ...] = ()
    # Set when this event's own memory was removed because an equal memory had
    # been stored concurrently by another consumer (and won).
    superseded_memory_id: str | None = None
    # Checks that could not run (degraded mode); empty when all ran.
    skipped_checks: tuple[CheckName, ...] = ()
    # Merges only: the namespace's merge policy, and the policy actually applied
    # when it failed (synthesize falls back to replace_with_newer).
    merge_policy: MergePolicy | None = None
    merge_fallback: MergePolicy | None = None
    # Semantic skips and merges: the matched memory as it was before this decision.
    target_before: MemoryRecord | None = None


@dataclass(slots=True)
class BatchPlan:
    """Decisions for one partition's share of a batch, before anything is durable."""

    partition: int
    outcomes: list[Outcome] = field(default_factory=list)
    # Final state of every memory created or changed in this batch, by id.
    writes: dict[str, MemoryRecord] = field(default_factory=dict)
    # Ids in `writes` whose only change is being seen again (skips): stored as a
    # seen-count update, not the whole memory with its vector.
    seen_only: set[str] = field(default_factory=set)
    # Ids given to `write`, in order (repeats kept): the only way a memory's vector
    # changes within the batch, so in-batch matrices refresh from it alone.
    rewritten: list[str] = field(default_factory=list)

    def write(self, memory: MemoryRecord) -> None:
        """A memory created or changed (text, lineage, vector): stored whole."""
        self.writes[memory.memory_id] = memory
        self.seen_only.discard(memory.memory_id)
        self.rewritten.append(memory.memory_id)

    def write_seen(self, memory: MemoryRecord) -> None:
        """A memory seen again: stored whole only if it changed otherwise too."""
        if memory.memory_id not in self.writes:
            self.seen_only.add(memory.memory_id)
        self.writes[memory.memory_id] = memory


@dataclass(frozen=True, slots=True)
class LostRace:
    """An accepted outcome that a memory stored concurrently beats, and what it
    becomes against that memory (skipped or merged; `MatchVetter.race_decision`)."""

    outcome: Outcome
    winner: ScoredMemory
    decision: Decision
    threshold: float | None
