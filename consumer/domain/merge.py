"""Merge policies: what a merge does to the memory it folds a new event into.

Every policy unions topics, entities and lineage, keeps the higher importance and
bumps `seen_count`/`last_seen_at`; they differ in which text the memory keeps:

- keep_existing (default): the stored text.
- replace_with_newer: the new event's text (seed 001, upper band).
- keep_higher_importance: the text of the more important one; on equal
  importance both, as "older; newer" (seed 000).
- synthesize: a text written by a `Merger` (an LLM); when it fails, the policy
  falls back to replace_with_newer and the decision says so.

A memory keeps its id when its text changes: the id stays derived from the hash
of the first text, `content_hash` becomes the new text's hash and the replaced
hash is appended to `supersedes`.

Whatever the policy, a merge keeps the texts it did not keep as the memory's text
in `folded_texts`: the merged event's own text and, when the text changes, the
replaced one; never the memory's current text, never one text twice. A false merge
thus loses no text (`review reverse` gives the event's text a memory of its own
and takes it out of the target's list).

Lineage lists keep their latest `LINEAGE_LIMIT` entries; topics and entities their
latest `MAX_TOPICS` and `MAX_ENTITIES` (what one event may carry). Every merge
writes the memory again (shard, changelog, and the decision event that carries
it): lists that grew with every merge would make each merge of a popular memory
cost more than the last and, past some 7,000 merges (far fewer with new topics
each time), outgrow Kafka's 1 MB record, stalling its partition. The whole history
stays in the decision events (each merge names its memory) and in `seen_count`.
`folded_texts` is bounded by entries and by characters (`FOLDED_TEXTS_LIMIT`,
`FOLDED_CHARS_LIMIT`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Final, Protocol, TypeVar, get_args

import httpx

from consumer.domain.chat import ChatEndpoint, ChatFailed
from consumer.domain.models import Candidate, FoldedText, MemoryRecord, MergeSource
from consumer.domain.normalize import content_hash, memory_id_for, normalize_content
from consumer.errors import MemdedupError
from schemas.events import MAX_CONTENT_CHARS, MAX_ENTITIES, MAX_TOPICS, MergePolicy

if TYPE_CHECKING:
    from consumer.settings import DedupSettings, MergerSettings

T = TypeVar("T")

MergePolicyName = MergePolicy
MERGE_POLICIES: Final[tuple[str, ...]] = get_args(MergePolicyName)
DEFAULT_MERGE_POLICY: Final[MergePolicyName] = "keep_existing"
# Separator of two texts combined by keep_higher_importance on equal importance.
COMBINE_SEPARATOR: Final = "; "
# Entries kept per lineage list (merged_event_ids, merged_from, supersedes).
LINEAGE_LIMIT: Final = 100
# `folded_texts` keeps its latest 20 entries, and of those no more than fit in
# 8192 characters of text (the oldest dropped first; the newest entry is kept
# whatever its length). Texts weigh far more than the ids of the other lineage
# lists, and every merge writes the memory again (shard, changelog and the decision
# event that carries it): this keeps a memory's folded texts to 8192 characters, or
# to one text when that is longer (an event's raw text: at most 4 x 8192), some
# 128 KB of UTF-8 at worst, so each merge costs about the same and no memory nears
# Kafka's 1 MB record. Older texts stay in the decision events (and reversal
# bases) of the merges that folded them.
FOLDED_TEXTS_LIMIT: Final = 20
FOLDED_CHARS_LIMIT: Final = 8192
# Folded texts up to this length have their hashes cached (see `text_hash`).
CACHED_TEXT_CHARS: Final = 1024


class MergeFailed(MemdedupError):
    """The merger could not produce a text; the caller falls back."""


@dataclass(frozen=True, slots=True)
class MergeText:
    """One side of a synthesized merge."""

    content: str
    recorded_at: datetime


class Merger(Protocol):
    """Writes one memory text from two (older: the stored memory, newer: the event)."""

    async def merge(self, older: MergeText, newer: MergeText) -> str: ...


MERGE_PROMPT: Final = """You are merging two similar memories about the same topic.
Synthesize them into a single, comprehensive memory.

Rules:
- Combine all distinct information from both
- If there's conflicting information, prefer the NEWER memory
- Keep the result concise but complete
- Preserve the user attribution if present

