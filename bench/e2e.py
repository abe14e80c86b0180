"""End-to-end benchmark: a real broker, the consumer as a separate process, real events.

Usage::

    python bench/e2e.py [--events 20000] [--backend onnx-int8|onnx-fp32|torch]
                        [--quick] [--json FILE]

What it does, in one run (defaults; ``--quick`` shrinks every phase):

1. In-process baselines, before the consumer starts (so nothing competes for the
   two cores):
   - **raw model**: the same embedding backend and batch size on the texts of the
     unique phase (normalised, as the engine embeds them), as one ``embed`` call;
   - the same texts **in the consumer's calls** (a diagnostic): per batch of
     ``kafka.batch_max_records`` events, one call per partition, queued at once;
     how well texts fill the model's batches depends on the texts per call, so this
     over the raw model is what the call shape costs, and e2e over this is what
     the rest of the pipeline costs;
   - **naive pipeline** (the seeds' shape): per event parse, embed one, query one,
     upsert one, publish one with ``send_and_wait``; no batching; on a sample of
     ``--naive-events`` events of the same mix.
2. Starts a local broker (Tansu) and ``python -m consumer.cli run`` as a separate
   process, configured only through ``MEMDEDUP_*`` variables (bootstrap, session
   1500 ms / heartbeat 500 ms, a temporary embedded store, the backend), and waits
   for warm-up events in every scope to be decided.
3. **mixed** phase: publishes N events (30% exact repeats: case / spacing / full-stop
   variants of earlier texts; 25% paraphrases from alternative templates of earlier
   facts; 45% unique facts; 10 tenants x 5 namespaces) as fast as the producer goes,
   and waits until every event has a decision (memory.accepted/merged/skipped) or a
   dead letter. Reports events/s, latency from the publish timestamp to the decision
   record's broker timestamp (p50/p95/p99: under a backlog, mostly queueing), and the
   consumer's CPU seconds.
4. **unique** phase: ``--unique-events`` new facts only (every one needs the model and
   becomes a memory): e2e events/s over the raw model's texts/s on the same texts is
   the "e2e on unique events / raw model" ratio.
5. **exact-duplicates** phase: ``--dup-events`` variants of already stored texts.
6. **steady** phase: 50 events/s (same mix, new texts) for 20 s; p99 latency.

The consumer's CPU time and peak RSS (VmHWM) are read from psutil or /proc.
Targets are printed next to the figures, never asserted.

If consumer/app/factory.py does not build its embedder with ``consumer.embedding.embedders.load_embedder``
yet (so it would ignore ``MEMDEDUP_EMBEDDING__BACKEND``), the consumer is started
through ``bench/e2e.py --consumer-shim``, which routes that one call to
``load_embedder`` and otherwise runs ``memdedup run`` unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from consumer.embedding.embedders import available_cpus
from consumer.kafka.localbroker import LocalBroker
from consumer.kafka.topics import ensure_topics
from consumer.settings import EmbeddingSettings, Settings, load_settings

REPO = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()
CPUS = available_cpus()
TENANTS = [f"tenant-{i}" for i in range(10)]
NAMESPACES = ["preferences", "biography", "work", "health", "travel"]
SCOPES = [(t, n) for t in TENANTS for n in NAMESPACES]

TARGETS = {
    "e2e_unique_over_raw": 0.85,
    "e2e_over_naive": 5.0,
    "exact_dup_events_per_s": 5000.0,
    "steady_p99_ms": 50.0,
    "peak_rss_mb": 1024.0,
}

# --------------------------------------------------------------------------- texts

PEOPLE = [
    "The user", "Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan",
    "Judy", "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor",
    "Walter", "Yusuf", "Zoe", "Priya", "Kenji", "Lucia", "Mateo", "Amara", "Sven", "Leila",
    "Tomasz",
]  # fmt: skip
THINGS = [
    "Python", "Rust", "Go", "TypeScript", "Kotlin", "green tea", "espresso", "oat milk",
    "sparkling water", "hiking", "bouldering", "cycling", "jazz", "techno", "podcasts",
    "audiobooks", "sci-fi novels", "board games", "chess", "sushi", "ramen", "tacos",
    "dark mode", "vim", "emacs", "mechanical keyboards", "window seats", "early flights",
    "video calls", "written updates", "Linux", "macOS", "PostgreSQL", "SQLite", "Kafka",
    "Qdrant", "pandas", "polars", "Django", "FastAPI",
]  # fmt: skip
OTHERS = [
    "Java", "C++", "coffee", "cow milk", "soda", "running", "swimming", "pop music",
    "television", "paperbacks", "crosswords", "pizza", "light mode", "nano", "aisle seats",
    "late flights", "phone calls", "long meetings", "Windows", "MySQL", "RabbitMQ", "Flask",
    "spreadsheets", "cold weather",
]  # fmt: skip
PLACES = [
    "Paris", "Berlin", "Lisbon", "Tokyo", "Osaka", "Toronto", "Vancouver", "Nairobi",
    "Lagos", "Sydney", "Melbourne", "Austin", "Denver", "Seattle", "Boston", "Madrid",
    "Warsaw", "Prague", "Vienna", "Oslo", "Helsinki", "Dublin", "Edinburgh", "Mumbai",
    "Bangalore", "Seoul", "Taipei", "Lima", "Bogota", "Montreal",
]  # fmt: skip
ROLES = [
    "data engineer", "product manager", "nurse", "teacher", "site reliability engineer",
    "designer", "accountant", "chef", "lawyer", "researcher", "pilot", "architect",
    "sales lead", "pharmacist", "mechanic", "journalist", "game developer", "photographer",
]  # fmt: skip
COMPANIES = [
    "a fintech startup", "a hospital", "a public school", "a game studio", "a bank",
    "a logistics company", "a university lab", "an airline", "a law firm", "a bakery",
    "a car maker", "a newspaper", "a cloud provider", "a museum", "an energy company",
]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ALLERGENS = [
    "peanuts", "shellfish", "penicillin", "pollen", "cats", "latex", "gluten", "eggs",
    "soy", "bee stings", "dust mites", "sesame",
]  # fmt: skip
HOURS = ["7am", "8am", "9am", "10am", "noon", "2pm", "4pm", "6pm", "8pm"]
PETS = ["a cat", "two cats", "a dog", "a parrot", "three goldfish", "a rabbit", "a tortoise"]
PET_NAMES = ["Miso", "Tofu", "Biscuit", "Luna", "Pixel", "Mango", "Pepper", "Nori", "Ziggy"]

# Each family: alternative phrasings of one fact, and its slot lists.
FAMILIES: list[tuple[list[str], dict[str, list[str]]]] = [
    (
        [
            "{p} prefers {a} over {b}.",
            "{p} likes {a} better than {b}.",
            "Given the choice, {p} picks {a} rather than {b}.",
        ],
        {"p": PEOPLE, "a": THINGS, "b": OTHERS},
    ),
    (
        [
            "{p} lives in {c} and works as a {r}.",
            "{p} is a {r} based in {c}.",
            "{p} works as a {r} and has a home in {c}.",
        ],
        {"p": PEOPLE, "c": PLACES, "r": ROLES},
    ),
    (
        [
            "{p} is allergic to {x}; keep it out of any plans.",
            "{p} has an allergy to {x}, so avoid it in plans.",
            "Avoid {x} in plans: {p} is allergic to it.",
        ],
        {"p": PEOPLE, "x": ALLERGENS},
    ),
    (
        [
            "{p} has a weekly meeting with the team every {d} at {h}.",
            "Every {d} at {h}, {p} meets the team for the weekly sync.",
            "{p}'s weekly team sync happens on {d}s at {h}.",
        ],
        {"p": PEOPLE, "d": DAYS, "h": HOURS},
    ),
    (
        [
            "{p} works at {o} as a {r}.",
            "{p} is employed by {o}, working as a {r}.",
            "{p}'s job: {r} at {o}.",
        ],
        {"p": PEOPLE, "o": COMPANIES, "r": ROLES},
    ),
    (
        [
            "{p} has {k} named {n}.",
            "{p} owns {k} called {n}.",
            "{p}'s pet situation: {k}, named {n}.",
        ],
        {"p": PEOPLE, "k": PETS, "n": PET_NAMES},
    ),
    (
        [
            "{p} wants to visit {c} next year and is saving for the trip.",
            "{p} is saving money for a trip to {c} next year.",
            "Next year {p} hopes to travel to {c}; saving up for it now.",
        ],
        {"p": PEOPLE, "c": PLACES},
    ),
    (
        [
            "{p} usually drinks {a} in the morning and avoids {b}.",
            "In the mornings {p} has {a}, never {b}.",
            "{p}'s morning routine includes {a} instead of {b}.",
        ],
        {"p": PEOPLE, "a": THINGS, "b": OTHERS},
    ),
]


@dataclass(frozen=True)
class Fact:
    family: int
    slots: tuple[tuple[str, str], ...]

    def text(self, variant: int) -> str:
        templates = FAMILIES[self.family][0]
        return templates[variant % len(templates)].format(**dict(self.slots))


@dataclass
class Event:
    event_id: str
    tenant: str
    namespace: str
    content: str
    label: str  # unique | paraphrase | repeat | warmup

    def encode(self) -> bytes:
        return json.dumps(
            {
                "schema_version": 1,
                "event_id": self.event_id,
                "tenant_id": self.tenant,
                "namespace": self.namespace,
                "content": self.content,
                "importance": 0.5,
                "topics": ["bench"],
                "source": {"agent_id": "bench"},
            }
        ).encode()

    @property
    def key(self) -> bytes:
        return f"{self.tenant}/{self.namespace}".encode()


def surface_variant(text: str, rng: random.Random) -> str:
    """Same normalised text: case, spacing or a trailing full stop change."""
    choice = rng.randrange(4)
    if choice == 0:
        return text.upper()
    if choice == 1:
        return "  " + text.replace(" ", "   ") + "  "
    if choice == 2:
        return text.rstrip(".") if text.endswith(".") else text + "."
    return text.lower()


class Generator:
    """Events of the mix, each scope with its own history of facts and texts."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.used: set[tuple[str, str, Fact]] = set()
        self.facts: dict[tuple[str, str], list[Fact]] = {scope: [] for scope in SCOPES}
        self.texts: dict[tuple[str, str], list[str]] = {scope: [] for scope in SCOPES}

    def _new_fact(self, scope: tuple[str, str]) -> Fact:
        while True:
            family = self.rng.randrange(len(FAMILIES))
            slots = tuple(
                (name, self.rng.choice(values)) for name, values in FAMILIES[family][1].items()
            )
            fact = Fact(family, slots)
            if (scope[0], scope[1], fact) not in self.used:
                self.used.add((scope[0], scope[1], fact))
                return fact

    def event(self, event_id: str, mix: tuple[float, float] = (0.30, 0.25)) -> Event:
        repeat_share, paraphrase_share = mix
        scope = self.rng.choice(SCOPES)
        roll = self.rng.random()
        if roll < repeat_share and self.texts[scope]:
            text = surface_variant(self.rng.choice(self.texts[scope]), self.rng)
            return Event(event_id, *scope, text, "repeat")
        if roll < repeat_share + paraphrase_share and self.facts[scope]:
            fact = self.rng.choice(self.facts[scope])
            text = fact.text(self.rng.randrange(1, 3))
            self.texts[scope].append(text)
            return Event(event_id, *scope, text, "paraphrase")
        fact = self._new_fact(scope)
        text = fact.text(0)
        self.facts[scope].append(fact)
        self.texts[scope].append(text)
        return Event(event_id, *scope, text, "unique")

    def repeat(self, event_id: str, pool: Sequence[tuple[str, str, str]]) -> Event:
        """A surface variant of one of `pool` (tenant, namespace, stored text)."""
        tenant, namespace, text = self.rng.choice(pool)
        return Event(event_id, tenant, namespace, surface_variant(text, self.rng), "repeat")


