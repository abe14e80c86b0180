"""Event contract v1: what producers send and what memdedup publishes.

JSON on the wire. Other services import these models to produce input events and
to read decision events; unknown fields are rejected on input so that a typo in a
producer shows up as a dead letter instead of silently losing data.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    field_validator,
)
from pydantic_core import PydanticCustomError

SCHEMA_VERSION: Final = 1
MAX_CONTENT_CHARS: Final = 8192
MAX_METADATA_BYTES: Final = 16 * 1024
MAX_TOPICS: Final = 32
MAX_ENTITIES: Final = 64
TENANT_PATTERN: Final = r"^[A-Za-z0-9._:@-]+$"
NAMESPACE_PATTERN: Final = r"^[a-z0-9_-]+$"


def empty_list() -> Any:
    """`[]` as a default, made fresh per instance: pydantic deep-copies a literal
    mutable default on every validation. The schema still shows `"default": []`."""
    return Field(default_factory=list, json_schema_extra={"default": []})


def empty_dict() -> Any:
    return Field(default_factory=dict, json_schema_extra={"default": {}})


def scope_key(tenant_id: str, namespace: str) -> str:
    """The record key producers must use: one scope always lands on one partition."""
    return f"{tenant_id}/{namespace}"


def memory_urn(tenant_id: str, namespace: str, memory_id: str) -> str:
    return f"mem://{tenant_id}/{namespace}/{memory_id}"


def _metadata_within_limit(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise PydanticCustomError(
            "too_large",
            "metadata is {size} bytes serialised; the limit is {limit}",
            {"size": size, "limit": MAX_METADATA_BYTES},
        )
    return value


ShortText = Annotated[str, Field(min_length=1, max_length=256)]


class SourceRef(BaseModel):
    """Where in the agent platform the memory was extracted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: ShortText | None = None
    session_id: ShortText | None = None
    message_id: ShortText | None = None


class MemoryExtracted(BaseModel):
    """Input event on `memory.extracted`, keyed `{tenant_id}/{namespace}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1]
    event_id: Annotated[str, Field(min_length=1, max_length=128)]
    tenant_id: Annotated[str, Field(min_length=1, max_length=128, pattern=TENANT_PATTERN)]
    namespace: Annotated[str, Field(min_length=1, max_length=64, pattern=NAMESPACE_PATTERN)]
    # The 1..8192 bound applies after normalisation, which the consumer checks; the
    # raw bound only stops absurd payloads from being normalised at all.
    content: Annotated[str, Field(min_length=1, max_length=4 * MAX_CONTENT_CHARS)]
    importance: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    topics: Annotated[list[ShortText], Field(max_length=MAX_TOPICS)] = empty_list()
    entities: Annotated[list[ShortText], Field(max_length=MAX_ENTITIES)] = empty_list()
    source: SourceRef | None = None
    occurred_at: AwareDatetime | None = None
    metadata: Annotated[dict[str, JsonValue], AfterValidator(_metadata_within_limit)] = empty_dict()

    @field_validator("schema_version", mode="before")
    @classmethod
    def _integer_version(cls, value: Any) -> Any:
        # `true` or `1.0` from a sloppy producer is a schema violation, not v1.
        if isinstance(value, bool) or not isinstance(value, int):
            raise PydanticCustomError("int_type", "schema_version must be an integer")
        return value

    @property
    def key(self) -> str:
        return scope_key(self.tenant_id, self.namespace)


class Decision(StrEnum):
    ACCEPTED = "accepted"
    MERGED = "merged"
    SKIPPED = "skipped"


class DecisionReason(StrEnum):
    NEW = "new"
    EXACT = "exact"
    SEMANTIC = "semantic"
    RECENT = "recent"
    # Removed by `memdedup compact` (or the periodic trigger) into a duplicate.
    COMPACTION = "compaction"


class CheckName(StrEnum):
    EXACT = "exact"
    RECENT = "recent"
    SEMANTIC = "semantic"


class CheckReport(BaseModel):
    """One check that ran for an event. Checks are batched, so `duration_ms` is the
    time of the batched lookup that served this event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: CheckName
    hit: bool
    duration_ms: float
    score: float | None = None


class GuardReport(BaseModel):
    """A deterministic guard vetoed a semantic match (role swap, different numbers,
    opposite polarity): the pair was decided as if below threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # reviewed_pair: a reviewer reversed an earlier decision on this very pair;
    # verifier: the gray-zone verifier judged the texts to be different facts.
    # alignment: the parse alignment found a changed value, role, tense or
    # polarity; `detail` starts with which (value_change, role_change,
    # time_change, negation).
    name: Literal["word_order", "numbers", "negation", "reviewed_pair", "verifier", "alignment"]
    detail: str
    memory_id: str
    similarity: float


RelatedKind = Literal[
    "value_change", "number_change", "negation", "time_change", "role_change", "different_fact"
]


class RelatedMemory(BaseModel):
    """A stored memory that matched closely but was kept apart because a fact
    changed: the new memory may supersede it (another city, no longer true, a
    new date). Downstream may mark it as possibly outdated."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    similarity: float
    # value_change: another value in the same slot; number_change: another
    # number, date or time; negation: opposite polarity; time_change: another
    # tense or frame (used to, plans to, will); role_change: who does what to
    # whom; different_fact: the verifier judged them different facts.
    kind: RelatedKind


