"""Real consumer processes, a seeded data set and the invariants they must keep."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from consumer.domain.guards import check_pair
from consumer.domain.normalize import normalize_content
from consumer.settings import Settings, load_settings
from consumer.state.edge import EdgeMemoryStore
from tests.integration.harness import Output, read_outputs

TENANTS = ["acme", "globex", "initech"]
NAMESPACES = ["preferences", "biography", "projects", "schedule"]

_SUBJECTS = [
    "owns a {}",
    "is learning to play the {}",
    "wants to visit {}",
    "is allergic to {}",
    "collects {}",
    "is afraid of {}",
    "grew up near {}",
    "volunteers at the {}",
    "keeps a {} on the balcony",
    "dreams of building a {}",
]
_OBJECTS = [
    "violin",
    "sailboat",
    "Iceland",
    "penicillin",
    "vintage stamps",
    "thunderstorms",
    "the Danube",
    "animal shelter",
    "lemon tree",
    "treehouse",
    "telescope",
    "Kyoto",
    "bee stings",
    "fountain pens",
    "spiders",
    "a lighthouse",
    "food bank",
    "bonsai",
    "wooden canoe",
    "cello",
    "Patagonia",
    "shellfish",
    "comic books",
    "deep water",
    "a vineyard",
    "public library",
    "beehive",
    "tiny house",
    "harmonica",
    "Morocco",
]
_PARAPHRASES = [
    "The user {}",
    "User {}, they mentioned",
    "The user says they {}",
    "User definitely {}",
]


def _facts(rng: random.Random) -> list[str]:
    facts = [f"User {s.format(o)}" for s in _SUBJECTS for o in _OBJECTS]
    rng.shuffle(facts)
    return facts


def _exact_variant(text: str, rng: random.Random) -> str:
    variants = [text.upper(), text.lower(), f"  {text}  ", text.replace(" ", "   "), f"{text}."]
    return rng.choice(variants)


@dataclass
class Dataset:
    events: list[dict[str, Any]]
    # event_id -> (tenant, namespace, fact index)
    fact_of: dict[str, tuple[str, str, int]]
    unique_texts: int

    @property
    def event_ids(self) -> set[str]:
        return set(self.fact_of)


async def build_dataset(embedder: Any, *, facts_per_scope: int = 45, seed: int = 7) -> Dataset:
    """~9.5 events per fact: the original, exact variants and paraphrases. Facts are
    kept only if the model and the guards see them as distinct from each other and
    their paraphrases as the same fact, so the invariants test the service, not
    the model."""
    rng = random.Random(seed)
    pool = _facts(rng)
    vectors = await embedder.embed([normalize_content(t) for t in pool])
    chosen: list[int] = []
    for i in range(len(pool)):
        if all(float(np.dot(vectors[i], vectors[j])) < 0.75 for j in chosen):
            chosen.append(i)
        if len(chosen) == facts_per_scope:
            break
    facts = [pool[i] for i in chosen]
    candidates = {
        fact: [p.format(fact.removeprefix("User ")) for p in _PARAPHRASES] for fact in facts
    }
    flat = [(fact, para) for fact, paras in candidates.items() for para in paras]
    para_vectors = await embedder.embed([normalize_content(p) for _, p in flat])
    fact_vectors = {fact: vectors[pool.index(fact)] for fact in facts}
    paraphrases: dict[str, list[str]] = defaultdict(list)
    for (fact, para), vector in zip(flat, para_vectors, strict=True):
        if float(np.dot(vector, fact_vectors[fact])) >= 0.90 and check_pair(fact, para) is None:
            paraphrases[fact].append(para)

    events: list[dict[str, Any]] = []
    fact_of: dict[str, tuple[str, str, int]] = {}
    for tenant in TENANTS:
        for namespace in NAMESPACES:
            scope_events: list[tuple[int, str]] = []
            for index, fact in enumerate(facts):
                texts = [fact, *paraphrases[fact][:2]]
                scope_events.extend((index, text) for text in texts)
                scope_events.extend(
                    (index, _exact_variant(rng.choice(texts), rng))
                    for _ in range(rng.randint(6, 8))
                )
            rng.shuffle(scope_events)
            for index, text in scope_events:
                event_id = f"{tenant}-{namespace}-{uuid.UUID(int=rng.getrandbits(128)).hex[:12]}"
                fact_of[event_id] = (tenant, namespace, index)
                events.append(
                    {
                        "schema_version": 1,
                        "event_id": event_id,
                        "tenant_id": tenant,
                        "namespace": namespace,
                        "content": text,
                    }
                )
    unique = len(
        {(e["tenant_id"], e["namespace"], normalize_content(e["content"])) for e in events}
    )
    return Dataset(events=events, fact_of=fact_of, unique_texts=unique)


def fault_settings(bootstrap: str, data_dir: Path, **kafka: Any) -> Settings:
    prefix = f"f{uuid.uuid4().hex[:8]}"
    return load_settings(
        kafka={
            "bootstrap_servers": bootstrap,
            "group_id": f"{prefix}-group",
            "session_timeout_ms": 1500,
            "heartbeat_interval_ms": 500,
            **kafka,
        },
        topics={
            "input": f"{prefix}.memory.extracted",
            "accepted": f"{prefix}.memory.accepted",
            "merged": f"{prefix}.memory.merged",
            "skipped": f"{prefix}.memory.skipped",
            "dlq": f"{prefix}.memory.dlq",
            "reversed": f"{prefix}.memory.reversed",
            "command_results": f"{prefix}.command-results",
            "changelog": f"{prefix}.memory.changelog",
            "partitions": 6,
        },
        qdrant={"path": str(data_dir)},
    )


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment that makes `memdedup run` use these settings."""
    env: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}__{key.upper()}", inner)
        elif value is not None:
            env[prefix] = json.dumps(value) if isinstance(value, list) else str(value)

    data = settings.model_dump(mode="json", include={"kafka", "topics", "qdrant"})
    for section, values in data.items():
        walk(f"MEMDEDUP_{section.upper()}", values)
    return env


