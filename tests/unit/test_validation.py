"""parse_record: candidates, or dead letters with a code and a content-free detail."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from consumer.domain.models import Candidate, RecordRef
from consumer.domain.normalize import content_hash, memory_id_for, normalize_content
from consumer.service.validation import ParsedCommand, Rejection, parse_record
from schemas import MAX_CONTENT_CHARS, DeadLetterCode

from .helpers import RECORD_TS_MS, drop, event_dict, make_record

MAX_BYTES = 64 * 1024
# Distinctive text: must never show up in an error detail.
SECRET = "Zyxwv-Quartz-Platypus-4417"


def parse(record: Any, max_event_bytes: int = MAX_BYTES) -> Candidate | ParsedCommand | Rejection:
    return parse_record(record, max_event_bytes=max_event_bytes)


def rejected(record: Any, code: DeadLetterCode, max_event_bytes: int = MAX_BYTES) -> Rejection:
    result = parse(record, max_event_bytes)
    assert isinstance(result, Rejection), result
    assert result.code is code, result.detail
    assert result.record is record
    assert result.detail
    assert len(result.detail) <= 512
    assert SECRET not in result.detail
    assert SECRET.casefold() not in result.detail.casefold()
    return result


def secret_event(**overrides: Any) -> dict[str, Any]:
    return event_dict(content=f"The user's passphrase is {SECRET}", **overrides)


# --- valid ----------------------------------------------------------------------


def test_valid_event_becomes_candidate() -> None:
    event = event_dict(
        event_id="evt-42",
        content="  The User prefers   DARK mode!  ",
        importance=0.7,
        topics=["ui"],
        entities=["user"],
        source={"agent_id": "a1", "session_id": "s1"},
        metadata={"k": [1, 2, {"x": None}]},
    )
    record = make_record(event, partition=3, offset=99, topic="in")
    candidate = parse(record)
    assert isinstance(candidate, Candidate)
    assert candidate.event.event_id == "evt-42"
    assert candidate.event.importance == 0.7
    assert candidate.normalized == "the user prefers dark mode"
    assert candidate.content_hash == content_hash("the user prefers dark mode")
    assert candidate.memory_id == memory_id_for("tenant-a", "prefs", candidate.content_hash)
    assert candidate.record == RecordRef("in", 3, 99)
    assert candidate.scoped_hash == ("tenant-a", "prefs", candidate.content_hash)
    # No occurred_at in the event: the record timestamp.
    assert candidate.occurred_at == datetime.fromtimestamp(RECORD_TS_MS / 1000, UTC)
    assert candidate.occurred_at.tzinfo is not None


def test_occurred_at_from_event_wins() -> None:
    candidate = parse(make_record(event_dict(occurred_at="2024-05-06T07:08:09+02:00")))
    assert isinstance(candidate, Candidate)
    assert candidate.occurred_at == datetime(2024, 5, 6, 5, 8, 9, tzinfo=UTC)


def test_defaults_of_optional_fields() -> None:
    candidate = parse(make_record(event_dict()))
    assert isinstance(candidate, Candidate)
    assert candidate.event.importance == 0.5
    assert candidate.event.topics == []
    assert candidate.event.entities == []
    assert candidate.event.metadata == {}
    assert candidate.event.source is None


def test_variants_share_hash_and_memory_id() -> None:
    a = parse(make_record(event_dict(content="Straße café")))
    b = parse(make_record(event_dict(content="  STRASSE CAFE\u0301. ")))
    assert isinstance(a, Candidate)
    assert isinstance(b, Candidate)
    assert a.content_hash == b.content_hash
    assert a.memory_id == b.memory_id


def test_value_exactly_at_byte_limit_is_accepted() -> None:
    body = json.dumps(event_dict()).encode()
    limit = 2048
    padded = body[:-1] + b" " * (limit - len(body)) + b"}"
    assert len(padded) == limit
    assert isinstance(parse(make_record(value=padded), limit), Candidate)
    rejected(make_record(value=padded[:-1] + b" }"), DeadLetterCode.TOO_LARGE, limit - 1)


def test_content_exactly_at_char_limit_after_normalisation() -> None:
    content = "a" * MAX_CONTENT_CHARS
    assert isinstance(parse(make_record(event_dict(content=content))), Candidate)
    # Whitespace collapses before the limit applies.
    padded = "  ".join(["a"] * (MAX_CONTENT_CHARS // 2))
    assert len(padded) > MAX_CONTENT_CHARS
    assert isinstance(parse(make_record(event_dict(content=padded))), Candidate)


# --- invalid_json -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        b"{not json",
        b"",
        b'{"content": "' + SECRET.encode() + b'"',
        b"\xff\xfe\x00garbage",
        '{"content": "caf\u00e9"}'.encode("latin-1"),
        b"[1, 2, 3]",
        json.dumps([event_dict()]).encode(),
        b'"just a string"',
        b"42",
        b"null",
    ],
)
def test_invalid_json(value: bytes) -> None:
    rejected(make_record(value=value), DeadLetterCode.INVALID_JSON)


def test_tombstone_is_invalid_json() -> None:
    result = rejected(make_record(value=None), DeadLetterCode.INVALID_JSON)
    assert "tombstone" in result.detail


def test_array_top_level_detail() -> None:
    result = rejected(make_record(value=b"[]"), DeadLetterCode.INVALID_JSON)
    assert "list" in result.detail


# --- schema_violation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"contnet": "typo field"}, "contnet"),
        ({"tenant_id": "bad tenant!"}, "tenant_id"),
        ({"tenant_id": ""}, "tenant_id"),
        ({"namespace": "Prefs"}, "namespace"),
        ({"namespace": "a/b"}, "namespace"),
        ({"topics": [f"t{i}" for i in range(33)]}, "topics"),
        ({"entities": [f"e{i}" for i in range(65)]}, "entities"),
        ({"topics": [""]}, "topics"),
        ({"importance": 1.5}, "importance"),
        ({"importance": -0.1}, "importance"),
        ({"occurred_at": "2024-05-06T07:08:09"}, "occurred_at"),
        ({"occurred_at": "yesterday"}, "occurred_at"),
        ({"event_id": ""}, "event_id"),
        ({"event_id": "x" * 129}, "event_id"),
        ({"event_id": drop()}, "event_id"),
        ({"schema_version": drop()}, "schema_version"),
        ({"schema_version": "1"}, "schema_version"),
        ({"source": {"agent_id": "a", "extra": 1}}, "source"),
        ({"metadata": "not a dict"}, "metadata"),
    ],
)
def test_schema_violation(overrides: dict[str, Any], field: str) -> None:
    result = rejected(make_record(secret_event(**overrides)), DeadLetterCode.SCHEMA_VIOLATION)
    assert field in result.detail


def test_content_of_wrong_type() -> None:
    result = rejected(make_record(event_dict(content=[SECRET])), DeadLetterCode.SCHEMA_VIOLATION)
    assert "content" in result.detail


def test_missing_content() -> None:
    rejected(make_record(event_dict(content=drop())), DeadLetterCode.SCHEMA_VIOLATION)


def test_empty_string_content_is_schema_violation() -> None:
    rejected(make_record(event_dict(content="")), DeadLetterCode.SCHEMA_VIOLATION)


def test_unknown_field_holding_content_does_not_leak() -> None:
    event = event_dict(contnet=SECRET * 3)
    rejected(make_record(event), DeadLetterCode.SCHEMA_VIOLATION)


def test_event_id_is_kept_on_rejection() -> None:
    result = rejected(
        make_record(secret_event(event_id="evt-bad", importance=2)),
        DeadLetterCode.SCHEMA_VIOLATION,
    )
    assert result.event_id == "evt-bad"
    result = rejected(make_record(secret_event(event_id=123)), DeadLetterCode.SCHEMA_VIOLATION)
    assert result.event_id is None


def test_many_errors_are_summarised() -> None:
    event = secret_event(
        tenant_id="bad tenant",
        namespace="BAD",
        importance=9,
        topics=7,
        entities=8,
        occurred_at="nope",
        a=1,
        b=2,
    )
    result = rejected(make_record(event), DeadLetterCode.SCHEMA_VIOLATION)
    assert "more" in result.detail


@pytest.mark.parametrize("version", [True])
def test_schema_version_must_be_the_integer_one(version: Any) -> None:
    rejected(make_record(event_dict(schema_version=version)), DeadLetterCode.SCHEMA_VIOLATION)


# --- unsupported_schema_version ---------------------------------------------------


@pytest.mark.parametrize("version", [2, 0, 99, -1])
def test_unsupported_schema_version(version: int) -> None:
    result = rejected(
        make_record(secret_event(schema_version=version, event_id="evt-v")),
        DeadLetterCode.UNSUPPORTED_SCHEMA_VERSION,
    )
    assert str(version) in result.detail
    assert result.event_id == "evt-v"


def test_future_version_with_unknown_fields_is_still_unsupported_version() -> None:
    event = secret_event(schema_version=2, brand_new_field={"x": 1})
    rejected(make_record(event), DeadLetterCode.UNSUPPORTED_SCHEMA_VERSION)


# --- too_large --------------------------------------------------------------------


def test_value_over_max_event_bytes() -> None:
    record = make_record(secret_event(metadata={"pad": "x" * 5000}))
    result = rejected(record, DeadLetterCode.TOO_LARGE, max_event_bytes=4096)
    assert "4096" in result.detail


def test_oversized_value_is_checked_before_json() -> None:
    rejected(make_record(value=b"{" * 5000), DeadLetterCode.TOO_LARGE, max_event_bytes=4096)


def test_content_over_limit_after_normalisation() -> None:
    content = SECRET + "a" * MAX_CONTENT_CHARS
    result = rejected(make_record(event_dict(content=content)), DeadLetterCode.TOO_LARGE)
    assert str(MAX_CONTENT_CHARS) in result.detail


def test_content_over_raw_bound() -> None:
    content = SECRET + " " * (4 * MAX_CONTENT_CHARS)
    rejected(make_record(event_dict(content=content)), DeadLetterCode.SCHEMA_VIOLATION)


def test_metadata_over_16_kib() -> None:
    event = secret_event(metadata={"blob": "y" * (16 * 1024)})
    result = rejected(make_record(event), DeadLetterCode.TOO_LARGE)
    assert "metadata" in result.detail


def test_metadata_just_under_16_kib_is_fine() -> None:
    # {"blob":"..."} serialises to 11 bytes plus the string.
    event = event_dict(metadata={"blob": "y" * (16 * 1024 - 11)})
    assert isinstance(parse(make_record(event)), Candidate)


# --- empty_content ----------------------------------------------------------------


@pytest.mark.parametrize("content", ["  ... ", " ", "\t\n", "!!!", "\u2026", "(-)"])
def test_empty_content(content: str) -> None:
    assert normalize_content(content) == ""
    result = rejected(
        make_record(event_dict(content=content, event_id="evt-e")), DeadLetterCode.EMPTY_CONTENT
    )
    assert result.event_id == "evt-e"
