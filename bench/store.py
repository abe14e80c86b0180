"""Vector store benchmark: the embedded store (qdrant-edge) against qdrant-client's
local mode, through the service's own adapters.

Usage::

    python bench/store.py [--sizes 10000,100000,1000000] [--queries 200]
                          [--local-queries 20] [--batch 256] [--json FILE]

For each size N it loads N memories (random unit 384-d vectors; payloads as
``codec.memory_payload`` writes them; 10 tenants x 5 namespaces) into one shard /
collection with the adapter's ``write`` in batches of ``--batch`` (what one consumer
batch does), then times single top-5 queries filtered on tenant + namespace + kind
(``search``, as the engine issues them) and reports p50 / p95 latency and upsert
throughput. Before timing it checks that a stored vector is found as its own top-1.

qdrant-client local mode scans every point in Python (~10 s per query at 1M), so it
is measured at N <= ``--local-max`` (default 100,000) with ``--local-queries``
queries, and larger sizes print the extrapolated (linear) latency instead.

Runs in ~3 min on 2 cores with the defaults (most of it loading 1M points).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from consumer.domain.models import MemoryRecord, Scope, SimilarityQuery
from consumer.domain.normalize import content_hash, memory_id_for
from consumer.observability.logs import configure_logging
from consumer.ports import MemoryStore
from consumer.state.edge import EdgeMemoryStore
from consumer.state.server import QdrantServerStore

DIMENSION = 384
TENANTS = [f"tenant-{i}" for i in range(10)]
NAMESPACES = ["preferences", "biography", "work", "health", "travel"]
SCOPES = [Scope(t, n) for t in TENANTS for n in NAMESPACES]
NOW = datetime(2025, 1, 1, tzinfo=UTC)
PARTITION = 0
TOP_K = 5


@dataclass
class Result:
    store: str
    size: int
    upsert_points_per_s: float | None = None
    load_s: float | None = None
    query_p50_ms: float | None = None
    query_p95_ms: float | None = None
    query_mean_ms: float | None = None
    queries: int = 0
    self_top1: bool | None = None
    skipped: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMENSION), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def memories(start: int, vectors: np.ndarray) -> list[MemoryRecord]:
    records = []
    for offset, vector in enumerate(vectors):
        number = start + offset
        scope = SCOPES[number % len(SCOPES)]
        text = f"memory number {number} of {scope.tenant_id}/{scope.namespace}"
        digest = content_hash(text)
        records.append(
            MemoryRecord(
                memory_id=memory_id_for(scope.tenant_id, scope.namespace, digest),
                tenant_id=scope.tenant_id,
                namespace=scope.namespace,
                content=text,
                content_hash=digest,
                importance=0.5,
                topics=["bench"],
                entities=[],
                merged_event_ids=[],
                origin_event_id=f"bench-{number}",
                created_at=NOW,
                updated_at=NOW,
                vector=vector.tolist(),
            )
        )
    return records


async def load(store: MemoryStore, size: int, batch: int, seed: int) -> tuple[float, np.ndarray]:
    """Write `size` memories; returns seconds spent in `write` and one stored vector
    per scope (for the self-match check)."""
    rng = np.random.default_rng(seed)
    spent = 0.0
    probes = np.zeros((len(SCOPES), DIMENSION), dtype=np.float32)
    for start in range(0, size, batch):
        vectors = unit_vectors(rng, min(batch, size - start))
        if start < len(SCOPES):
            count = min(len(SCOPES) - start, len(vectors))
            probes[start : start + count] = vectors[:count]
        records = memories(start, vectors)
        began = time.perf_counter()
        await store.write(PARTITION, records, [])
        spent += time.perf_counter() - began
    return spent, probes


async def time_queries(store: MemoryStore, count: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    vectors = unit_vectors(rng, count)
    latencies = []
    for number, vector in enumerate(vectors):
        query = SimilarityQuery(SCOPES[number % len(SCOPES)], vector.tolist(), TOP_K)
        began = time.perf_counter()
        await store.search(PARTITION, [query])
        latencies.append((time.perf_counter() - began) * 1000)
    return latencies


async def self_match(store: MemoryStore, probes: np.ndarray) -> bool:
    """A stored vector, queried in its own scope, must come back first with score ~1."""
    for index in (0, len(SCOPES) // 2, len(SCOPES) - 1):
        query = SimilarityQuery(SCOPES[index], probes[index].tolist(), TOP_K)
        (found,) = await store.search(PARTITION, [query])
        if not found or found[0].score < 0.999:
            return False
        if any(hit.memory is None or hit.memory.scope != SCOPES[index] for hit in found):
            return False
    return True


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


async def run_one(
    kind: str, size: int, queries: int, batch: int, seed: int, workdir: Path
) -> Result:
    store: MemoryStore
    if kind == "edge":
        root = workdir / f"edge-{size}"
        store = EdgeMemoryStore(root=root, collection="memories", topic="bench")
    else:
        store = QdrantServerStore.connect(collection="memories", location=":memory:")
    await store.start(DIMENSION)
    try:
        spent, probes = await load(store, size, batch, seed)
        found = await self_match(store, probes)
        # Warm-up (first query opens readers, builds caches).
        await time_queries(store, 3, seed + 1)
        latencies = await time_queries(store, queries, seed + 2)
    finally:
        await store.close()
        if kind == "edge":
            shutil.rmtree(workdir / f"edge-{size}", ignore_errors=True)
    return Result(
        store=kind,
        size=size,
        upsert_points_per_s=size / spent,
        load_s=spent,
        query_p50_ms=percentile(latencies, 50),
        query_p95_ms=percentile(latencies, 95),
        query_mean_ms=statistics.fmean(latencies),
        queries=len(latencies),
        self_top1=found,
    )


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def render(results: list[Result]) -> str:
    header = ("store", "memories", "upsert pts/s", "query p50 ms", "query p95 ms", "queries", "ok")
    rows = []
    for r in results:
        if r.skipped:
            rows.append((r.store, f"{r.size:,}", "-", r.skipped, "", "", ""))
            continue
        rows.append(
            (
                r.store,
                f"{r.size:,}",
                fmt(r.upsert_points_per_s, 0),
                fmt(r.query_p50_ms, 3),
                fmt(r.query_p95_ms, 3),
                str(r.queries),
                "yes" if r.self_top1 else "NO",
            )
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    head = "  ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True))
    return "\n".join([head, "  ".join("-" * w for w in widths), *lines])


def ratios(results: list[Result]) -> list[dict[str, Any]]:
    by_key = {(r.store, r.size): r for r in results if not r.skipped}
    out = []
    for (store, size), edge in sorted(by_key.items()):
        local = by_key.get(("local", size))
        if store != "edge" or local is None:
            continue
        assert edge.query_p50_ms is not None
        assert local.query_p50_ms is not None
        assert edge.upsert_points_per_s is not None
        assert local.upsert_points_per_s is not None
        out.append(
            {
                "size": size,
                "query_p50_edge_over_local": edge.query_p50_ms / local.query_p50_ms,
                "query_speedup": local.query_p50_ms / edge.query_p50_ms,
                "upsert_edge_over_local": edge.upsert_points_per_s / local.upsert_points_per_s,
            }
        )
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    results: list[Result] = []
    workdir = Path(tempfile.mkdtemp(prefix="memdedup-bench-store-"))
    try:
        for size in sizes:
            print(f"edge: {size:,} memories ...", flush=True)
            results.append(await run_one("edge", size, args.queries, args.batch, 1, workdir))
        local_measured: list[Result] = []
        for size in sizes:
            if size > args.local_max:
                base = max(local_measured, key=lambda r: r.size) if local_measured else None
                if base is None or base.query_p50_ms is None:
                    text = "skipped (too slow)"
                else:
                    guess = base.query_p50_ms * size / base.size
                    text = f"skipped (too slow: extrapolated {guess / 1000:,.1f} s per query)"
                results.append(Result(store="local", size=size, skipped=text))
                continue
            print(f"local: {size:,} memories ...", flush=True)
            result = await run_one("local", size, args.local_queries, args.batch, 1, workdir)
            results.append(result)
            local_measured.append(result)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    table = render(results)
    print()
    print(table)
    print()
    for ratio in ratios(results):
        print(
            f"at {ratio['size']:,}: edge/local query p50 = {ratio['query_p50_edge_over_local']:.4f}"
            f" (edge {ratio['query_speedup']:,.0f}x faster); "
            f"upsert edge/local = {ratio['upsert_edge_over_local']:.2f}"
        )
    return {
        "benchmark": "store",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": _cpus(), "platform": platform.platform()},
        "params": vars(args),
        "results": [asdict(r) for r in results],
        "ratios": ratios(results),
    }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated N")
    parser.add_argument("--queries", type=int, default=200, help="timed queries (edge)")
    parser.add_argument("--local-queries", type=int, default=20, help="timed queries (local)")
    parser.add_argument("--local-max", type=int, default=100_000, help="largest N for local mode")
    parser.add_argument("--batch", type=int, default=256, help="memories per write")
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    configure_logging(level="WARNING", fmt="console")
    report = asyncio.run(main_async(args))
    if args.json is not None:
        report["params"] = {k: str(v) for k, v in report["params"].items()}
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
