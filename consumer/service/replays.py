"""A partition's candidates sorted out against its stored decisions: fresh events
to decide, repeats within the batch, replays of decisions taken before, and
conflicts (an event id decided for other content or scope)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from consumer.domain.models import Candidate, DecisionRecord
from schemas import DeadLetterCode


@dataclass(slots=True)
class SortedOut:
    """A partition's candidates against its stored decisions."""

    fresh: list[Candidate] = field(default_factory=list)
    # Same event id and content as a fresh one earlier in the batch.
    repeats: list[Candidate] = field(default_factory=list)
    replays: list[tuple[Candidate, DecisionRecord]] = field(default_factory=list)
    # An event id decided (or seen in this batch) for other content or scope.
    conflicts: list[Candidate] = field(default_factory=list)


def sort_out(candidates: Sequence[Candidate], prior: dict[str, DecisionRecord]) -> SortedOut:
    result = SortedOut()
    first_seen: dict[str, Candidate] = {}
    for candidate in candidates:
        event_id = candidate.event.event_id
        earlier = prior.get(event_id)
        if earlier is not None:
            fingerprint = (
                candidate.event.tenant_id,
                candidate.event.namespace,
                candidate.content_hash,
            )
            if (earlier.tenant_id, earlier.namespace, earlier.content_hash) != fingerprint:
                result.conflicts.append(candidate)
            else:
                result.replays.append((candidate, earlier))
            continue
        twin = first_seen.get(event_id)
        if twin is not None:
            if twin.scoped_hash != candidate.scoped_hash:
                result.conflicts.append(candidate)
            else:
                result.repeats.append(candidate)
            continue
        first_seen[event_id] = candidate
        result.fresh.append(candidate)
    return result


def event_ids(candidates: Sequence[Candidate]) -> list[str]:
    return list(dict.fromkeys(c.event.event_id for c in candidates))


Reason = tuple[DeadLetterCode, str, str]


def conflict_reason(candidate: Candidate) -> Reason:
    return (
        DeadLetterCode.CONFLICTING_EVENT_ID,
        "event_id was already decided for different content or scope "
        f"(this content_hash {candidate.content_hash[:16]})",
        candidate.event.event_id,
    )
