"""Fault injection with real processes: consumers are `memdedup run` processes
against the local broker; they are killed, restarted, added, removed and cut off
from their store while 5,000+ events in 3 tenants x 4 namespaces flow.

Run alone with `pytest -m faults -s` to see the evidence each test prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from consumer.cli.compact import load_state
from consumer.domain.models import DecisionRecord
from consumer.kafka.localbroker import LocalBroker, free_port
from consumer.kafka.topic_reader import read_all
from consumer.kafka.topics import ensure_topics
from consumer.settings import DEFAULT_DUPLICATE_THRESHOLD, DEFAULT_MERGE_THRESHOLD, Settings
from tests.faults.harness import (
    Dataset,
    Evidence,
    build_dataset,
    check_invariants,
    conclude,
    consumers,
    count_memories,
    fault_settings,
    settings_env,
    stop_all,
    wait_for_all,
)
from tests.integration.harness import (
    produce,
    read_outputs,
    restored_from_changelog,
    wait_until,
)

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def dataset(real_embedder: Any) -> Dataset:
    built = asyncio.run(build_dataset(real_embedder))
    assert len(built.events) >= 5000
    print(f"\ndataset: {len(built.events)} events, {built.unique_texts} unique texts")
    return built


def strict_off() -> dict[str, str]:
    """The usual bands (the environment of the test process may hold others)."""
    return {
        "MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD": str(DEFAULT_DUPLICATE_THRESHOLD),
        "MEMDEDUP_DEDUP__MERGE_THRESHOLD": str(DEFAULT_MERGE_THRESHOLD),
    }


def chunks(items: list[Any], count: int) -> list[list[Any]]:
    size = -(-len(items) // count)
    return [items[i : i + size] for i in range(0, len(items), size)]


async def test_sigkill_random_consumers_repeatedly(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    settings = fault_settings(local_broker.bootstrap_servers, data)
    await ensure_topics(settings)
    fleet = consumers(3, settings, tmp_path)
    rng = random.Random(11)
    kills = 0
    try:
        for process in fleet:
            process.start()
        for chunk in chunks(dataset.events, 6):
            await produce(settings, chunk)
            await asyncio.sleep(rng.uniform(2.0, 5.0))
            victim = rng.choice(fleet)
            victim.kill(signal.SIGKILL)
            victim.wait()
            kills += 1
            victim.start()
        evidence = await wait_for_all(settings, dataset, timeout_s=420)
    finally:
        stop_all(fleet)
    memories = await count_memories(settings, data)
    assert kills >= 5
    conclude(f"sigkill x{kills}", evidence, dataset, memories)


async def test_full_replay_reemits_identical_decisions_and_stores_nothing(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    settings = fault_settings(local_broker.bootstrap_servers, data)
    await ensure_topics(settings)
    fleet = consumers(2, settings, tmp_path)
    try:
        for process in fleet:
            process.start()
        await produce(settings, dataset.events)
        first = await wait_for_all(settings, dataset, timeout_s=420)
    finally:
        stop_all(fleet)
    memories = await count_memories(settings, data)
    first.report("first pass", memories)
    check_invariants(first, dataset)

    replay = subprocess.run(
        [
            sys.executable,
            "-m",
            "consumer.cli",
            "replay",
            "--group",
            settings.kafka.group_id,
            "--to-earliest",
            "--wait",
            "30",
        ],
        env={**os.environ, **settings_env(settings)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    try:
        for process in fleet:
            process.start()

        expected = 2 * len(dataset.events)
        outputs = await read_outputs(settings, at_least=expected, timeout_s=420, settle_s=2.0)
        second = Evidence.of(len(dataset.events), outputs, settings)
    finally:
        stop_all(fleet)
    after = await count_memories(settings, data)
    second.report("after full replay", after)
    assert after == memories, "the replay created memories"
    for event_id, copies in second.decisions.items():
        assert len(copies) >= 2, f"{event_id} was not re-emitted"
        assert len(set(copies)) == 1, f"{event_id} re-emitted a different decision"


async def test_vector_store_outage_pauses_without_loss(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    outage = tmp_path / "store-outage"
    settings = fault_settings(local_broker.bootstrap_servers, data)
    await ensure_topics(settings)
    fleet = consumers(2, settings, tmp_path, {"MEMDEDUP_CHAOS__STORE_OUTAGE_FILE": str(outage)})
    halves = chunks(dataset.events, 2)
    try:
        for process in fleet:
            process.start()
        await produce(settings, halves[0])
        await asyncio.sleep(4)
        outage.touch()  # the store goes away for 10 s, mid-stream
        await produce(settings, halves[1])
        await asyncio.sleep(10)
        outage.unlink()
        evidence = await wait_for_all(settings, dataset, timeout_s=420)
        assert all(process.alive for process in fleet), "a consumer died during the outage"
    finally:
        stop_all(fleet)
    memories = await count_memories(settings, data)
    conclude("store outage 10s", evidence, dataset, memories)


async def test_rebalance_with_separate_data_directories(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    """As on separate machines: each consumer has its own directory, so partitions
    that move are restored from the changelog before anything is decided."""
    settings = fault_settings(local_broker.bootstrap_servers, tmp_path / "unused")
    await ensure_topics(settings)
    fleet = [
        consumers(1, settings, tmp_path, {"MEMDEDUP_QDRANT__PATH": str(tmp_path / f"machine-{i}")})[
            0
        ]
        for i in range(3)
    ]
    for i, process in enumerate(fleet):
        process.name = f"machine-{i}"
    parts = chunks(dataset.events, 4)
    try:
        fleet[0].start()
        fleet[1].start()
        await produce(settings, parts[0])
        await asyncio.sleep(5)
        fleet[2].start()  # a consumer joins mid-stream
        await produce(settings, parts[1])
        await asyncio.sleep(5)
        fleet[0].kill(signal.SIGTERM)  # one leaves
        fleet[0].wait()
        await produce(settings, parts[2])
        await asyncio.sleep(5)
        fleet[0].start()  # and comes back
        await produce(settings, parts[3])
        evidence = await wait_for_all(settings, dataset, timeout_s=420)
    finally:
        stop_all(fleet)

    # The changelog holds the whole state: restore it into a fresh directory.
    memories, _ = await restore_changelog(settings, tmp_path / "fresh", dataset)
    conclude("rebalance, separate dirs", evidence, dataset, memories)


async def restore_changelog(
    settings: Settings, root: Path, dataset: Dataset
) -> tuple[int, dict[str, DecisionRecord]]:
    """Restore every partition's changelog into a fresh store under `root`: the
    memories it holds, and its decision records of the dataset's events."""
    async with restored_from_changelog(settings, root) as fresh:
        stored: dict[str, DecisionRecord] = {}
        for partition in range(settings.topics.partitions):
            stored.update(await fresh.get_decisions(partition, sorted(dataset.event_ids)))
        return await fresh.count_memories(), stored


