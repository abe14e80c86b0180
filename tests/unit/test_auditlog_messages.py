"""`memdedup review` refusals read as English for every decision and reason, and
`memdedup log` lists each decision's input event id in an aligned column."""

from __future__ import annotations

import io
import re

import pytest

from consumer.cli.auditlog import LogEntry, _refusal, render_log
from consumer.domain.descriptions import describe_decision
from schemas import Decision, DecisionReason, ReviewAction, ReviewStatus
from tests.unit.test_auditlog import decision

# "a" before a vowel sound, "an" before a consonant, and no "{reason} {decision}"
# pair read out raw ("an exact skipped").
BAD_ARTICLE = re.compile(r"\b(a [aeiou]|an [^aeiou\s])", re.IGNORECASE)


@pytest.mark.parametrize("kind", [Decision.SKIPPED, Decision.MERGED])
@pytest.mark.parametrize("reason", [r for r in DecisionReason if r is not DecisionReason.SEMANTIC])
def test_a_refused_reversal_reads_naturally(kind: Decision, reason: DecisionReason) -> None:
    entry = LogEntry(decision(decision=kind.value, reason=reason.value), ReviewStatus.UNREVIEWED)
    message = _refusal(entry, ReviewAction.REVERSE)
    assert message is not None
    assert message.startswith(f"decision d-1 {kind.value} the event")
    assert not BAD_ARTICLE.search(message), message
    assert f"{reason.value} {kind.value}" not in message, message
    assert "only semantic skips and merges can be reversed" in message


@pytest.mark.parametrize(
    ("kind", "reason", "expected"),
    [
        ("skipped", "exact", "skipped the event as an exact repeat of a stored memory"),
        ("merged", "exact", "merged the event as an exact repeat of a stored memory"),
        ("skipped", "recent", "skipped the event as a repeat of a recent event"),
        ("skipped", "semantic", "skipped the event as a near-duplicate of a stored memory"),
        ("merged", "compaction", "merged the event's memory during compaction"),
        ("accepted", "new", "accepted the event as new"),
    ],
)
def test_decisions_are_described_in_words(kind: str, reason: str, expected: str) -> None:
    assert describe_decision(Decision(kind), DecisionReason(reason)) == expected


def test_every_combination_has_words() -> None:
    for kind in Decision:
        for reason in DecisionReason:
            text = describe_decision(kind, reason)
            assert not BAD_ARTICLE.search(text), text
            assert "(reason:" not in text, text


def test_exact_and_recent_repeats_have_nothing_to_separate() -> None:
    for reason in ("exact", "recent"):
        entry = LogEntry(decision(decision="skipped", reason=reason), ReviewStatus.UNREVIEWED)
        assert "nothing to separate" in (_refusal(entry, ReviewAction.REVERSE) or "")


def test_the_log_table_has_an_aligned_event_id_column() -> None:
    entries = [
        LogEntry(decision(), ReviewStatus.UNREVIEWED),
        LogEntry(
            decision(decision_id="d-2", event_id="a-much-longer-event-id", reason="exact"),
            ReviewStatus.CONFIRMED,
        ),
    ]
    out = io.StringIO()
    render_log(entries, out)
    header, first, second, total = out.getvalue().splitlines()
    assert header.split() == [
        "decided_at",
        "decision_id",
        "event_id",
        "scope",
        "decision",
        "reason",
        "similarity",
        "new_hash",
        "memory",
        "guard",
        "review",
    ]
    start = header.index("event_id")
    assert first[start:].startswith("e-1 ")
    assert second[start:].startswith("a-much-longer-event-id ")
    # Every column starts at the same place on every line.
    after = header.index("scope")
    assert first[after:].startswith("acme/bio")
    assert second[after:].startswith("acme/bio")
    assert first[after - 2 : after] == "  "
    assert second[after - 2 : after] == "  "
    assert total == "2 decisions"
