"""Copying a server collection into the named-vector layout (`memdedup migrate-collection`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qdrant_client import AsyncQdrantClient

from consumer.settings import ConfigError
from consumer.state import codec
from consumer.state.server import QdrantServerStore, as_list, vector_params


@dataclass(frozen=True, slots=True)
class CollectionCopy:
    copied: int  # points read from the source and written to the target
    with_vectors: int  # of them, memories with an embedding
    source_points: int  # counted after the copy
    target_points: int


async def copy_collection(
    *,
    client: AsyncQdrantClient,
    source: str,
    target: str,
    payload_indexes: bool = True,
    decision_times: bool = False,
    page_size: int = 256,
    on_page: Callable[[int], None] | None = None,
) -> CollectionCopy:
    """Copies every point of `source` into `target` in the named layout (created if
    missing), payloads unchanged and placeholder vectors dropped. Idempotent (same
    ids), so an interrupted copy is run again. Writes to `source` during the copy
    may be missed: stop the consumers first. ConfigError says why it will not start."""
    if source == target:
        raise ConfigError(f"--to names the collection being copied ({source!r}): pick a new name")
    if not await client.collection_exists(source):
        raise ConfigError(f"Qdrant collection {source!r} does not exist: nothing to copy")
    info = await client.get_collection(source)
    params, _ = vector_params(source, info.config.params.vectors)
    store = QdrantServerStore(
        client=client,
        collection=target,
        payload_indexes=payload_indexes,
        decision_times=decision_times,
    )
    await store.start(params.size)
    if not store.named_vectors:
        raise ConfigError(
            f"Qdrant collection {target!r} exists with one unnamed vector: copy into a new name"
        )
    copied = with_vectors = 0
    offset: Any = None
    while True:
        records, offset = await client.scroll(
            source, limit=page_size, offset=offset, with_payload=True, with_vectors=True
        )
        points = [
            codec.RawPoint(str(r.id), as_list(r.vector) or [], r.payload or {}) for r in records
        ]
        await store.upsert_as_is(points)
        copied += len(points)
        with_vectors += sum(1 for p in points if p.vector and codec.has_own_vector(p.payload))
        if on_page is not None:
            on_page(copied)
        if offset is None or not records:
            break
    source_points = (await client.count(source, exact=True)).count
    target_points = (await client.count(target, exact=True)).count
    return CollectionCopy(copied, with_vectors, source_points, target_points)
