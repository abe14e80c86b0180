"""Turning raw input records into candidates, or into dead letters with a reason.

Error details name fields and limits, never the memory text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import ValidationError

from consumer.domain.models import Candidate, RecordRef, Scope
from consumer.domain.normalize import content_hash, memory_id_for, normalize_content
from consumer.kafka.records import InputRecord
from schemas import (
    MAX_CONTENT_CHARS,
    SCHEMA_VERSION,
    DeadLetterCode,
    MemoryCommand,
    MemoryExtracted,
)

_DETAIL_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Rejection:
    record: InputRecord
    code: DeadLetterCode
    detail: str
    event_id: str | None = None


def _clip(text: str) -> str:
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 3] + "..."


def _describe(exc: ValidationError) -> tuple[DeadLetterCode, str]:
    errors = exc.errors(include_input=False, include_url=False)
    code = DeadLetterCode.SCHEMA_VIOLATION
    if any(error["type"] == "too_large" for error in errors):
        code = DeadLetterCode.TOO_LARGE
    parts = []
    for error in errors[:5]:
        location = ".".join(str(part) for part in error["loc"]) or "(event)"
        parts.append(f"{location}: {error['type']}: {error['msg']}")
    if len(errors) > 5:
        parts.append(f"... {len(errors) - 5} more")
    return code, _clip("; ".join(parts))


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A command (review, compaction) that arrived on the input topic."""

    command: MemoryCommand
    record: RecordRef

    @property
    def scope(self) -> Scope:
        return Scope(self.command.tenant_id, self.command.namespace)


def parse_record(
    record: InputRecord, *, max_event_bytes: int
) -> Candidate | ParsedCommand | Rejection:
    """A memory event, a command (a document with a `command` field), or why not."""
    value = record.value
    if value is None:
        return Rejection(record, DeadLetterCode.INVALID_JSON, "record has no value (tombstone)")
    if len(value) > max_event_bytes:
        return Rejection(
            record,
            DeadLetterCode.TOO_LARGE,
            f"record value is {len(value)} bytes; the limit is {max_event_bytes}",
        )
    try:
        # Fast path for the common case, a valid memory event: one parse in
        # pydantic-core. Anything else takes the path below, which says why.
        event = MemoryExtracted.model_validate_json(value)
    except ValidationError:
        return _parse_slowly(record, value)
    return _candidate(record, event)


def _parse_slowly(record: InputRecord, value: bytes) -> Candidate | ParsedCommand | Rejection:
    try:
        document = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        position = getattr(exc, "pos", getattr(exc, "start", "?"))
        return Rejection(
            record,
            DeadLetterCode.INVALID_JSON,
            f"not valid UTF-8 JSON ({type(exc).__name__} at byte {position})",
        )
    if not isinstance(document, dict):
        return Rejection(
            record,
            DeadLetterCode.INVALID_JSON,
            f"top level is {type(document).__name__}, not an object",
        )
    event_id = document.get("event_id") if isinstance(document.get("event_id"), str) else None
    version = document.get("schema_version")
    if version != SCHEMA_VERSION and isinstance(version, int) and not isinstance(version, bool):
        return Rejection(
            record,
            DeadLetterCode.UNSUPPORTED_SCHEMA_VERSION,
            f"schema_version {version} is not supported; this consumer reads {SCHEMA_VERSION}",
            event_id,
        )
    if "command" in document:
        command_id = document.get("command_id")
        try:
            command = MemoryCommand.model_validate(document)
        except ValidationError as exc:
            code, detail = _describe(exc)
            return Rejection(
                record, code, detail, command_id if isinstance(command_id, str) else None
            )
        return ParsedCommand(command, RecordRef(record.topic, record.partition, record.offset))
    try:
        event = MemoryExtracted.model_validate(document)
    except ValidationError as exc:
        code, detail = _describe(exc)
        return Rejection(record, code, detail, event_id)
    return _candidate(record, event)


def _candidate(record: InputRecord, event: MemoryExtracted) -> Candidate | Rejection:
    normalized = normalize_content(event.content)
    if not normalized:
        return Rejection(
            record,
            DeadLetterCode.EMPTY_CONTENT,
            "content is empty after normalisation (only whitespace or punctuation)",
            event.event_id,
        )
    if len(normalized) > MAX_CONTENT_CHARS:
        return Rejection(
            record,
            DeadLetterCode.TOO_LARGE,
            f"content is {len(normalized)} characters after normalisation; "
            f"the limit is {MAX_CONTENT_CHARS}",
            event.event_id,
        )
    hash_hex = content_hash(normalized)
    occurred_at = event.occurred_at or datetime.fromtimestamp(record.timestamp_ms / 1000, UTC)
    return Candidate(
        event=event,
        normalized=normalized,
        content_hash=hash_hex,
        memory_id=memory_id_for(event.tenant_id, event.namespace, hash_hex),
        record=RecordRef(record.topic, record.partition, record.offset),
        occurred_at=occurred_at,
    )