# --------------------------------------------------------------------- process


@dataclass
class ProcessStats:
    cpu_s: float
    rss_mb: float
    peak_rss_mb: float


def process_stats(pid: int) -> ProcessStats:
    try:
        psutil: Any = importlib.import_module("psutil")
        proc = psutil.Process(pid)
        times = proc.cpu_times()
        rss = proc.memory_info().rss
        cpu = times.user + times.system
    except ImportError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    peak = rss
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return ProcessStats(cpu, rss / 2**20, peak / 2**20)


def app_uses_load_embedder() -> bool:
    import consumer.app.factory

    return hasattr(consumer.app.factory, "load_embedder")


FETCH_WAIT_ENV = "MEMDEDUP_BENCH_FETCH_MAX_WAIT_MS"


def consumer_shim() -> int:
    """`memdedup run`, with (a) the app's embedder built by load_embedder while
    app.py does not do so itself, and (b) with --fetch-max-wait-ms, that value given
    to the input subscriber (a what-if: the service has no such setting)."""
    from consumer.cli.main import main
    from consumer.embedding.embedders import load_embedder

    app_module: Any = importlib.import_module("consumer.app.factory")
    if not hasattr(app_module, "load_embedder"):

        class _Loader:
            @staticmethod
            async def load(**_: Any) -> Any:
                settings = load_settings()
                return await load_embedder(settings.embedding, data_dir=settings.qdrant.path)

        app_module.SentenceTransformerEmbedder = _Loader
    wait_ms = os.environ.get(FETCH_WAIT_ENV)
    if wait_ms:
        kafka_module: Any = importlib.import_module("faststream.kafka")
        original = kafka_module.KafkaBroker.subscriber

        def subscriber(self: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("fetch_max_wait_ms", int(wait_ms))
            return original(self, *args, **kwargs)

        kafka_module.KafkaBroker.subscriber = subscriber
    return main(["run"])


# ------------------------------------------------------------------ measuring


@dataclass
class PhaseResult:
    name: str
    events: int
    seconds: float
    events_per_s: float
    latency_ms: dict[str, float]
    cpu_s: float
    labels: dict[str, int]
    outcomes: dict[str, dict[str, int]]
    dead_letters: int
    extra: dict[str, Any] = field(default_factory=dict)


def pct(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    array = np.asarray(values)
    return {
        "p50": float(np.percentile(array, 50)),
        "p95": float(np.percentile(array, 95)),
        "p99": float(np.percentile(array, 99)),
        "max": float(array.max()),
    }


_EVENT_ID = re.compile(rb'"event_id":"((?:[^"\\]|\\.)*)"')
_REASON = re.compile(rb'"reason":"(\w+)"')
_DECIDED_AT = re.compile(rb'"decided_at":"([^"]+)"')


class Outputs:
    """Reads the decision and dead-letter topics as they are written (the local
    broker's end offsets count batches, not records, so they cannot tell completion)."""

    def __init__(self, settings: Settings) -> None:
        topics = settings.topics
        self.topics = [topics.accepted, topics.merged, topics.skipped, topics.dlq]
        self.dlq = topics.dlq
        self.partitions = [
            TopicPartition(t, p) for t in self.topics for p in range(topics.partitions)
        ]
        self.reader = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka.bootstrap_servers,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=8 * 2**20,
        )
        # Everything read so far: event_id -> (topic, reason, broker timestamp ms).
        self.seen: dict[str, tuple[str, str, int]] = {}
        # event_id -> decided_at (ms), from the decision body: splits the latency.
        self.decided_at: dict[str, float] = {}

    async def start(self) -> None:
        await self.reader.start()
        self.reader.assign(self.partitions)
        await self.reader.seek_to_beginning()

    def _add(self, record: Any) -> None:
        if record.topic == self.dlq:
            headers = dict(record.headers or ())
            event_id = headers.get("event_id", b"").decode()
            reason = headers.get("error_code", b"").decode()
        else:
            # Only two fields are needed: a regex is far cheaper than json.loads.
            id_match, reason_match = _EVENT_ID.search(record.value), _REASON.search(record.value)
            if id_match is None:
                return
            event_id = json.loads(b'"' + id_match.group(1) + b'"')
            reason = reason_match.group(1).decode() if reason_match else "?"
            decided = _DECIDED_AT.search(record.value)
            if decided is not None and event_id not in self.decided_at:
                stamp = datetime.fromisoformat(decided.group(1).decode().replace("Z", "+00:00"))
                self.decided_at[event_id] = stamp.timestamp() * 1000
        self.seen.setdefault(event_id, (record.topic, reason, record.timestamp))

    async def collect(
        self, expected: set[str], timeout_s: float
    ) -> dict[str, tuple[str, str, int]]:
        """Wait until every expected event id has an output; returns
        event_id -> (topic, decision reason, broker timestamp ms)."""
        deadline = time.monotonic() + timeout_s
        missing = {e for e in expected if e not in self.seen}
        while missing and time.monotonic() < deadline:
            batches = await self.reader.getmany(timeout_ms=300, max_records=10_000)
            for records in batches.values():
                for record in records:
                    self._add(record)
            missing = {e for e in missing if e not in self.seen}
            if missing and not batches:
                await asyncio.sleep(0.2)
        if missing:
            print(f"  WARNING: {len(missing)} events without a decision after {timeout_s:.0f} s")
        return {e: self.seen[e] for e in expected if e in self.seen}

    async def stop(self) -> None:
        await self.reader.stop()


async def publish(
    producer: AIOKafkaProducer, topic: str, events: Sequence[Event], rate: float | None = None
) -> dict[str, float]:
    """Send events (at `rate` per second if given); returns event_id -> send time (ms)."""
    sent: dict[str, float] = {}
    futures = []
    started = time.monotonic()
    for number, event in enumerate(events):
        if rate is not None:
            delay = started + number / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        now_ms = time.time() * 1000
        sent[event.event_id] = now_ms
        futures.append(
            await producer.send(topic, event.encode(), key=event.key, timestamp_ms=int(now_ms))
        )
    await asyncio.gather(*futures)
    return sent


async def run_phase(
    name: str,
    events: Sequence[Event],
    *,
    producer: AIOKafkaProducer,
    outputs: Outputs,
    topic: str,
    pid: int,
    broker_pid: int | None = None,
    rate: float | None = None,
    timeout_s: float = 600.0,
) -> PhaseResult:
    print(f"{name}: {len(events):,} events" + (f" at {rate:g}/s" if rate else ""), flush=True)
    before = process_stats(pid)
    # The cores are shared: what the broker and this process (producer and reader)
    # take meanwhile is CPU the consumer does not get.
    broker_before = process_stats(broker_pid).cpu_s if broker_pid else 0.0
    bench_before = time.process_time()
    publish_began = time.monotonic()
    sent = await publish(producer, topic, events, rate)
    publish_s = time.monotonic() - publish_began
    found = await outputs.collect({e.event_id for e in events}, timeout_s)
    after = process_stats(pid)
    broker_cpu_s = (process_stats(broker_pid).cpu_s - broker_before) if broker_pid else 0.0
    bench_cpu_s = time.process_time() - bench_before
    first_sent = min(sent.values())
    last_decided = max((ts for _, _, ts in found.values()), default=first_sent)
    seconds = max(1e-3, (last_decided - first_sent) / 1000)
    latencies = [found[e][2] - sent[e] for e in sent if e in found]
    # Publish -> decided (fetch, parse, checks) and decided -> decision record
    # (store write, publish and acknowledgement).
    to_decided = [outputs.decided_at[e] - sent[e] for e in sent if e in outputs.decided_at]
    to_record = [found[e][2] - outputs.decided_at[e] for e in found if e in outputs.decided_at]
    outcomes: dict[str, Counter[str]] = {}
    for event in events:
        topic_reason = found.get(event.event_id)
        outcome = "missing" if topic_reason is None else _outcome(topic_reason, outputs.dlq)
        outcomes.setdefault(event.label, Counter())[outcome] += 1
    result = PhaseResult(
        name=name,
        events=len(events),
        seconds=seconds,
        events_per_s=len(events) / seconds,
        latency_ms=pct(latencies),
        cpu_s=after.cpu_s - before.cpu_s,
        labels=dict(Counter(e.label for e in events)),
        outcomes={label: dict(c) for label, c in outcomes.items()},
        dead_letters=sum(1 for t, _, _ in found.values() if t == outputs.dlq),
        extra={
            "publish_s": publish_s,
            "latency_publish_to_decided_ms": pct(to_decided),
            "latency_decided_to_record_ms": pct(to_record),
            "broker_cpu_s": broker_cpu_s,
            "bench_cpu_s": bench_cpu_s,
        },
    )
    print(
        f"  {result.events_per_s:,.0f} events/s over {seconds:.1f} s; latency "
        + ", ".join(f"{k} {v:,.0f} ms" for k, v in result.latency_ms.items())
        + f"; consumer CPU {result.cpu_s:.1f} s; publishing took {publish_s:.1f} s",
        flush=True,
    )
    print(
        f"    CPU meanwhile: broker {broker_cpu_s:.1f} s, this process (producer and reader) "
        f"{bench_cpu_s:.1f} s; all three {result.cpu_s + broker_cpu_s + bench_cpu_s:.1f} s "
        f"of {seconds * CPUS:.1f} s on {CPUS} CPUs",
        flush=True,
    )
    for label, key in (
        ("to decided", "latency_publish_to_decided_ms"),
        ("to record", "latency_decided_to_record_ms"),
    ):
        split = result.extra[key]
        if split:
            print(f"    {label}: " + ", ".join(f"{k} {v:,.0f} ms" for k, v in split.items()))
    return result


def _outcome(found: tuple[str, str, int], dlq: str) -> str:
    topic, reason, _ = found
    if topic == dlq:
        return f"dlq:{reason}"
    return f"{topic.rsplit('.', 1)[-1]}:{reason}"


# ------------------------------------------------------------------ baselines


async def raw_model(embedder: Any, texts: list[str]) -> dict[str, float]:
    await embedder.embed(texts[:64])  # warm-up
    began, cpu = time.perf_counter(), time.process_time()
    await embedder.embed(texts)
    seconds = time.perf_counter() - began
    return {
        "texts": len(texts),
        "seconds": seconds,
        "texts_per_s": len(texts) / seconds,
        "cpu_s": time.process_time() - cpu,
    }


async def raw_model_in_consumer_calls(
    embedder: Any, events: Sequence[Event], *, partitions: int, batch_records: int
) -> dict[str, float]:
    """The same texts in the calls the consumer makes of them: per batch of
    `batch_records` (in publish order), one call per partition, the batch's calls
    queued at once. A diagnostic: the texts per call decide how well the model's
    batches fill (e2e unique / this = what the pipeline costs beyond call shape)."""
    from consumer.domain.normalize import normalize_content
    from consumer.kafka.partitioning import canonical_partition

    began, cpu = time.perf_counter(), time.process_time()
    calls = 0
    for start in range(0, len(events), batch_records):
        by_partition: dict[int, list[str]] = {}
        for event in events[start : start + batch_records]:
            partition = canonical_partition(event.key, partitions)
            by_partition.setdefault(partition, []).append(normalize_content(event.content))
        calls += len(by_partition)
        await asyncio.gather(*(embedder.embed(texts) for texts in by_partition.values()))
    seconds = time.perf_counter() - began
    return {
        "texts": len(events),
        "calls": calls,
        "seconds": seconds,
        "texts_per_s": len(events) / seconds,
        "cpu_s": time.process_time() - cpu,
    }


async def naive_pipeline(
    embedder: Any, events: Sequence[Event], *, bootstrap: str, workdir: Path
) -> dict[str, float]:
    """The seeds' shape: one event at a time, every step awaited."""
    from datetime import datetime as dt

    from consumer.domain.models import MemoryRecord, Scope, SimilarityQuery
    from consumer.domain.normalize import content_hash, memory_id_for, normalize_content
    from consumer.state.edge import EdgeMemoryStore
    from schemas import MemoryExtracted

    store = EdgeMemoryStore(root=workdir / "naive", collection="memories", topic="naive")
    await store.start(embedder.dimension)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    decisions: Counter[str] = Counter()
    try:
        began, cpu = time.perf_counter(), time.process_time()
        for event in events:
            parsed = MemoryExtracted.model_validate_json(event.encode())
            text = normalize_content(parsed.content)
            vector = (await embedder.embed([text]))[0].tolist()
            scope = Scope(parsed.tenant_id, parsed.namespace)
            (found,) = await store.search(0, [SimilarityQuery(scope, vector, 5)])
            score = found[0].score if found else 0.0
            decision = "skipped" if score >= 0.96 else "merged" if score >= 0.84 else "accepted"
            decisions[decision] += 1
            if decision == "accepted":
                now = dt.now(UTC)
                digest = content_hash(text)
                memory = MemoryRecord(
                    memory_id=memory_id_for(scope.tenant_id, scope.namespace, digest),
                    tenant_id=scope.tenant_id,
                    namespace=scope.namespace,
                    content=parsed.content,
                    content_hash=digest,
                    importance=parsed.importance,
                    topics=list(parsed.topics),
                    entities=list(parsed.entities),
                    merged_event_ids=[],
                    origin_event_id=parsed.event_id,
                    created_at=now,
                    updated_at=now,
                    vector=vector,
                )
                await store.write(0, [memory], [])
            payload = json.dumps({"event_id": parsed.event_id, "decision": decision}).encode()
            await producer.send_and_wait("bench.naive.decisions", payload, key=event.key)
        seconds = time.perf_counter() - began
        cpu_s = time.process_time() - cpu
    finally:
        await producer.stop()
        await store.close()
    return {
        "events": len(events),
        "seconds": seconds,
        "events_per_s": len(events) / seconds,
        "cpu_s": cpu_s,
        **{f"decided_{k}": float(v) for k, v in decisions.items()},
    }


# ------------------------------------------------------------------------ main


@dataclass
class Plan:
    events: int
    unique_events: int
    dup_events: int
    steady_rate: float
    steady_s: float
    naive_events: int


def plan_for(args: argparse.Namespace) -> Plan:
    if args.quick:
        return Plan(
            events=args.events or 2000,
            unique_events=args.unique_events or 2000,
            dup_events=args.dup_events or 10_000,
            steady_rate=args.steady_rate,
            steady_s=args.steady_s or 10.0,
            naive_events=args.naive_events or 200,
        )
    return Plan(
        events=args.events or 20_000,
        unique_events=args.unique_events or 5000,
        dup_events=args.dup_events or 20_000,
        steady_rate=args.steady_rate,
        steady_s=args.steady_s or 20.0,
        naive_events=args.naive_events or 500,
    )


def start_consumer(env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m consumer.cli run`, or the shim while app.py ignores the backend
    (or for the fetch-wait what-if)."""
    if app_uses_load_embedder() and FETCH_WAIT_ENV not in env:
        command = [sys.executable, "-m", "consumer.cli", "run"]
    else:
        command = [sys.executable, str(SCRIPT), "--consumer-shim"]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    return process, " ".join(command[1:])


def consumer_settings(args: argparse.Namespace) -> dict[str, str]:
    """The `--consumer-setting NAME=VALUE` pairs."""
    pairs = (item.partition("=") for item in getattr(args, "consumer_setting", None) or [])
    return {name: value for name, _, value in pairs}


def consumer_env(args: argparse.Namespace, bootstrap: str, workdir: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MEMDEDUP_")  # only what this run sets
    }
    env.update(
        {
            "MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
            "MEMDEDUP_KAFKA__GROUP_ID": "bench-e2e",
            "MEMDEDUP_KAFKA__SESSION_TIMEOUT_MS": "1500",
            "MEMDEDUP_KAFKA__HEARTBEAT_INTERVAL_MS": "500",
            "MEMDEDUP_QDRANT__PATH": str(workdir / "data"),
            "MEMDEDUP_EMBEDDING__BACKEND": args.backend,
            "MEMDEDUP_EMBEDDING__BATCH_SIZE": str(args.embed_batch),
            "MEMDEDUP_EMBEDDING__ONNX_CACHE_DIR": str(workdir / "models"),
            "MEMDEDUP_LOG__LEVEL": args.log_level,
            "MEMDEDUP_LOG__FORMAT": "json",
            "HF_HUB_OFFLINE": "1",
        }
    )
    env.update(consumer_settings(args))
    if args.fetch_max_wait_ms:
        env[FETCH_WAIT_ENV] = str(args.fetch_max_wait_ms)
    return env


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from consumer.domain.normalize import normalize_content
    from consumer.embedding.embedders import load_embedder
    from consumer.settings import EmbeddingSettings

    plan = plan_for(args)
    generator = Generator(args.seed)
    mixed = [generator.event(f"mixed-{i}") for i in range(plan.events)]
    # New facts only, published after the mixed phase: the model-bound case.
    unique_phase = [
        generator.event(f"unique-{i}", mix=(0.0, 0.0)) for i in range(plan.unique_events)
    ]
    unique_texts = [normalize_content(e.content) for e in unique_phase]
    naive_sample = Generator(args.seed + 1)
    naive_events = [naive_sample.event(f"naive-{i}") for i in range(plan.naive_events)]

    workdir = Path(tempfile.mkdtemp(prefix="memdedup-bench-e2e-"))
    report: dict[str, Any] = {
        "benchmark": "e2e",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": CPUS, "platform": platform.platform()},
        "backend": args.backend,
        "plan": vars(plan),
        "embed_batch": args.embed_batch,
        "log_level": args.log_level,
        "fetch_max_wait_ms": args.fetch_max_wait_ms or None,
    }
    process: subprocess.Popen[bytes] | None = None
    with LocalBroker() as broker:
        settings = load_settings(
            kafka={"bootstrap_servers": broker.bootstrap_servers, "group_id": "bench-e2e"}
        )
        await ensure_topics(settings)

        # 1. In-process baselines, before the consumer exists.
        print(f"loading the {args.backend} model in-process for the baselines ...", flush=True)
        embedder = await load_embedder(
            EmbeddingSettings(backend=args.backend, batch_size=args.embed_batch),
            data_dir=workdir,
        )
        report["raw_model"] = await raw_model(embedder, unique_texts)
        print(
            f"raw model: {report['raw_model']['texts_per_s']:,.0f} texts/s "
            f"({len(unique_texts):,} unique texts, batch {args.embed_batch})",
            flush=True,
        )
        report["raw_model_consumer_calls"] = await raw_model_in_consumer_calls(
            embedder,
            unique_phase,
            partitions=settings.topics.partitions,
            batch_records=int(
                consumer_settings(args).get(
                    "MEMDEDUP_KAFKA__BATCH_MAX_RECORDS", settings.kafka.batch_max_records
                )
            ),
        )
        print(
            "raw model in the consumer's calls: "
            f"{report['raw_model_consumer_calls']['texts_per_s']:,.0f} texts/s "
            f"({report['raw_model_consumer_calls']['calls']:,} calls)",
            flush=True,
        )
        report["naive"] = await naive_pipeline(
            embedder, naive_events, bootstrap=broker.bootstrap_servers, workdir=workdir
        )
        print(f"naive pipeline: {report['naive']['events_per_s']:,.1f} events/s", flush=True)
        await embedder.close()
        del embedder

        # 2. The consumer, as a separate process.
        log_path = workdir / "consumer.log"
        process, command = start_consumer(
            consumer_env(args, broker.bootstrap_servers, workdir), log_path
        )
        report["consumer_command"] = command
        print(f"started the consumer: {command} (log: {log_path})", flush=True)
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=2
        )
        await producer.start()
        outputs = Outputs(settings)
        await outputs.start()
        try:
            topic = settings.topics.input
            started = time.monotonic()
            warmup = [
                Event(f"warmup-{i}", t, n, f"warm-up note number {i} for {t} {n}", "warmup")
                for i, (t, n) in enumerate(SCOPES)
            ]
            await publish(producer, topic, warmup)
            found = await outputs.collect({e.event_id for e in warmup}, timeout_s=180)
            if len(found) < len(warmup):
                raise RuntimeError(f"consumer did not start; see {log_path}")
            report["startup_s"] = time.monotonic() - started
            print(f"consumer ready in {report['startup_s']:.1f} s", flush=True)

            common = {
                "producer": producer,
                "outputs": outputs,
                "topic": topic,
                "pid": process.pid,
                "broker_pid": broker.pid,
            }
            phases = [await run_phase("mixed", mixed, **common)]
            phases.append(await run_phase("unique", unique_phase, **common))
            # Variants of texts stored as memories of their own: every one is an
            # exact hit (a repeat of a merged text would need the model again).
            stored = [
                (e.tenant, e.namespace, e.content)
                for e in mixed
                if outputs.seen.get(e.event_id, ("",))[0] == settings.topics.accepted
            ]
            dups = [generator.repeat(f"dup-{i}", stored) for i in range(plan.dup_events)]
            phases.append(await run_phase("exact-duplicates", dups, **common))
            steady_count = int(plan.steady_rate * plan.steady_s)
            steady = [generator.event(f"steady-{i}") for i in range(steady_count)]
            phases.append(await run_phase("steady", steady, rate=plan.steady_rate, **common))
            stats = process_stats(process.pid)
            report["consumer"] = {
                "peak_rss_mb": stats.peak_rss_mb,
                "rss_mb": stats.rss_mb,
                "cpu_s_total": stats.cpu_s,
            }
            report["phases"] = [vars(p) for p in phases]
        finally:
            await outputs.stop()
            await producer.stop()
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
            if args.keep_log:
                shutil.copyfile(log_path, args.keep_log)
            shutil.rmtree(workdir, ignore_errors=True)
    summarise(report)
    return report


def cpu_budget(report: dict[str, Any], unique: dict[str, Any]) -> dict[str, float]:
    """Where the unique phase's CPU goes, against what the unique target allows.

    All processes on the machine share its CPUs (consumer, broker, this one), so
    with none of it idle the unique phase runs at most at CPUs / (CPU per event).
    The target allows CPU per event up to CPUs / (0.85 x the raw model's rate); the
    model's own share is what it costs in the consumer's calls."""
    events = unique["events"]
    extra = unique["extra"]
    cpu_s = unique["cpu_s"] + extra["broker_cpu_s"] + extra["bench_cpu_s"]
    per_event = cpu_s / events
    model = report["raw_model_consumer_calls"]
    model_per_text = model["cpu_s"] / model["texts"]
    cpus = report["machine"]["cpus"]
    raw = report["raw_model"]["texts_per_s"]
    return {
        "unique_cpu_ms_per_event": 1000 * per_event,
        "model_cpu_ms_per_text": 1000 * model_per_text,
        "other_cpu_ms_per_event": 1000 * (per_event - model_per_text),
        "no_idle_unique_over_raw": cpus / per_event / raw,
        "target_cpu_ms_per_event": 1000 * cpus / (TARGETS["e2e_unique_over_raw"] * raw),
    }


def summarise(report: dict[str, Any]) -> None:
    phases = {p["name"]: p for p in report["phases"]}
    mixed, dups, steady = phases["mixed"], phases["exact-duplicates"], phases["steady"]
    model_events = mixed["labels"].get("unique", 0) + mixed["labels"].get("paraphrase", 0)
    raw = report["raw_model"]["texts_per_s"]
    e2e_unique = phases["unique"]["events_per_s"]
    e2e_model = model_events / mixed["seconds"]
    shaped = report["raw_model_consumer_calls"]["texts_per_s"]
    budget = cpu_budget(report, phases["unique"])
    derived = {
        "e2e_events_per_s": mixed["events_per_s"],
        "e2e_unique_per_s": e2e_unique,
        "e2e_model_events_per_s": e2e_model,
        "raw_model_texts_per_s": raw,
        "e2e_unique_over_raw": e2e_unique / raw,
        "raw_in_consumer_calls_over_raw": shaped / raw,
        "e2e_unique_over_raw_in_consumer_calls": e2e_unique / shaped,
        "e2e_model_events_over_raw": e2e_model / raw,
        "naive_events_per_s": report["naive"]["events_per_s"],
        "e2e_over_naive": mixed["events_per_s"] / report["naive"]["events_per_s"],
        "exact_dup_events_per_s": dups["events_per_s"],
        "steady_p99_ms": steady["latency_ms"].get("p99", float("nan")),
        "peak_rss_mb": report["consumer"]["peak_rss_mb"],
        "consumer_cpu_s_per_1k_mixed": 1000 * mixed["cpu_s"] / mixed["events"],
        **budget,
    }
    report["derived"] = derived
    print()
    print(f"backend {report['backend']}, {report['machine']['cpus']} CPUs, {report['date']}")
    rows = [
        ("e2e mixed events/s", derived["e2e_events_per_s"], None, ""),
        ("e2e unique-phase events/s", e2e_unique, None, ""),
        ("raw model texts/s (same texts, batch)", raw, None, ""),
        ("e2e unique / raw model", derived["e2e_unique_over_raw"], "e2e_unique_over_raw", ">="),
        ("raw model in the consumer's calls texts/s", shaped, None, ""),
        ("  of the raw model (call shape)", derived["raw_in_consumer_calls_over_raw"], None, ""),
        (
            "  e2e unique / that (pipeline)",
            derived["e2e_unique_over_raw_in_consumer_calls"],
            None,
            "",
        ),
        (
            "unique phase: CPU ms per event (all processes)",
            budget["unique_cpu_ms_per_event"],
            None,
            "",
        ),
        (
            "  of which the model's (in the consumer's calls)",
            budget["model_cpu_ms_per_text"],
            None,
            "",
        ),
        (
            "  the rest (pipeline, Kafka, broker, reader)",
            budget["other_cpu_ms_per_event"],
            None,
            "",
        ),
        ("  e2e unique / raw model with no CPU idle", budget["no_idle_unique_over_raw"], None, ""),
        (
            "  CPU ms per event the unique target allows",
            budget["target_cpu_ms_per_event"],
            None,
            "",
        ),
        ("mixed: unique+paraphrase events/s", e2e_model, None, ""),
        ("mixed: unique+paraphrase / raw model", derived["e2e_model_events_over_raw"], None, ""),
        ("naive pipeline events/s", derived["naive_events_per_s"], None, ""),
        ("e2e / naive", derived["e2e_over_naive"], "e2e_over_naive", ">="),
        ("exact-duplicate events/s", dups["events_per_s"], "exact_dup_events_per_s", ">="),
        ("steady p99 latency ms", derived["steady_p99_ms"], "steady_p99_ms", "<"),
        ("consumer peak RSS MB", derived["peak_rss_mb"], "peak_rss_mb", "<"),
        ("consumer CPU s per 1k mixed events", derived["consumer_cpu_s_per_1k_mixed"], None, ""),
    ]
    for label, value, target_key, op in rows:
        note = ""
        if target_key is not None:
            target = TARGETS[target_key]
            met = value >= target if op == ">=" else value < target
            note = f"target {op} {target:g}: {'met' if met else 'MISSED'}"
        print(f"  {label:48s} {value:12,.2f}  {note}")
    for phase in report["phases"]:
        lat = phase["latency_ms"]
        print(
            f"  {phase['name']:17s} {phase['events']:6,d} events {phase['seconds']:7.1f} s  "
            f"p50 {lat.get('p50', 0):7.0f} p95 {lat.get('p95', 0):7.0f} "
            f"p99 {lat.get('p99', 0):7.0f} ms  CPU {phase['cpu_s']:6.1f} s  "
            f"dlq {phase['dead_letters']}"
        )
        for label, outcomes in sorted(phase["outcomes"].items()):
            parts = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
            print(f"      {label:10s} {parts}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=0, help="mixed events (20,000; quick 2,000)")
    parser.add_argument(
        "--backend",
        choices=["torch", "onnx-int8", "onnx-fp32"],
        default=EmbeddingSettings().backend,
        help="model backend (default: the service's default)",
    )
    parser.add_argument("--quick", action="store_true", help="small run (~1-2 min)")
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    parser.add_argument(
        "--unique-events", type=int, default=0, help="unique phase size (5,000; quick 2,000)"
    )
    parser.add_argument(
        "--dup-events",
        type=int,
        default=0,
        help="exact-duplicate phase size (20,000; quick 10,000)",
    )
    parser.add_argument("--steady-rate", type=float, default=50.0, help="steady events/s")
    parser.add_argument("--steady-s", type=float, default=0.0, help="steady phase seconds")
    parser.add_argument("--naive-events", type=int, default=0, help="naive pipeline sample")
    parser.add_argument("--embed-batch", type=int, default=64, help="model batch size")
    parser.add_argument(
        "--consumer-setting",
        action="append",
        default=[],
        metavar="MEMDEDUP_X=V",
        help="extra consumer setting, e.g. MEMDEDUP_KAFKA__BATCH_MAX_RECORDS=1024 (repeatable)",
    )
    parser.add_argument("--log-level", default="INFO", help="consumer log level")
    parser.add_argument("--keep-log", type=Path, default=None, help="copy the consumer log")
    parser.add_argument(
        "--fetch-max-wait-ms",
        type=int,
        default=0,
        help="what-if: the consumer's fetch_max_wait_ms (no service setting; default aiokafka's 500)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--consumer-shim", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.consumer_shim:
        return consumer_shim()
    from consumer.observability.logs import configure_logging

    configure_logging(level="WARNING", fmt="console")
    began = time.monotonic()
    report = asyncio.run(main_async(args))
    report["wall_s"] = time.monotonic() - began
    print(f"\ntotal {report['wall_s']:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