OLDER memory (recorded {timestamp_a}):
{content_a}

NEWER memory (recorded {timestamp_b}):
{content_b}

Return only the merged memory text, nothing else."""


class HttpMerger:
    """A Merger over an OpenAI-compatible chat completions endpoint
    (`POST {base_url}/chat/completions`)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._chat = ChatEndpoint(
            base_url=base_url,
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            transport=transport,
        )

    @classmethod
    def from_settings(cls, merger: MergerSettings) -> HttpMerger:
        """The API key is read from the environment variable the settings name."""
        assert merger.base_url, "merger.base_url is required"
        return cls(
            base_url=merger.base_url,
            model=merger.model,
            api_key=os.environ.get(merger.api_key_env) or None,
            timeout_s=merger.timeout_s,
        )

    async def merge(self, older: MergeText, newer: MergeText) -> str:
        prompt = MERGE_PROMPT.format(
            timestamp_a=older.recorded_at.isoformat(),
            content_a=older.content,
            timestamp_b=newer.recorded_at.isoformat(),
            content_b=newer.content,
        )
        try:
            text = await self._chat.complete(prompt)
        except ChatFailed as exc:
            raise MergeFailed(str(exc)) from exc
        text = text.strip()
        normalized = normalize_content(text)
        if not normalized:
            raise MergeFailed("the merged text is empty")
        if len(normalized) > MAX_CONTENT_CHARS:
            raise MergeFailed(f"the merged text is longer than {MAX_CONTENT_CHARS} characters")
        return text


def build_merger(dedup: DedupSettings) -> Merger | None:
    """The merger of the `synthesize` policy, when a namespace uses it."""
    if not dedup.uses_merger:
        return None
    return HttpMerger.from_settings(dedup.merger)


@dataclass(frozen=True, slots=True)
class TextChoice:
    """The text a policy keeps. `vector` is None when the text needs embedding."""

    content: str
    normalized: str
    vector: list[float] | None


def fold(
    target: MemoryRecord,
    candidate: Candidate,
    now: datetime,
    text: TextChoice | None = None,
) -> MemoryRecord:
    """`target` with `candidate` folded in; with `text`, that text replaces its own."""
    event = candidate.event
    source = MergeSource(event.event_id, candidate.memory_id)
    own_text = [FoldedText(event.event_id, event.content.strip())]
    # Folded already: an earlier try stored the merge without its decision (a
    # changelog append cut short), so this is no new sighting.
    sighting = not folded_already(target, event.event_id)
    merged = replace(
        target,
        importance=max(target.importance, event.importance),
        topics=latest(union(target.topics, event.topics), MAX_TOPICS),
        entities=latest(union(target.entities, event.entities), MAX_ENTITIES),
        merged_event_ids=latest(union(target.merged_event_ids, [event.event_id])),
        merged_from=latest(
            [*target.merged_from, source]
            if source not in target.merged_from
            else list(target.merged_from)
        ),
        seen_count=target.seen_count + sighting,
        first_seen_at=target.first_seen_at or target.created_at,
        last_seen_at=now if sighting else target.last_seen_at,
        updated_at=now,
    )
    if text is None or (new_hash := content_hash(text.normalized)) == target.content_hash:
        merged.folded_texts = keep_folded(target.folded_texts, own_text, target.content_hash)
        return merged
    return replace(
        merged,
        content=text.content,
        content_hash=new_hash,
        supersedes=latest(union(target.supersedes, [target.content_hash])),
        folded_texts=keep_folded(target.folded_texts, [replaced_text(target), *own_text], new_hash),
        vector=text.vector if text.vector is not None else target.vector,
    )


def replaced_text(memory: MemoryRecord) -> FoldedText:
    """The memory's current text, as `folded_texts` records it once a merge replaces it."""
    return FoldedText(text_event_id(memory), memory.content)


def text_event_id(memory: MemoryRecord) -> str:
    """The event whose text the memory holds: its first event until a merge replaced
    the text, then the merged event whose own text it is; for a text a merge wrote
    (combined, synthesized), the latest merged event (the one that wrote it, unless
    a later merge kept it)."""
    if not memory.supersedes:
        return memory.origin_event_id
    own_id = memory_id_for(memory.tenant_id, memory.namespace, memory.content_hash)
    if own_id == memory.memory_id:
        return memory.origin_event_id
    for source in reversed(memory.merged_from):
        if source.memory_id == own_id:
            return source.event_id
    return memory.merged_from[-1].event_id if memory.merged_from else memory.origin_event_id