MergePolicy = Literal["keep_existing", "replace_with_newer", "keep_higher_importance", "synthesize"]
# What a match that only adds a detail to the stored fact does (see dedup settings).
DetailPolicy = Literal["merge", "keep_both"]


class MergeSource(BaseModel):
    """An event folded into a memory, and the memory id its own text maps to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    event_id: str
    memory_id: str


class FoldedText(BaseModel):
    """A text folded into a memory that the memory does not hold as its text: a
    merged event's own text, or a text a merge replaced. `event_id`: the event
    whose text it is (for a text a merge wrote, combined or synthesized: that
    merge's event)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    event_id: str
    content: str


class StoredMemory(BaseModel):
    """The memory as stored after the decision."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    content: str
    content_hash: str
    importance: float
    topics: list[str]
    entities: list[str]
    merged_event_ids: list[str]
    origin_event_id: str
    created_at: datetime
    updated_at: datetime
    # Lineage (defaults describe memories stored before it existed). Lineage lists
    # (merged_event_ids, merged_from, supersedes) hold the latest 100 entries;
    # topics and entities the latest 32 and 64.
    merged_from: list[MergeSource] = empty_list()
    # Content hashes of texts this memory's text replaced (its id stays derived
    # from the first text's hash).
    supersedes: list[str] = empty_list()
    # Texts folded in and not kept as `content` (each merged event's own text, each
    # text a merge replaced), newest last: the latest 20 within 8192 characters
    # (the newest always kept). Never `content` itself, never one text twice.
    folded_texts: list[FoldedText] = empty_list()
    # Times the fact was seen: 1 when accepted, +1 for each merge or skip into it.
    seen_count: int = 1
    first_seen_at: datetime | None = None
    last_seen_at: datetime | None = None


class RecordPosition(BaseModel):
    """The input record a decision was taken for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str
    partition: int
    offset: int


class MemoryDecisionEvent(BaseModel):
    """Published on `memory.accepted`, `memory.merged` or `memory.skipped`.

    A redelivered or replayed input event re-emits this event byte for byte, so
    consumers downstream deduplicate by `decision_id`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    decision_id: str
    event_id: str
    tenant_id: str
    namespace: str
    decision: Decision
    reason: DecisionReason
    similarity: float | None
    threshold: float | None
    memory_id: str
    memory_urn: str
    memory: StoredMemory
    checks: list[CheckReport]
    model: str
    decided_at: datetime
    record: RecordPosition
    # Hash of the decided event's normalised text (the memory's differs after a
    # skip or merge); the audit log shows it instead of the text.
    content_hash: str | None = None
    guard: GuardReport | None = None
    # Close matches kept apart for a changed fact, best first (empty when none).
    related: list[RelatedMemory] = empty_list()
    # The memory this event first created, removed because an equal memory stored
    # concurrently by another consumer was earlier; this decision points at it.
    superseded_memory_id: str | None = None
    # Decided in a degraded mode (model or store unavailable, opt-in): the checks
    # that could not run are listed; such memories are re-checked later.
    degraded: bool = False
    skipped_checks: list[CheckName] = empty_list()
    # Merges only: the namespace's merge policy, and the policy applied instead
    # when it failed (synthesize falls back to replace_with_newer).
    merge_policy: MergePolicy | None = None
    merge_fallback: MergePolicy | None = None


class DeadLetterCode(StrEnum):
    INVALID_JSON = "invalid_json"
    SCHEMA_VIOLATION = "schema_violation"
    UNSUPPORTED_SCHEMA_VERSION = "unsupported_schema_version"
    TOO_LARGE = "too_large"
    EMPTY_CONTENT = "empty_content"
    CONFLICTING_EVENT_ID = "conflicting_event_id"
    # Processing kept failing for a reason nobody classified; bounded retries ran out.
    PROCESSING_ERROR = "processing_error"


class DeadLetterHeaders(BaseModel):
    """Headers of a record on `memory.dlq`; its value is the original bytes (or
    their first part, when `original_bytes` is set)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    error_code: DeadLetterCode
    error_detail: Annotated[str, Field(max_length=512)]
    source_topic: str
    source_partition: int
    source_offset: int
    # Set only when the value is the original's first bytes (the original did not
    # fit a record of the dead-letter topic): fetch it whole from the source
    # position, and check it against this digest.
    original_bytes: int | None = None
    original_sha256: str | None = None

    def to_kafka(self) -> dict[str, str]:
        dumped = self.model_dump(mode="json", exclude_none=True)
        return {k: str(v) for k, v in dumped.items()}

    @classmethod
    def from_kafka(cls, headers: Any) -> DeadLetterHeaders:
        """Parse aiokafka-style `[(name, bytes)]` headers."""
        values = {name: raw.decode() for name, raw in headers if name in cls.model_fields}
        return cls.model_validate(values)