async def test_a_consumer_stalled_past_its_session_publishes_nothing_of_its_batch(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    """A consumer whose event loop stalls mid-batch (a long pause, a frozen VM) is
    evicted, and the next owner restores the partitions and decides that batch.
    When the stalled one wakes, its group fence stops it before the changelog
    append: it neither shadows the new owner's points nor publishes a second,
    different decision for the same events."""
    settings = fault_settings(local_broker.bootstrap_servers, tmp_path / "unused")
    await ensure_topics(settings)
    stall = tmp_path / "stall"
    stall.touch()
    [stalled] = consumers(
        1,
        settings,
        tmp_path,
        {
            "MEMDEDUP_QDRANT__PATH": str(tmp_path / "stalled"),
            "MEMDEDUP_CHAOS__STALL_FILE": str(stall),
        },
    )
    [taker] = consumers(1, settings, tmp_path, {"MEMDEDUP_QDRANT__PATH": str(tmp_path / "taker")})
    stalled.name, taker.name = "stalled", "taker"
    stalled_log = tmp_path / "stalled-1.log"
    try:
        await produce(settings, dataset.events)
        stalled.start()
        assert await wait_until(file_shows(stall.with_name("stall.reached")), timeout_s=120)
        taker.start()  # joins; the stalled member misses its session and is evicted
        evidence = await wait_for_all(settings, dataset, timeout_s=420)
        stall.unlink()  # it wakes with a batch decided but not yet appended
        assert await wait_until(
            file_shows(stalled_log, "batch_abandoned"), timeout_s=60, interval_s=0.5
        )
        # Back in the group, it replays what the taker decided, if handed any of it.
        evidence = await wait_for_all(settings, dataset, timeout_s=120, settle_s=10.0)
    finally:
        stop_all([stalled, taker])

    memories, stored = await restore_changelog(settings, tmp_path / "fresh", dataset)
    conclude("stalled past its session", evidence, dataset, memories)
    assert "group_membership_lost" in stalled_log.read_text()
    # The changelog's decisions are the published ones: no stale point shadows them.
    published = {e: copies[0] for e, copies in evidence.decisions.items()}
    assert stored.keys() == published.keys()
    assert all(r.event_json.encode() == published[e] for e, r in stored.items())


def file_shows(path: Path, text: str = "") -> Callable[[], Awaitable[bool]]:
    """A `wait_until` predicate: the file exists and holds `text`."""

    async def shows() -> bool:
        return path.exists() and text in path.read_text(errors="replace")

    return shows


async def test_sigterm_with_work_in_flight_emits_no_duplicates(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    settings = fault_settings(local_broker.bootstrap_servers, data)
    await ensure_topics(settings)
    [consumer] = consumers(1, settings, tmp_path)
    try:
        await produce(settings, dataset.events)
        consumer.start()
        stops = 0
        for _ in range(3):
            await asyncio.sleep(8)
            consumer.kill(signal.SIGTERM)
            assert consumer.wait(60) == 0, "SIGTERM did not exit cleanly"
            stops += 1
            consumer.start()
        evidence = await wait_for_all(settings, dataset, timeout_s=420)
    finally:
        stop_all([consumer])
    memories = await count_memories(settings, data)
    evidence.report(f"sigterm x{stops}", memories)
    check_invariants(evidence, dataset)
    assert evidence.duplicates_emitted == 0


@contextlib.contextmanager
def s3_endpoint(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A loopback S3 (moto) for a broker whose data outlives the broker process."""
    port = free_port()
    moto = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=(tmp_path / "moto.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    env = {
        "AWS_ACCESS_KEY_ID": "memdedup",
        "AWS_SECRET_ACCESS_KEY": "memdedup",
        "AWS_DEFAULT_REGION": "eu-west-2",
        "AWS_ENDPOINT": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true",
    }
    try:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT"],
            aws_access_key_id="memdedup",
            aws_secret_access_key="memdedup",
            region_name="eu-west-2",
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                client.create_bucket(
                    Bucket="tansu",
                    CreateBucketConfiguration={"LocationConstraint": "eu-west-2"},
                )
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield env
    finally:
        moto.terminate()
        moto.wait(10)


async def test_broker_restart_mid_stream_loses_no_decision(
    dataset: Dataset, tmp_path: Path
) -> None:
    with s3_endpoint(tmp_path) as s3_env:
        broker = LocalBroker(storage_engine="s3://tansu/", env=s3_env).start()
        try:
            data = tmp_path / "data"
            settings = fault_settings(broker.bootstrap_servers, data)
            await ensure_topics(settings)
            fleet = consumers(2, settings, tmp_path)
            halves = chunks(dataset.events, 2)
            try:
                for process in fleet:
                    process.start()
                await produce(settings, halves[0])
                await asyncio.sleep(6)
                broker.stop()  # mid-stream: consumers lose the broker
                await asyncio.sleep(5)
                broker.start()  # same port, same data
                await produce(settings, halves[1])
                evidence = await wait_for_all(settings, dataset, timeout_s=600)
                assert all(process.alive for process in fleet)
            finally:
                stop_all(fleet)
        finally:
            broker.stop()
    memories = await count_memories(settings, data)
    conclude("broker restart", evidence, dataset, memories)


async def test_compaction_while_consumers_are_killed_applies_each_cluster_once(
    local_broker: Any, dataset: Dataset, tmp_path: Path
) -> None:
    """Ingest with bands no paraphrase reaches (every variant a memory of its own),
    then `memdedup compact` with the usual bands while consumers are SIGKILLed:
    every cluster command gets one result (copies identical), every removed memory
    one compaction decision, and the store shrinks by exactly what was removed."""
    data = tmp_path / "data"
    settings = fault_settings(local_broker.bootstrap_servers, data)
    await ensure_topics(settings)
    strict = {
        "MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD": "0.999",
        "MEMDEDUP_DEDUP__MERGE_THRESHOLD": "0.999",
    }
    fleet = consumers(3, settings, tmp_path, strict)
    rng = random.Random(5)
    try:
        for process in fleet:
            process.start()
        await produce(settings, dataset.events)
        await wait_for_all(settings, dataset, timeout_s=420)
        state = await load_state(settings)
        before = sum(len(m) for m in state.memories.values())

        compact = subprocess.Popen(
            [sys.executable, "-m", "consumer.cli", "compact", "--timeout", "300"],
            env={**os.environ, **settings_env(settings), **strict_off()},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        kills = 0
        while compact.poll() is None and kills < 4:
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            victim = rng.choice(fleet)
            victim.kill(signal.SIGKILL)
            victim.wait()
            kills += 1
            victim.start()
        out, err = await asyncio.to_thread(compact.communicate, timeout=360)
        print(out.strip())
        assert compact.returncode == 0, err[-2000:]
    finally:
        stop_all(fleet)
    after = await count_memories(settings, data)

    results: dict[str, set[bytes]] = {}
    async for record in read_all(settings, [settings.topics.command_results]):
        results.setdefault(json.loads(record.value)["command_id"], set()).add(record.value)
    compacted: dict[str, set[bytes]] = {}
    async for record in read_all(settings, [settings.topics.merged, settings.topics.skipped]):
        body = json.loads(record.value)
        if body["reason"] == "compaction":
            compacted.setdefault(body["decision_id"], set()).add(record.value)
    assert results, "no cluster was found"
    assert all(len(copies) == 1 for copies in results.values()), "a command had two results"
    applied = [json.loads(next(iter(c))) for c in results.values()]
    assert {r["status"] for r in applied} == {"applied"}
    removed = [m for r in applied for m in r["removed_memory_ids"]]
    assert len(removed) == len(set(removed))
    assert all(len(copies) == 1 for copies in compacted.values()), "a compaction decision differs"
    assert {json.loads(next(iter(c)))["superseded_memory_id"] for c in compacted.values()} == set(
        removed
    )
    print(
        f"[compaction under sigkill x{kills}] memories {before} -> {after}, "
        f"{len(results)} clusters, {len(removed)} folded"
    )
    assert after == before - len(removed)
