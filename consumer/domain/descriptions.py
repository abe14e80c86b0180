"""Decisions described in words, for review messages and refusals."""

from __future__ import annotations

from schemas import Decision, DecisionReason

# What a decision did, as a verb phrase that reads right after "decision X".
_VERBS = {Decision.ACCEPTED: "accepted", Decision.MERGED: "merged", Decision.SKIPPED: "skipped"}
_HOW = {
    DecisionReason.NEW: "the event as new",
    DecisionReason.EXACT: "the event as an exact repeat of a stored memory",
    DecisionReason.RECENT: "the event as a repeat of a recent event",
    DecisionReason.SEMANTIC: "the event as a near-duplicate of a stored memory",
    DecisionReason.COMPACTION: "the event's memory during compaction",
}


def describe_decision(decision: Decision, reason: DecisionReason) -> str:
    """E.g. "skipped the event as an exact repeat of a stored memory"."""
    return f"{_VERBS[decision]} {_HOW.get(reason, f'the event (reason: {reason.value})')}"