@dataclass
class ConsumerProcess:
    """`memdedup run` as a separate process, as in production."""

    name: str
    env: dict[str, str]
    log_dir: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        log = (self.log_dir / f"{self.name}-{self.starts}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "consumer.cli", "run"],
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout: float = 60) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def consumers(
    count: int, settings: Settings, log_dir: Path, extra_env: dict[str, str] | None = None
) -> list[ConsumerProcess]:
    base = {
        **settings_env(settings),
        # FAULT_CONSUMER_LOG_LEVEL=INFO keeps each batch's records in the consumers'
        # logs (tmp_path/<name>-<start>.log) to trace a failure.
        "MEMDEDUP_LOG__LEVEL": os.environ.get("FAULT_CONSUMER_LOG_LEVEL", "WARNING"),
        "MEMDEDUP_LOG__FORMAT": "json",
        "MEMDEDUP_HTTP__PORT": "0",
        "MEMDEDUP_EMBEDDING__ONNX_CACHE_DIR": str(log_dir.parent / "onnx-cache"),
        **(extra_env or {}),
    }
    return [ConsumerProcess(f"consumer-{i}", dict(base), log_dir) for i in range(count)]


def stop_all(processes: list[ConsumerProcess]) -> None:
    for process in processes:
        process.kill(signal.SIGTERM)
    for process in processes:
        if process.process is not None:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@dataclass
class Evidence:
    events: int
    outputs: list[Output]
    decisions: dict[str, list[bytes]] = field(default_factory=dict)
    dead_letters: int = 0

    @classmethod
    def of(cls, events: int, outputs: list[Output], settings: Settings) -> Evidence:
        evidence = cls(events=events, outputs=outputs)
        for output in outputs:
            if output.topic == settings.topics.dlq:
                evidence.dead_letters += 1
                continue
            event_id = json.loads(output.value)["event_id"]
            evidence.decisions.setdefault(event_id, []).append(output.value)
        return evidence

    @property
    def duplicates_emitted(self) -> int:
        return sum(len(copies) - 1 for copies in self.decisions.values())

    def first(self, event_id: str) -> dict[str, Any]:
        return json.loads(self.decisions[event_id][0])  # type: ignore[no-any-return]

    def report(self, label: str, memories: int | None = None) -> str:
        counts = Counter(self.first(e)["decision"] for e in self.decisions)
        line = (
            f"[{label}] events={self.events} decided={len(self.decisions)} "
            f"emitted={sum(len(c) for c in self.decisions.values())} "
            f"duplicates_emitted={self.duplicates_emitted} dead_letters={self.dead_letters} "
            f"accepted={counts['accepted']} merged={counts['merged']} skipped={counts['skipped']}"
        )
        if memories is not None:
            line += f" memories={memories}"
        print(line)
        return line


