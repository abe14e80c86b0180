"""The audit log, review/reverse and compaction through the real broker, the real
model and both stores, with the consumer running while the commands are sent."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from consumer.cli.auditlog import ReviewRefused, read_log, send_review
from consumer.cli.compact import load_state, run_compaction
from consumer.domain.normalize import content_hash, memory_id_for, normalize_content
from consumer.errors import ChangelogUnavailable
from consumer.settings import CrossEncoderSettings, Settings
from consumer.state.changelog import Changelog
from schemas import (
    CommandStatus,
    MemoryDecisionEvent,
    MemoryReversed,
    ReviewAction,
    ReviewStatus,
)
from tests.integration.harness import (
    StoreFactory,
    decisions_by_event,
    event,
    make_settings,
    produce,
    read_outputs,
    running_consumer,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

BANDS = {"duplicate_threshold": 0.96, "merge_threshold": 0.84}
# Ingest bands no paraphrase reaches, with the cross-encoder off: its rescue band
# reaches up to the merge threshold, so it would still merge paraphrases below it.
NO_MERGES = {
    "duplicate_threshold": 0.999,
    "merge_threshold": 0.999,
    "cross_encoder": {"enabled": False},
}
# The usual bands after such an ingest, the cross-encoder as by default.
USUAL = {**BANDS, "cross_encoder": CrossEncoderSettings()}


async def read_topic(settings: Settings, topic: str, at_least: int) -> list[dict[str, Any]]:
    reader = AIOKafkaConsumer(
        topic,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await reader.start()
    found: list[dict[str, Any]] = []
    try:
        for _ in range(100):
            for records in (await reader.getmany(timeout_ms=200)).values():
                found.extend(json.loads(r.value) for r in records)
            if len(found) >= at_least:
                break
    finally:
        await reader.stop()
    return found


async def count_memories(settings: Settings, store: Any) -> int:
    """Memories as `memdedup compact` sees them (the changelog for the embedded
    store, which the running consumer's shards must not be opened beside)."""
    state = await load_state(settings, store=store)
    return sum(len(memories) for memories in state.memories.values())


async def cli(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`memdedup ARGV` as a separate process: exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "consumer.cli",
        *argv,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def memory_id_of(text: str, namespace: str) -> str:
    return memory_id_for("acme", namespace, content_hash(normalize_content(text)))


@pytest.mark.parametrize("kind", ["edge", "server"])
async def test_reverse_a_merge_restores_both_memories_and_keeps_them_apart(
    local_broker: Any, real_embedder: Any, tmp_path: Path, kind: str
) -> None:
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={**BANDS, "namespaces": {"bio": {**BANDS, "merge_policy": "replace_with_newer"}}},
        **({"qdrant": {"location": ":memory:"}} if kind == "server" else {}),
    )
    stores = StoreFactory(kind, settings)
    store = await stores.open()
    injected = store if kind == "server" else None
    first = [
        event("b1", "User is allergic to peanuts", namespace="bio"),
        event("p1", "User prefers Python for backend work"),
    ]
    second = [
        event("b2", "The user has a peanut allergy", namespace="bio"),
        event("p2", "The user prefers Python for backend work"),
        event("p3", "user prefers Python for backend work!"),
    ]
    try:
        async with running_consumer(settings, real_embedder, store):
            await produce(settings, first)
            await read_outputs(settings, at_least=2)
            await produce(settings, second)
            found = decisions_by_event(await read_outputs(settings, at_least=5), settings)
            d = {k: MemoryDecisionEvent.model_validate(v[0]) for k, v in found.items()}
            b1, b2, p2, p3 = d["b1"], d["b2"], d["p2"], d["p3"]
            assert (b2.decision.value, b2.reason.value) == ("merged", "semantic")
            assert b2.memory.content == "The user has a peanut allergy"
            assert (p2.decision.value, p2.reason.value) == ("skipped", "semantic")
            assert (p3.decision.value, p3.reason.value) == ("skipped", "exact")

            # The audit log lists every decision with the new text's hash, no text.
            log = await read_log(settings)
            assert {e.decision.event_id for e in log} == {"b1", "p1", "b2", "p2", "p3"}
            by_event = {e.decision.event_id: e for e in log}
            assert by_event["b2"].decision.content_hash == content_hash(
                normalize_content("The user has a peanut allergy")
            )
            assert all(e.review_status is ReviewStatus.UNREVIEWED for e in log)
            bio_log = await read_log(settings, namespace="bio")
            assert {e.decision.event_id for e in bio_log} == {"b1", "b2"}
            skipped = await read_log(settings, decisions=["skipped"])
            assert {e.decision.event_id for e in skipped} == {"p2", "p3"}
            now = datetime.now(UTC)
            assert await read_log(settings, since=now + timedelta(hours=1)) == []
            assert len(await read_log(settings, since=now - timedelta(hours=1))) == 5

            # Reverse the merge while the consumer runs.
            command, result = await send_review(
                settings, b2.decision_id, ReviewAction.REVERSE, reviewer="qa", note="allergy"
            )
            assert result is not None, "the owning consumer did not apply the review"
            assert result.status is CommandStatus.APPLIED, result.detail
            assert result.review_status is ReviewStatus.REVERSED
            [reversal_body] = await read_topic(settings, settings.topics.reversed, 1)
            reversal = MemoryReversed.model_validate(reversal_body)
            assert reversal.reversal_id == command.command_id
            assert reversal.decision_id == b2.decision_id
            assert reversal.restored_memory.memory_id == memory_id_of(
                "The user has a peanut allergy", "bio"
            )
            assert reversal.restored_memory.content == "The user has a peanut allergy"
            assert reversal.target_memory is not None
            assert reversal.target_memory.memory_id == b1.memory_id
            assert reversal.target_memory.content == "User is allergic to peanuts"
            assert reversal.target_memory.merged_from == []
            assert reversal.target_memory.seen_count == 1
            assert reversal.target_text_restored is True
            assert reversal.reviewer == "qa"

            # Each text now finds its own memory, with its own text.
            await produce(
                settings,
                [
                    event("b3", "the user has a peanut allergy.", namespace="bio"),
                    event("b4", "USER IS ALLERGIC TO PEANUTS", namespace="bio"),
                ],
            )
            found = decisions_by_event(await read_outputs(settings, at_least=7), settings)
            b3 = MemoryDecisionEvent.model_validate(found["b3"][0])
            b4 = MemoryDecisionEvent.model_validate(found["b4"][0])
            assert (b3.decision.value, b3.reason.value) == ("skipped", "exact")
            assert b3.memory_id == reversal.restored_memory.memory_id
            assert (b4.decision.value, b4.reason.value) == ("skipped", "exact")
            assert b4.memory_id == b1.memory_id
            assert b4.memory.content == "User is allergic to peanuts"

            # The log shows the review; a second reversal and bad reviews are refused.
            [entry] = [e for e in await read_log(settings) if e.decision.event_id == "b2"]
            assert entry.review_status is ReviewStatus.REVERSED
            with pytest.raises(ReviewRefused, match="already reversed"):
                await send_review(settings, b2.decision_id, ReviewAction.REVERSE)
            with pytest.raises(ReviewRefused, match="only semantic skips and merges"):
                await send_review(settings, p3.decision_id, ReviewAction.REVERSE)
            with pytest.raises(ReviewRefused, match="nothing to reverse"):
                await send_review(settings, b1.decision_id, ReviewAction.REVERSE)
            with pytest.raises(ReviewRefused, match="memdedup log"):
                await send_review(settings, "no-such-decision", ReviewAction.CONFIRM)

            # Confirming is recorded too; the semantic skip can still be reversed.
            _, confirmed = await send_review(settings, p2.decision_id, ReviewAction.CONFIRM)
            assert confirmed is not None
            assert confirmed.review_status is ReviewStatus.CONFIRMED
            statuses = {e.decision.event_id: e.review_status for e in await read_log(settings)}
            assert statuses["p2"] is ReviewStatus.CONFIRMED

            # Compaction never folds a reversed pair back together (similarity 0.88).
            outcome = await run_compaction(
                settings,
                namespace="bio",
                dry_run=True,
                report_dir=tmp_path / "report",
                store=injected,
            )
            [bio] = outcome.analyses
            assert bio.memories == 2
            assert bio.clusters == []
            assert bio.vetoes.get("reviewed_pair") == 1
    finally:
        await stores.close()


async def test_log_and_review_commands_print_clear_messages(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path, dedup=BANDS)
    env = {"MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers}
    for name in ("input", "accepted", "merged", "skipped", "command_results", "reversed"):
        env[f"MEMDEDUP_TOPICS__{name.upper()}"] = getattr(settings.topics, name)
    stores = StoreFactory("edge", settings)
    try:
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(
                settings,
                [event("e1", "User prefers tea"), event("e2", "user prefers tea.")],
            )
            await read_outputs(settings, at_least=2)
            code, out, _ = await cli(["log", "--json"], env)
            assert code == 0
            rows = json.loads(out)
            assert [(r["event_id"], r["decision"]) for r in rows] == [
                ("e1", "accepted"),
                ("e2", "skipped"),
            ]
            # In one batch the repeat is a recent hit, otherwise an exact one.
            assert rows[1]["reason"] in ("exact", "recent")
            assert "tea" not in out  # hashes, never the text

            code, table, _ = await cli(["log", "--decision", "skipped"], env)
            assert code == 0
            assert rows[1]["decision_id"] in table
            assert rows[0]["decision_id"] not in table
            assert "1 decisions" in table

            code, _, err = await cli(["review", rows[1]["decision_id"], "reverse"], env)
            assert code == 1
            assert "nothing to separate" in err
            code, out, _ = await cli(["review", rows[0]["decision_id"], "confirm"], env)
            assert (code, out.strip()) == (0, "applied: decision confirmed")
            code, out, _ = await cli(["log", "--json", "--namespace", "prefs"], env)
            assert [r["review_status"] for r in json.loads(out)] == ["confirmed", "unreviewed"]
            code, _, err = await cli(["log", "--since", "not-a-time"], env)
            assert code == 2
            assert "--since" in err
    finally:
        await stores.close()


@pytest.mark.parametrize("kind", ["edge", "server"])
async def test_compaction_folds_clusters_with_guards_and_dry_run_changes_nothing(
    local_broker: Any, real_embedder: Any, tmp_path: Path, kind: str
) -> None:
    # Ingested with bands no paraphrase reaches, so every text is a memory of its own;
    # compaction then runs with the usual bands.
    # ("The user lives in Paris" embeds as "User lives in Paris" with the user named
    # one way: the ingest names them as written, so the two stay apart.)
    ingest = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup=NO_MERGES,
        embedding={"same_subject": False},
        # The server stand-in is qdrant-client's local mode, shared with the consumer.
        **({"qdrant": {"location": ":memory:"}} if kind == "server" else {}),
    )
    settings = ingest.model_copy(
        update={
            "dedup": ingest.dedup.model_copy(update=USUAL),
            "embedding": ingest.embedding.model_copy(update={"same_subject": True}),
        }
    )
    texts = {
        "c1": "User lives in Paris",
        "c2": "The user lives in Paris",
        "c3": "User resides in Paris",
        "c4": "User's flight is at 9am",
        "c5": "User's flight is at 9pm",
        "c6": "User enjoys hiking on weekends",
        "c7": "User likes hiking at weekends",
    }
    stores = StoreFactory(kind, settings)
    store = await stores.open()
    injected = store if kind == "server" else None
    try:
        async with running_consumer(ingest, real_embedder, store):
            await produce(settings, [event(k, v, namespace="home") for k, v in texts.items()])
            found = decisions_by_event(await read_outputs(settings, at_least=7), settings)
            assert {only["decision"] for copies in found.values() for only in copies} == {
                "accepted"
            }
            assert await count_memories(settings, injected) == 7

            dry = await run_compaction(
                settings,
                dry_run=True,
                report_dir=tmp_path / "report",
                store=injected,
                show_text=True,
            )
            [home] = dry.analyses
            assert home.memories == 7
            clusters = sorted(
                sorted([c.keeper_id, *(m.memory_id for m in c.members)]) for c in home.clusters
            )
            ids = {k: memory_id_of(v, "home") for k, v in texts.items()}
            assert clusters == sorted(
                [sorted([ids["c1"], ids["c2"], ids["c3"]]), sorted([ids["c6"], ids["c7"]])]
            )
            assert home.vetoes.get("numbers", 0) >= 1  # 9am vs 9pm stays apart
            markdown, html = dry.reports or (None, None)
            assert markdown is not None
            assert html is not None
            assert ids["c3"] in markdown.read_text()
            assert "<svg" in html.read_text()
            assert "User resides in Paris" in markdown.read_text()  # --show-text
            assert await count_memories(settings, injected) == 7  # the dry run changed nothing

            outcome = await run_compaction(settings, store=injected, wait_s=60)
            assert len(outcome.commands) == 2
            assert outcome.unanswered == 0
            assert [r.status for r in outcome.results.values()] == [CommandStatus.APPLIED] * 2
            assert await count_memories(settings, injected) == 4

            outputs = decisions_by_event(await read_outputs(settings, at_least=10), settings)
            compacted = [
                MemoryDecisionEvent.model_validate(copy)
                for copies in outputs.values()
                for copy in copies
                if copy["reason"] == "compaction"
            ]
            assert sorted(e.superseded_memory_id or "" for e in compacted) == sorted(
                set(ids.values()) - {c.keeper_id for c in home.clusters} - {ids["c4"], ids["c5"]}
            )
            paris = next(
                c
                for c in home.clusters
                if ids["c1"] in (c.keeper_id, *[m.memory_id for m in c.members])
            )
            keeper_events = [e for e in compacted if e.memory_id == paris.keeper_id]
            assert len(keeper_events) == 2
            final = max(keeper_events, key=lambda e: e.memory.seen_count).memory
            assert final.seen_count == 3
            assert len(final.merged_from) == 2

            # A repeat of a folded text is skipped into its keeper.
            await produce(settings, [event("again", "the user lives in paris", namespace="home")])
            again = decisions_by_event(await read_outputs(settings, at_least=11), settings)
            repeat = MemoryDecisionEvent.model_validate(again["again"][0])
            assert (repeat.decision.value, repeat.reason.value) == ("skipped", "exact")
            assert repeat.memory_id == paris.keeper_id

            # A second run finds nothing left to fold.
            rerun = await run_compaction(
                settings, dry_run=True, report_dir=tmp_path / "r2", store=injected
            )
            assert [len(a.clusters) for a in rerun.analyses] == [0]
    finally:
        await stores.close()


async def test_a_compaction_cut_short_after_its_keeper_is_finished_by_the_retry(
    local_broker: Any, real_embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The changelog append of a compaction lands the folded keeper, then fails
    (a crash part-way). The consumer restores the keeper and the retry finishes
    the cluster from it: applied, each member announced once, the keeper seen
    once per memory folded in, not twice, and the text replace_with_newer chose
    kept (before, a keeper whose text the fold replaced got the retry rejected)."""
    # The consumer applies the command with its own namespace policy.
    ingest = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={**NO_MERGES, "merge_policy": "replace_with_newer"},
        embedding={"same_subject": False},
    )
    settings = ingest.model_copy(
        update={
            "dedup": ingest.dedup.model_copy(update=USUAL),
            "embedding": ingest.embedding.model_copy(update={"same_subject": True}),
        }
    )
    append = Changelog.append
    cut_short: list[int] = []

    async def keeper_only(
        changelog: Changelog, partition: int, points: Any, *, deleted_ids: Any = ()
    ) -> int | None:
        if not cut_short and any(p.payload.get("kind") == "redirect" for p in points):
            cut_short.append(len(points))
            await append(changelog, partition, points[:1], deleted_ids=deleted_ids)
            raise ChangelogUnavailable("injected: append cut short after the keeper")
        return await append(changelog, partition, points, deleted_ids=deleted_ids)

    monkeypatch.setattr(Changelog, "append", keeper_only)
    texts = {"p1": "User lives in Paris", "p2": "The user lives in Paris"}
    stores = StoreFactory("edge", settings)
    store = await stores.open()
    try:
        async with running_consumer(ingest, real_embedder, store):
            await produce(settings, [event(k, v, namespace="home") for k, v in texts.items()])
            await read_outputs(settings, at_least=2)
            outcome = await run_compaction(settings, wait_s=60)
            assert [r.status for r in outcome.results.values()] == [CommandStatus.APPLIED]
            assert cut_short == [3]  # the keeper, a redirect, the command record
            outputs = await read_outputs(settings, at_least=3, settle_s=1.0)
            assert await count_memories(settings, None) == 1
    finally:
        await stores.close()
    compacted = [
        MemoryDecisionEvent.model_validate(copy)
        for copies in decisions_by_event(outputs, settings).values()
        for copy in copies
        if copy["reason"] == "compaction"
    ]
    assert len(compacted) == 1
    [decision] = compacted
    assert decision.memory.seen_count == 2
    assert [s.event_id for s in decision.memory.merged_from] == [decision.event_id]
    assert {decision.memory.content, *(t.content for t in decision.memory.folded_texts)} == set(
        texts.values()
    )
    state = await load_state(settings)
    [stored] = [m for memories in state.memories.values() for m in memories]
    assert stored.seen_count == 2
    assert stored.content == decision.memory.content


async def test_periodic_compaction_inside_the_consumer(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    # First run: bands no paraphrase reaches. Second run: the usual bands, with the
    # periodic trigger on; its first batch in the scope compacts it.
    ingest = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup=NO_MERGES,
        embedding={"same_subject": False},  # every text a memory of its own, as written
    )
    settings = ingest.model_copy(
        update={
            "dedup": ingest.dedup.model_copy(update=USUAL),
            "embedding": ingest.embedding.model_copy(update={"same_subject": True}),
            "compaction": ingest.compaction.model_copy(
                update={"periodic": True, "min_memories": 2, "interval_s": 3600}
            ),
        }
    )
    stores = StoreFactory("edge", settings)
    texts = ["User lives in Paris", "The user lives in Paris", "User resides in Paris"]
    try:
        async with running_consumer(ingest, real_embedder, await stores.open()):
            await produce(settings, [event(f"p{i}", t) for i, t in enumerate(texts)])
            await read_outputs(settings, at_least=3)
        async with running_consumer(settings, real_embedder, await stores.open()):
            await produce(settings, [event("n1", "User owns a bicycle")])
            outputs = decisions_by_event(
                await read_outputs(settings, at_least=6, settle_s=1.0), settings
            )
            assert await count_memories(settings, None) == 2
    finally:
        await stores.close()
    compacted = [
        MemoryDecisionEvent.model_validate(copy)
        for copies in outputs.values()
        for copy in copies
        if copy["reason"] == "compaction"
    ]
    assert len(compacted) == 2
    keeper = {e.memory_id for e in compacted}
    assert len(keeper) == 1
    assert {e.superseded_memory_id for e in compacted} == {
        memory_id_of(t, "prefs") for t in texts
    } - keeper
