"""`memdedup` command line: the parser and one thin `cmd_*` function per subcommand.

One module because the parser is the command line's table of contents: each
subcommand's arguments and help sit beside the few lines that call the module
doing the work (demo, produce, tail, replay, rebuild, compact, auditlog, quality).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from consumer.settings import ConfigError, Settings, load_settings


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(getattr(args, "config", None))


def _interrupt(signum: int, frame: object) -> None:
    # Unwind through `finally` so the broker is stopped from the main flow.
    raise KeyboardInterrupt


def cmd_broker(args: argparse.Namespace) -> int:
    from consumer.kafka.localbroker import LocalBroker

    # Installed before the address is printed: a caller may stop us as soon as it reads it.
    signal.signal(signal.SIGTERM, _interrupt)
    broker = LocalBroker(port=args.port)
    try:
        broker.start()
        print(broker.bootstrap_servers, flush=True)
        print(
            f"local broker (memory only) running, pid {broker.pid}; "
            f"export MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS={broker.bootstrap_servers}; "
            "Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        return broker.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


def cmd_run(args: argparse.Namespace) -> int:
    from consumer.app.factory import create_app
    from consumer.cli.gc_policy import GcPolicy
    from consumer.observability.logs import configure_logging

    settings = _settings(args)
    configure_logging(level=settings.log.level, fmt=settings.log.format)
    app = create_app(settings)
    # The whole process is the service here (not so where tests build the app).
    gc_policy = GcPolicy()
    app.after_startup(gc_policy.start)
    app.on_shutdown(gc_policy.stop)
    asyncio.run(app.run())
    return 0


def cmd_produce(args: argparse.Namespace) -> int:
    from consumer.cli.produce import (
        LineTooLarge,
        produce_lines,
        read_numbered_lines,
        too_large_message,
    )
    from consumer.kafka.security import aiokafka_kwargs

    settings = _settings(args)
    if not args.file.exists():
        raise ConfigError(f"{args.file} does not exist: pass a JSON Lines file of events")
    numbered = read_numbered_lines(args.file)
    topic = args.topic or settings.topics.input
    try:
        sent = asyncio.run(
            produce_lines(
                [line for _, line in numbered],
                bootstrap_servers=settings.kafka.bootstrap_servers,
                topic=topic,
                client_kwargs=aiokafka_kwargs(settings.security),
                max_request_bytes=settings.kafka.max_request_bytes,
            )
        )
    except LineTooLarge as exc:
        message = too_large_message(
            exc,
            path=args.file,
            line_number=numbered[exc.oversized.index][0],
            max_event_bytes=settings.limits.max_event_bytes,
        )
        print(f"memdedup produce: {message}", file=sys.stderr)
        return 1
    print(f"published {sent} events to {topic} on {settings.kafka.bootstrap_servers}")
    return 0


def cmd_topics(args: argparse.Namespace) -> int:
    from consumer.kafka.topics import ensure_topics

    settings = _settings(args)
    created = asyncio.run(ensure_topics(settings))
    print("created: " + (", ".join(created) if created else "nothing (all exist)"))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from datetime import datetime

    from consumer.cli.replay import ReplayRefused, ResetTarget, parse_offset, reset_offsets

    settings = _settings(args)
    try:
        if args.to_datetime is not None:
            at = datetime.fromisoformat(args.to_datetime)
            if at.tzinfo is None:
                raise ReplayRefused(
                    f"--to-datetime {args.to_datetime!r} needs a UTC offset, "
                    "e.g. 2026-11-01T00:00:00+00:00"
                )
            target = ResetTarget(at=at)
        elif args.to_offset:
            target = ResetTarget(offsets=tuple(parse_offset(spec) for spec in args.to_offset))
        else:
            target = ResetTarget(earliest=True)
        topic = args.topic or settings.topics.input
        if not args.wait >= 0:  # NaN too
            raise ReplayRefused(f"--wait {args.wait:g}: expected a number of seconds >= 0")
        committed = asyncio.run(
            reset_offsets(
                settings.kafka,
                group=args.group,
                topic=topic,
                target=target,
                wait_s=args.wait,
                on_wait=lambda line: print(f"memdedup replay: {line}", file=sys.stderr, flush=True),
                security=settings.security,
            )
        )
    except ValueError as exc:
        print(f"memdedup replay: {exc}", file=sys.stderr)
        return 2
    except ReplayRefused as exc:
        print(f"memdedup replay: refused: {exc}", file=sys.stderr)
        return 3
    print(f"group {args.group} on {topic} reset to {target.describe()}:")
    for partition, offset in sorted(committed.items()):
        print(f"  partition {partition}: {offset}")
    print("start the consumers (memdedup run) to replay; decided events re-emit their decisions")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from datetime import datetime

    from consumer.cli.rebuild import RebuildRefused, rebuild
    from consumer.observability.logs import configure_logging

    settings = _settings(args)
    # The log settings (INFO by default), not structlog's default of everything:
    # the reprocessing would print a debug line per decided event.
    configure_logging(level=settings.log.level, fmt=settings.log.format)
    since = None
    if args.from_datetime is not None:
        since = datetime.fromisoformat(args.from_datetime)
        if since.tzinfo is None:
            print("memdedup rebuild: --from-datetime needs a UTC offset", file=sys.stderr)
            return 2
    try:
        report = asyncio.run(
            rebuild(settings, target_collection=args.target_collection, from_datetime=since)
        )
    except RebuildRefused as exc:
        print(f"memdedup rebuild: refused: {exc}", file=sys.stderr)
        return 3
    print(report.render())
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from consumer.cli.demo import run_demo
    from consumer.observability.logs import configure_logging

    # Errors only: the table shows every dead letter the service warns about.
    configure_logging(level="ERROR", fmt="console")
    asyncio.run(run_demo(args.events))
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from consumer.cli.apidocs import stale_docs, write_docs

    if args.check:
        stale = stale_docs(args.out)
        for path in stale:
            print(f"stale: {path}", file=sys.stderr)
        if stale:
            print("run `memdedup docs` and commit the result", file=sys.stderr)
            return 1
        print("generated docs are up to date")
        return 0
    for path in write_docs(args.out):
        print(f"wrote {path}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from consumer.cli.quality import run_evaluate

    return run_evaluate(
        args.pairs,
        config=args.config,
        as_json=args.json,
        show_text=args.show_text,
        no_guards=args.no_guards,
        mistakes=args.mistakes,
    )


def cmd_calibrate(args: argparse.Namespace) -> int:
    from consumer.cli.quality import run_calibrate

    return run_calibrate(
        args.pairs,
        target_precision=args.target_precision,
        config=args.config,
        png=args.png,
        no_guards=args.no_guards,
        as_json=args.json,
    )


def cmd_log(args: argparse.Namespace) -> int:
    from consumer.cli.auditlog import parse_since, read_log, render_log, render_log_json
    from consumer.kafka.topic_reader import TopicsUnavailable

    settings = _settings(args)
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    try:
        entries = asyncio.run(
            read_log(
                settings,
                tenant=args.tenant,
                namespace=args.namespace,
                decisions=args.decision or (),
                since=since,
            )
        )
    except TopicsUnavailable as exc:
        print(f"memdedup: {exc}", file=sys.stderr)
        return 1
    if args.limit:
        entries = entries[-args.limit :]
    (render_log_json if args.json else render_log)(entries, sys.stdout)
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    from consumer.cli.tail import Printer, TopicsMissing, tail
    from consumer.kafka.topic_reader import TopicsUnavailable

    settings = _settings(args)
    printer = Printer(sys.stdout, as_json=args.json, show_text=args.show_text)

    def ready() -> None:
        printer.header()
        if not args.exit_at_end and sys.stderr.isatty():
            print("memdedup tail: waiting for records; Ctrl-C stops", file=sys.stderr)

    try:
        asyncio.run(
            tail(
                settings,
                printer,
                which=args.topic,
                from_beginning=args.from_beginning,
                exit_at_end=args.exit_at_end,
                on_ready=ready,
            )
        )
    except (TopicsMissing, TopicsUnavailable) as exc:
        print(f"memdedup tail: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep the interpreter's
        # last flush of stdout from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from consumer.cli.auditlog import ReviewRefused, send_review
    from consumer.kafka.topic_reader import TopicsUnavailable
    from schemas import CommandStatus, ReviewAction

    settings = _settings(args)
    try:
        command, result = asyncio.run(
            send_review(
                settings,
                args.decision_id,
                ReviewAction(args.action),
                reviewer=args.reviewer,
                note=args.note,
                wait_s=0 if args.no_wait else args.timeout,
            )
        )
    except ReviewRefused as exc:
        print(f"memdedup: {exc}", file=sys.stderr)
        return 1
    except TopicsUnavailable as exc:
        print(f"memdedup: {exc}", file=sys.stderr)
        return 1
    if result is None:
        print(
            f"review {command.command_id} queued on {settings.topics.input}; no result within "
            f"{0 if args.no_wait else args.timeout:g}s (it is applied when the consumer that owns "
            f"{command.tenant_id}/{command.namespace} runs; see `memdedup log`)"
        )
        return 3 if not args.no_wait else 0
    print(f"{result.status.value}: {result.detail}")
    return 0 if result.status is CommandStatus.APPLIED else 1


def cmd_compact(args: argparse.Namespace) -> int:
    from consumer.cli.compact import render_outcome, run_compaction
    from consumer.kafka.topic_reader import TopicsUnavailable

    settings = _settings(args)
    try:
        outcome = asyncio.run(
            run_compaction(
                settings,
                tenant=args.tenant,
                namespace=args.namespace,
                dry_run=args.dry_run,
                report_dir=args.report_dir,
                show_text=args.show_text,
                wait_s=args.timeout,
                progress_out=sys.stderr,
            )
        )
    except TopicsUnavailable as exc:
        print(f"memdedup: {exc}", file=sys.stderr)
        return 1
    print(render_outcome(outcome, dry_run=args.dry_run))
    if args.dry_run or not outcome.commands:
        return 0
    if outcome.rejected:
        return 1
    return 3 if outcome.unanswered else 0


def cmd_migrate_collection(args: argparse.Namespace) -> int:
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    from consumer.errors import StoreUnavailable
    from consumer.state.collection_copy import CollectionCopy, copy_collection
    from consumer.state.server import server_client

    settings = _settings(args)
    qdrant = settings.qdrant
    if qdrant.backend != "server":
        raise ConfigError(
            "migrate-collection copies a collection on a Qdrant server: set "
            "MEMDEDUP_QDRANT__URL (and MEMDEDUP_QDRANT__API_KEY); the embedded store "
            "stores no placeholder vectors and needs no migration"
        )
    source = args.source or qdrant.collection

    def progress(copied: int) -> None:
        print(f"  {copied:,} points copied", file=sys.stderr, flush=True)

    async def run() -> CollectionCopy:
        assert qdrant.url is not None  # the server backend: checked above
        client = server_client(
            url=qdrant.url,
            api_key=qdrant.api_key.get_secret_value() if qdrant.api_key else None,
            timeout_s=qdrant.timeout_s,
        )
        try:
            return await copy_collection(
                client=client,
                source=source,
                target=args.to,
                decision_times=settings.retention.decisions_hours is not None,
                on_page=progress,
            )
        finally:
            await client.close()

    try:
        copy = asyncio.run(run())
    # Raw client errors before the target store exists, StoreUnavailable after.
    except (
        UnexpectedResponse,
        ResponseHandlingException,
        httpx.HTTPError,
        StoreUnavailable,
    ) as exc:
        print(
            f"memdedup: Qdrant at {qdrant.url} failed: {exc}; check MEMDEDUP_QDRANT__URL "
            "and MEMDEDUP_QDRANT__API_KEY, then run the same command again (it resumes)",
            file=sys.stderr,
        )
        return 1
    print(
        f"copied {copy.copied:,} points ({copy.with_vectors:,} memories with vectors) "
        f"from {source!r} to {args.to!r}; {source!r} holds {copy.source_points:,} points, "
        f"{args.to!r} {copy.target_points:,}"
    )
    if copy.target_points < copy.source_points:
        print(
            f"memdedup: {args.to!r} holds fewer points than {source!r}: were consumers "
            "still writing? Stop them and run the same command again",
            file=sys.stderr,
        )
        return 1
    print(f"next: set MEMDEDUP_QDRANT__COLLECTION={args.to} and start the consumers")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memdedup",
        description="Deduplicate AI-agent memories from Kafka. Settings: MEMDEDUP_* "
        "environment variables or a YAML file (--config / MEMDEDUP_CONFIG_FILE).",
    )
    subcommands = parser.add_subparsers(dest="command", required=True)

    broker = subcommands.add_parser(
        "broker",
        help="run a local memory-only Kafka broker (Tansu)",
        description="Start a local, memory-only Kafka-compatible broker (Tansu) and print its "
        "bootstrap address. Use it to try memdedup or run tests without a Kafka cluster; "
        "everything on it is lost when it stops (Ctrl-C).",
    )
    broker.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    broker.set_defaults(func=cmd_broker)

    run = subcommands.add_parser(
        "run",
        help="run the consumer",
        description="Run the deduplicating consumer: read events from the input topic, decide "
        "accepted, merged or skipped, and publish the decisions and dead letters. SIGTERM or "
        "Ctrl-C finishes the batch in flight, commits and exits.",
    )
    run.add_argument("--config", type=Path, default=None, help="YAML settings file")
    run.set_defaults(func=cmd_run)

    produce = subcommands.add_parser(
        "produce",
        help="publish events from a JSON Lines file",
        description="Publish events from a JSON Lines file, one event per line, keyed "
        "{tenant_id}/{namespace}, to the input topic. Use it to feed sample or backfilled "
        "events; a line too large for one produce request stops it, naming the line.",
    )
    produce.add_argument(
        "file", type=Path, help="JSON Lines file: one event (a JSON object) per line"
    )
    produce.add_argument(
        "--topic", default=None, help="topic to publish to (default: the input topic setting)"
    )
    produce.add_argument("--config", type=Path, default=None, help="YAML settings file")
    produce.set_defaults(func=cmd_produce)

    topics = subcommands.add_parser(
        "topics",
        help="create the service's topics if missing",
        description="Create the service's topics (input, decisions, dead letters, reversals, "
        "command results, changelog) where they are missing. Run it once against a new "
        "broker, or let the consumer create them as it starts.",
    )
    topics.add_argument("--config", type=Path, default=None)
    topics.set_defaults(func=cmd_topics)

    replay = subcommands.add_parser(
        "replay",
        help="reset a consumer group's offsets (refused while it has active members)",
        description="Reset a consumer group's committed offsets on the input topic so the "
        "consumers process events again from there (decided events re-emit their "
        "decisions). Refused while the group has active members: stop the consumers first.",
    )
    replay.add_argument("--group", required=True, help="consumer group to reset")
    where = replay.add_mutually_exclusive_group(required=True)
    where.add_argument("--to-earliest", action="store_true", help="from the beginning")
    where.add_argument("--to-datetime", metavar="T", help="RFC 3339 time with offset")
    where.add_argument(
        "--to-offset", metavar="P:O", action="append", help="partition:offset (repeatable)"
    )
    replay.add_argument("--topic", default=None, help="default: the input topic setting")
    replay.add_argument(
        "--wait",
        metavar="SECONDS",
        type=float,
        default=0.0,
        help="wait up to this long for the group to have no members (consumers killed a "
        "moment ago stay members for one session timeout); default 0: refuse at once",
    )
    replay.add_argument("--config", type=Path, default=None)
    replay.set_defaults(func=cmd_replay)

    rebuild = subcommands.add_parser(
        "rebuild",
        help="reprocess the input topic into a new collection and diff against live decisions",
        description="Reprocess the input topic into a new collection with the current "
        "settings, leaving the live collection alone, and report how the decisions would "
        "change. Use it to try new thresholds or a new model before switching to them.",
    )
    rebuild.add_argument("--target-collection", required=True, help="a new collection name")
    rebuild.add_argument("--from-datetime", metavar="T", help="RFC 3339 time with offset")
    rebuild.add_argument("--config", type=Path, default=None)
    rebuild.set_defaults(func=cmd_rebuild)

    demo = subcommands.add_parser(
        "demo",
        help="run everything locally on sample events",
        description="Run everything locally on embedded defaults: a local broker, the "
        "consumer and the shipped sample events (or yours), then print every decision and "
        "dead letter. Needs no Kafka and no Qdrant.",
    )
    demo.add_argument(
        "--events",
        type=Path,
        action="append",
        default=None,
        help="JSON Lines file of events; repeat for waves (default: the shipped samples)",
    )
    demo.set_defaults(func=cmd_demo)

    docs = subcommands.add_parser(
        "docs",
        help="write the AsyncAPI document and the events' JSON Schemas",
        description="Write the AsyncAPI document (docs/asyncapi.yaml) and the events' JSON "
        "Schemas (schemas/json/) from the code. With --check, CI fails when the committed "
        "files are stale.",
    )
    docs.add_argument(
        "--out",
        type=Path,
        default=Path(),
        help="root to write docs/asyncapi.yaml and schemas/json/ under (default: .)",
    )
    docs.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the files are stale"
    )
    docs.set_defaults(func=cmd_docs)

    evaluate = subcommands.add_parser(
        "evaluate",
        help="measure dedup quality on labelled pairs (real model, bands, guards)",
        description="Measure deduplication quality on labelled pairs with the real model, the "
        "configured bands and the guards: precision, recall and the worst mistakes. Use it "
        "before changing thresholds or the model.",
    )
    evaluate.add_argument("pairs", type=Path, help="JSON Lines file of labelled pairs")
    evaluate.add_argument("--config", type=Path, default=None, help="YAML settings file")
    evaluate.add_argument("--json", action="store_true", help="print one JSON document")
    evaluate.add_argument(
        "--show-text", action="store_true", help="show the texts of the worst mistakes"
    )
    evaluate.add_argument("--no-guards", action="store_true", help="cosine bands only")
    evaluate.add_argument(
        "--mistakes", type=int, default=10, help="worst mistakes shown per kind (default 10)"
    )
    evaluate.set_defaults(func=cmd_evaluate)

    calibrate = subcommands.add_parser(
        "calibrate",
        help="per-namespace thresholds for a target precision, from labelled pairs",
        description="Derive per-namespace thresholds that reach a target precision on "
        "labelled pairs. Use it to tune the dedup bands from your own data. When the pairs "
        "carry a `split` (tools/split_pairs.py), thresholds are read from the train and dev "
        "pairs and scored on the held-out test pairs; otherwise they are read from and "
        "scored on the same pairs, and the report says so. "
        "A namespace whose target is not reachable is refused with the reason and keeps "
        "its configured bands.",
        epilog="exit status: 0 thresholds proposed; 2 bad input; 3 the default bands cannot "
        "reach the target precision (the report says why; the snippet keeps them unchanged).",
    )
    calibrate.add_argument("pairs", type=Path, help="JSON Lines file of labelled pairs")
    calibrate.add_argument(
        "--target-precision", type=float, required=True, metavar="P", help="e.g. 0.97"
    )
    calibrate.add_argument("--config", type=Path, default=None, help="YAML settings file")
    calibrate.add_argument("--png", type=Path, default=None, help="write the P/R curve here")
    calibrate.add_argument("--no-guards", action="store_true", help="cosine bands only")
    calibrate.add_argument("--json", action="store_true", help="print one JSON document")
    calibrate.set_defaults(func=cmd_calibrate)

    log_cmd = subcommands.add_parser(
        "log",
        help="the audit log: decisions with similarity, guard and review status",
        description="Print the audit log: the decisions on the decision topics with their "
        "similarity, guard and review status, oldest first, without memory texts. Reading "
        "never disturbs running consumers.",
    )
    log_cmd.add_argument("--tenant", default=None)
    log_cmd.add_argument("--namespace", default=None)
    log_cmd.add_argument(
        "--decision",
        action="append",
        choices=["accepted", "merged", "skipped"],
        help="repeatable (default: all)",
    )
    log_cmd.add_argument("--since", default=None, help="ISO time, or a duration: 30m, 2h, 7d")
    log_cmd.add_argument("--limit", type=int, default=0, help="only the newest N")
    log_cmd.add_argument("--json", action="store_true", help="print a JSON array")
    log_cmd.add_argument("--config", type=Path, default=None)
    log_cmd.set_defaults(func=cmd_log)

    tail_cmd = subcommands.add_parser(
        "tail",
        help="print decisions and dead letters as they arrive",
        description="Print the decisions and dead letters the service publishes as they "
        "arrive, one row each, as the demo's table shows them (memory texts only with "
        "--show-text). Starts at the end unless --from-beginning; it never joins or commits "
        "to the service's consumer group.",
    )
    tail_cmd.add_argument(
        "--topic",
        choices=["decisions", "dlq", "all"],
        default="all",
        help="decisions: the accepted, merged and skipped topics; dlq: the dead letters; "
        "all: both (default)",
    )
    tail_cmd.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the earliest kept record (default: only records published from now)",
    )
    tail_cmd.add_argument("--json", action="store_true", help="print one JSON object per line")
    tail_cmd.add_argument(
        "--exit-at-end",
        action="store_true",
        help="exit once caught up with the ends the topics had at start (for scripts)",
    )
    tail_cmd.add_argument(
        "--show-text", action="store_true", help="show the stored memory texts too"
    )
    tail_cmd.add_argument("--config", type=Path, default=None, help="YAML settings file")
    tail_cmd.set_defaults(func=cmd_tail)

    review = subcommands.add_parser(
        "review",
        help="confirm a decision, or reverse a semantic skip or merge",
        description="Confirm a decision, or reverse a semantic skip or merge: sends a review "
        "command to the consumer that owns the decision's scope and prints its result. Find "
        "decision ids with `memdedup log`.",
    )
    review.add_argument("decision_id", help="the decision_id column of `memdedup log`")
    review.add_argument("action", choices=["confirm", "reverse"])
    review.add_argument("--reviewer", default=None, help="who reviews (kept with the result)")
    review.add_argument("--note", default=None, help="why (kept with the result)")
    review.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for the result (default 30)"
    )
    review.add_argument("--no-wait", action="store_true", help="publish and return")
    review.add_argument("--config", type=Path, default=None)
    review.set_defaults(func=cmd_review)

    compact = subcommands.add_parser(
        "compact",
        help="fold duplicate clusters among stored memories (--dry-run: report only)",
        description="Fold clusters of duplicates among the stored memories, with the guards, "
        "through the running consumers. Run it with --dry-run first: that changes nothing "
        "and writes a report.",
    )
    compact.add_argument("--tenant", default=None)
    compact.add_argument("--namespace", default=None)
    compact.add_argument("--dry-run", action="store_true", help="change nothing; write a report")
    compact.add_argument(
        "--report-dir",
        type=Path,
        default=Path("compaction-report"),
        help="where --dry-run writes compaction-report.md/.html (default ./compaction-report)",
    )
    compact.add_argument("--show-text", action="store_true", help="put memory texts in the report")
    compact.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for results (default 60)"
    )
    compact.add_argument("--config", type=Path, default=None)
    compact.set_defaults(func=cmd_compact)

    migrate = subcommands.add_parser(
        "migrate-collection",
        help="copy a Qdrant server collection of an earlier version into the current "
        "layout (no placeholder vectors); stop the consumers first",
        description="Copy a Qdrant server collection written by an earlier version "
        "(placeholder vectors) into the current layout under a new name. Stop the consumers "
        "first; running it again resumes.",
    )
    migrate.add_argument("--to", required=True, help="the new collection's name")
    migrate.add_argument(
        "--from",
        dest="source",
        default=None,
        help="the collection to copy (default: qdrant.collection of the settings)",
    )
    migrate.add_argument("--config", type=Path, default=None)
    migrate.set_defaults(func=cmd_migrate_collection)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except ConfigError as exc:
        print(f"memdedup: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"memdedup: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
