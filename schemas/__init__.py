"""Event contract of memdedup (v1), importable by producers and downstream services."""

from schemas.events import (
    MAX_CONTENT_CHARS,
    SCHEMA_VERSION,
    CheckName,
    CheckReport,
    DeadLetterCode,
    DeadLetterHeaders,
    Decision,
    DecisionReason,
    GuardReport,
    MemoryDecisionEvent,
    MemoryExtracted,
    RecordPosition,
    SourceRef,
    StoredMemory,
    memory_urn,
    scope_key,
)

__all__ = [
    "MAX_CONTENT_CHARS",
    "SCHEMA_VERSION",
    "CheckName",
    "CheckReport",
    "DeadLetterCode",
    "DeadLetterHeaders",
    "Decision",
    "DecisionReason",
    "GuardReport",
    "MemoryDecisionEvent",
    "MemoryExtracted",
    "RecordPosition",
    "SourceRef",
    "StoredMemory",
    "memory_urn",
    "scope_key",
]
