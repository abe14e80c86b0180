"""The audit log's pure parts: --since, the table, the reasons a review is refused."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from consumer.cli.auditlog import LogEntry, _refusal, parse_since, render_log, render_log_json
from schemas import MemoryDecisionEvent, ReviewAction, ReviewStatus

NOW = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", NOW - timedelta(minutes=30)),
        ("2h", NOW - timedelta(hours=2)),
        ("1.5d", NOW - timedelta(days=1.5)),
        ("1w", NOW - timedelta(weeks=1)),
        ("2026-01-01T10:00:00Z", datetime(2026, 1, 1, 10, tzinfo=UTC)),
        ("2026-01-01T10:00:00", datetime(2026, 1, 1, 10, tzinfo=UTC)),
        ("2026-01-01T10:00:00+02:00", datetime(2026, 1, 1, 8, tzinfo=UTC)),
    ],
)
def test_since_takes_a_duration_or_a_time(text: str, expected: datetime) -> None:
    assert parse_since(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "2h ago", "-3h", ""])
def test_a_bad_since_says_what_to_give(text: str) -> None:
    with pytest.raises(ValueError, match=r"ISO time .* or a duration"):
        parse_since(text, now=NOW)


def decision(**changes: object) -> MemoryDecisionEvent:
    document = {
        "decision_id": "d-1",
        "event_id": "e-1",
        "tenant_id": "acme",
        "namespace": "bio",
        "decision": "merged",
        "reason": "semantic",
        "similarity": 0.87654,
        "threshold": 0.77,
        "memory_id": "m-1",
        "memory_urn": "mem://acme/bio/m-1",
        "memory": {
            "memory_id": "m-1",
            "content": "User is allergic to peanuts",
            "content_hash": "a" * 64,
            "importance": 0.5,
            "topics": [],
            "entities": [],
            "merged_event_ids": ["e-1"],
            "origin_event_id": "e-0",
            "created_at": NOW.isoformat(),
            "updated_at": NOW.isoformat(),
        },
        "checks": [],
        "model": "m",
        "decided_at": NOW.isoformat(),
        "record": {"topic": "in", "partition": 0, "offset": 3},
        "content_hash": "b" * 64,
        **changes,
    }
    return MemoryDecisionEvent.model_validate(document)


def test_the_table_and_json_carry_hashes_never_text() -> None:
    entries = [LogEntry(decision(), ReviewStatus.REVERSED)]
    table, raw = io.StringIO(), io.StringIO()
    render_log(entries, table)
    render_log_json(entries, raw)
    for out in (table.getvalue(), raw.getvalue()):
        assert "peanut" not in out
    assert "bbbbbbbbbbbb" in table.getvalue()
    assert "0.877" in table.getvalue()
    assert "reversed" in table.getvalue()
    assert '"review_status": "reversed"' in raw.getvalue()
    assert table.getvalue().endswith("1 decisions\n")


def test_reviews_the_consumer_would_reject_are_refused_with_the_reason() -> None:
    semantic = LogEntry(decision(), ReviewStatus.UNREVIEWED)
    assert _refusal(semantic, ReviewAction.REVERSE) is None
    assert _refusal(semantic, ReviewAction.CONFIRM) is None
    exact = LogEntry(decision(decision="skipped", reason="exact"), ReviewStatus.UNREVIEWED)
    assert "only semantic skips and merges" in (_refusal(exact, ReviewAction.REVERSE) or "")
    assert _refusal(exact, ReviewAction.CONFIRM) is None
    accepted = LogEntry(decision(decision="accepted", reason="new"), ReviewStatus.UNREVIEWED)
    assert "nothing to reverse" in (_refusal(accepted, ReviewAction.REVERSE) or "")
    reversed_ = LogEntry(decision(), ReviewStatus.REVERSED)
    assert "already reversed" in (_refusal(reversed_, ReviewAction.CONFIRM) or "")
