"""Commands and their results: reviews of decisions and compaction of stored memories.

A command travels on the input topic, keyed `{tenant_id}/{namespace}` like the
memories of its scope, so the consumer that owns the scope's partition (and, with
the embedded store, the only process that may write its shard) applies it, in
order with the scope's events. `memdedup review` and `memdedup compact` publish
them; a redelivered command re-emits its first results byte for byte.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.events import (
    NAMESPACE_PATTERN,
    SCHEMA_VERSION,
    TENANT_PATTERN,
    Decision,
    DecisionReason,
    RecordPosition,
    StoredMemory,
    empty_list,
    scope_key,
)

MAX_CLUSTER_MEMBERS = 100


class ReviewAction(StrEnum):
    CONFIRM = "confirm"
    REVERSE = "reverse"


class ReviewStatus(StrEnum):
    """A decision's review status (`unreviewed` when no review applied)."""

    UNREVIEWED = "unreviewed"
    CONFIRMED = "confirmed"
    REVERSED = "reversed"


class ReviewCommand(BaseModel):
    """Confirm a decision, or reverse a semantic skip or merge."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["review"] = "review"
    decision_id: Annotated[str, Field(min_length=1, max_length=64)]
    # The event the decision was taken for (decision ids derive from event ids).
    event_id: Annotated[str, Field(min_length=1, max_length=128)]
    action: ReviewAction
    reviewer: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    note: Annotated[str, Field(max_length=1000)] | None = None


class CompactionMember(BaseModel):
    """A memory to fold into the cluster's keeper, as it was when planned."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_id: str
    content_hash: str
    similarity: float
    decision: Literal["merged", "skipped"]


class CompactCommand(BaseModel):
    """Fold one cluster of duplicate memories into its keeper. Applied only if every
    memory still has the text it had when the cluster was planned."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["compact"] = "compact"
    run_id: Annotated[str, Field(min_length=1, max_length=64)]
    keeper_id: str
    keeper_hash: str
    # replace_with_newer: the member whose text the keeper takes.
    text_source_id: str | None = None
    members: Annotated[list[CompactionMember], Field(min_length=1, max_length=MAX_CLUSTER_MEMBERS)]


class MemoryCommand(BaseModel):
    """A command on the input topic (told apart from memories by `command`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1]
    command_id: Annotated[str, Field(min_length=1, max_length=128)]
    tenant_id: Annotated[str, Field(min_length=1, max_length=128, pattern=TENANT_PATTERN)]
    namespace: Annotated[str, Field(min_length=1, max_length=64, pattern=NAMESPACE_PATTERN)]
    issued_at: AwareDatetime
    command: Annotated[ReviewCommand | CompactCommand, Field(discriminator="type")]

    @property
    def key(self) -> str:
        """The record key: the scope's, so the command lands on the scope's partition."""
        return scope_key(self.tenant_id, self.namespace)

    def to_bytes(self) -> bytes:
        """The record value as published."""
        return self.model_dump_json(exclude_none=True).encode()


class CommandStatus(StrEnum):
    APPLIED = "applied"
    # Not applied, and never will be: `detail` says why (nothing is changed).
    REJECTED = "rejected"


class CommandResult(BaseModel):
    """Published on `memdedup.command-results` once per command."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    command_id: str
    type: Literal["review", "compact"]
    tenant_id: str
    namespace: str
    status: CommandStatus
    detail: str
    applied_at: datetime
    record: RecordPosition
    # Reviews.
    decision_id: str | None = None
    action: ReviewAction | None = None
    review_status: ReviewStatus | None = None
    reviewer: str | None = None
    note: str | None = None
    # Compactions.
    run_id: str | None = None
    keeper_id: str | None = None
    removed_memory_ids: list[str] = empty_list()


class MemoryReversed(BaseModel):
    """Published on `memory.reversed` when a reviewer reverses a skip or merge:
    the compensating change downstream services apply. The new event's text is a
    memory of its own again (`restored_memory`); the memory it had been folded
    into stands as `target_memory` (its pre-merge text back when nothing changed
    it since: `target_text_restored`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    reversal_id: str
    decision_id: str
    event_id: str
    tenant_id: str
    namespace: str
    original_decision: Decision
    original_reason: DecisionReason
    restored_memory: StoredMemory
    target_memory: StoredMemory | None
    target_text_restored: bool
    reversed_at: datetime
    reviewer: str | None = None