def keep_folded(
    folded: Sequence[FoldedText], added: Iterable[FoldedText], current_hash: str
) -> list[FoldedText]:
    """`folded` with `added` appended: without the memory's current text (hash
    `current_hash`), each text once (its first entry stays), then bounded."""
    seen = {current_hash}
    kept: list[FoldedText] = []
    for entry in (*folded, *added):
        key = text_hash(entry.content)
        if key not in seen:
            seen.add(key)
            kept.append(entry)
    return bounded_texts(kept)


def unfold(folded: Sequence[FoldedText], event_id: str, *hashes: str) -> list[FoldedText]:
    """`folded` without the entries of `event_id` and without the texts `hashes`."""
    dropped = set(hashes)
    return [
        entry
        for entry in folded
        if entry.event_id != event_id and text_hash(entry.content) not in dropped
    ]


def bounded_texts(folded: list[FoldedText]) -> list[FoldedText]:
    """The latest `FOLDED_TEXTS_LIMIT` entries within `FOLDED_CHARS_LIMIT`
    characters, the oldest dropped first; the newest entry stays."""
    kept = folded[-FOLDED_TEXTS_LIMIT:]
    chars = sum(len(entry.content) for entry in kept)
    start = 0
    while chars > FOLDED_CHARS_LIMIT and start < len(kept) - 1:
        chars -= len(kept[start].content)
        start += 1
    return kept[start:]


def text_hash(content: str) -> str:
    """The content hash of a folded text. A memory's texts are hashed again at each
    merge into it: short ones (most) are cached, long ones not, to bound the cache
    to a few MB."""
    if len(content) > CACHED_TEXT_CHARS:
        return content_hash(normalize_content(content))
    return _short_text_hash(content)


@lru_cache(maxsize=4096)
def _short_text_hash(content: str) -> str:
    return content_hash(normalize_content(content))


def folded_already(target: MemoryRecord, event_id: str) -> bool:
    """Whether `event_id` was merged into `target` already (within the bounded
    lineage)."""
    return event_id in target.merged_event_ids


def seen_again(target: MemoryRecord, now: datetime) -> MemoryRecord:
    """A skipped duplicate: the matched memory was seen once more."""
    seen = target.copy()
    seen.seen_count = target.seen_count + 1
    seen.first_seen_at = target.first_seen_at or target.created_at
    seen.last_seen_at = now
    return seen


def newer_text(candidate: Candidate, vector: list[float] | None) -> TextChoice:
    return TextChoice(candidate.event.content.strip(), candidate.normalized, vector)


def policy_text(
    policy: str, target: MemoryRecord, candidate: Candidate, vector: list[float] | None
) -> TextChoice | None:
    """The text a deterministic policy keeps (None: the existing one). Not for
    synthesize, which needs the merger. A combined text comes without a vector."""
    if policy == "replace_with_newer":
        return newer_text(candidate, vector)
    if policy == "keep_higher_importance":
        importance = candidate.event.importance
        if importance > target.importance:
            return newer_text(candidate, vector)
        if importance < target.importance:
            return None
        return combined_text(target, candidate)
    return None


def combined_text(target: MemoryRecord, candidate: Candidate) -> TextChoice | None:
    """ "older; newer", unless the newer text is already part of the older one or
    the result would exceed the content limit (then the existing text stays)."""
    older = normalize_content(target.content)
    if candidate.normalized in older:
        return None
    content = (
        target.content.rstrip().rstrip(";") + COMBINE_SEPARATOR + candidate.event.content.strip()
    )
    normalized = normalize_content(content)
    if len(normalized) > MAX_CONTENT_CHARS:
        return None
    return TextChoice(content, normalized, None)


def union(*lists: Sequence[str]) -> list[str]:
    """Order-preserving union, so merged lists are stable across replays."""
    return list(dict.fromkeys(item for values in lists for item in values))


def latest(items: list[T], limit: int | None = None) -> list[T]:
    """The last `limit` (default `LINEAGE_LIMIT`) entries of a list that merges
    extend (the oldest dropped first)."""
    limit = LINEAGE_LIMIT if limit is None else limit
    return items[-limit:] if len(items) > limit else items