def check_invariants(evidence: Evidence, dataset: Dataset) -> None:
    """What must hold whatever failed on the way."""
    missing = dataset.event_ids - set(evidence.decisions)
    assert not missing, f"{len(missing)} events have no decision, e.g. {sorted(missing)[:3]}"
    assert evidence.dead_letters == 0
    for event_id, copies in evidence.decisions.items():
        assert len(set(copies)) == 1, (
            f"{event_id}: {len(set(copies))} different decisions emitted: {differences(copies)}"
        )
    accepted_per_fact: Counter[tuple[str, str, int]] = Counter()
    for event_id in evidence.decisions:
        if evidence.first(event_id)["decision"] == "accepted":
            accepted_per_fact[dataset.fact_of[event_id]] += 1
    doubled = {fact: n for fact, n in accepted_per_fact.items() if n > 1}
    assert not doubled, f"facts with two accepted memories: {list(doubled.items())[:5]}"


def differences(copies: list[bytes]) -> dict[str, list[Any]]:
    """The fields in which the copies of one event's decision differ."""
    decoded = [json.loads(copy) for copy in dict.fromkeys(copies)]
    fields = sorted({key for copy in decoded for key in copy})
    return {
        key: [copy.get(key) for copy in decoded]
        for key in fields
        if len({json.dumps(copy.get(key), sort_keys=True) for copy in decoded}) > 1
    }


def conclude(label: str, evidence: Evidence, dataset: Dataset, memories: int) -> None:
    """Print the evidence, then check the invariants and that the store holds
    exactly the accepted memories."""
    evidence.report(label, memories)
    check_invariants(evidence, dataset)
    assert memories == len(accepted_memory_ids(evidence))


def accepted_memory_ids(evidence: Evidence) -> set[str]:
    return {
        evidence.first(e)["memory_id"]
        for e in evidence.decisions
        if evidence.first(e)["decision"] == "accepted"
    }


async def count_memories(settings: Settings, data_dir: Path) -> int:
    store = EdgeMemoryStore(
        root=data_dir, collection=settings.qdrant.collection, topic=settings.topics.input
    )
    await store.start(384)
    try:
        return sum(
            [await store.count_memories(partition=p) for p in range(settings.topics.partitions)]
        )
    finally:
        await store.close()


async def wait_for_all(
    settings: Settings, dataset: Dataset, *, timeout_s: float, settle_s: float = 2.0
) -> Evidence:
    """Read the output topics until every event has a decision (or time runs out)."""
    deadline = time.monotonic() + timeout_s
    outputs: list[Output] = []
    while time.monotonic() < deadline:
        outputs = await read_outputs(settings, at_least=len(dataset.events), timeout_s=5)
        evidence = Evidence.of(len(dataset.events), outputs, settings)
        if dataset.event_ids <= set(evidence.decisions):
            break
        await asyncio.sleep(1)
    # Read everything again (at least what was seen), then wait `settle_s` for
    # late duplicates: a read cut short would report decided events as missing.
    outputs = await read_outputs(settings, at_least=len(outputs), timeout_s=60, settle_s=settle_s)
    return Evidence.of(len(dataset.events), outputs, settings)


def consumer_warnings(log_dir: Path, *, per_file: int = 60) -> list[str]:
    """What the consumer processes of a test logged at WARNING and above (their
    structured JSON records and the Kafka client's own lines), newest last, without
    the client's routine "rebalancing" heartbeat notes."""
    found: list[str] = []
    for path in sorted(log_dir.glob("*.log")):
        kept = [
            line
            for line in path.read_text(errors="replace").splitlines()
            if _is_warning(line) and "because it is rebalancing" not in line
        ]
        found.extend(f"{path.stem}: {line}" for line in kept[-per_file:])
    return found


def _is_warning(line: str) -> bool:
    if line.startswith(("WARNING ", "ERROR ", "CRITICAL ")):
        return True
    if not line.startswith("{"):
        return False
    try:
        level = json.loads(line).get("level")
    except ValueError:
        return False
    return level in ("warning", "error", "critical")
