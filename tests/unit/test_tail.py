"""`memdedup tail`'s pure parts: which topics, the rows of decision and
dead-letter records, the table and JSON lines."""

from __future__ import annotations

import io
import json

import pytest

from consumer.cli.tail import Printer, table_header, tail_row, tail_topics
from consumer.settings import Settings, load_settings
from schemas import DeadLetterCode, DeadLetterHeaders
from tests.unit.test_auditlog import decision


@pytest.fixture
def settings() -> Settings:
    return load_settings()


def decision_bytes(**changes: object) -> bytes:
    return decision(**changes).model_dump_json().encode()


def dead_letter_headers(settings: Settings) -> list[tuple[str, bytes]]:
    headers = DeadLetterHeaders(
        error_code=DeadLetterCode.INVALID_JSON,
        error_detail="record value is not JSON: Expecting value at line 1 column 1",
        source_topic=settings.topics.input,
        source_partition=2,
        source_offset=7,
    ).to_kafka()
    return [(k, v.encode()) for k, v in headers.items()] + [("event_id", b"bad-1")]


def test_tail_reads_the_decision_topics_the_dlq_or_both(settings: Settings) -> None:
    t = settings.topics
    assert tail_topics(settings, "decisions") == [t.accepted, t.merged, t.skipped]
    assert tail_topics(settings, "dlq") == [t.dlq]
    assert tail_topics(settings, "all") == [t.accepted, t.merged, t.skipped, t.dlq]


def test_a_decision_row_is_the_demo_row(settings: Settings) -> None:
    item = tail_row(settings.topics.merged, decision_bytes(), [], settings)
    row = item.row
    assert (row.partition_in, row.offset_in) == (0, 3)
    assert (row.event_id, row.scope, row.outcome) == ("e-1", "acme/bio", "merged")
    assert row.detail == "semantic sim=0.877"
    assert row.decision_id == "d-1"
    assert (item.decision, item.reason, item.memory_id) == ("merged", "semantic", "m-1")


def test_a_dead_letter_row_carries_its_code_and_detail(settings: Settings) -> None:
    headers = dead_letter_headers(settings)
    item = tail_row(settings.topics.dlq, b"{not json", headers, settings)
    assert item.row.outcome == "dlq:invalid_json"
    assert (item.row.partition_in, item.row.offset_in, item.row.event_id) == (2, 7, "bad-1")
    assert item.error_code == "invalid_json"
    assert item.error_detail is not None
    assert item.error_detail.startswith("record value is not")


@pytest.mark.parametrize("topic_attr", ["accepted", "dlq"])
def test_a_record_that_cannot_be_read_is_shown_not_dropped(
    settings: Settings, topic_attr: str
) -> None:
    item = tail_row(getattr(settings.topics, topic_attr), b"garbage", [], settings)
    assert item.row.outcome == "unreadable"


def test_the_table_streams_aligned_rows_without_text(settings: Settings) -> None:
    out = io.StringIO()
    printer = Printer(out, as_json=False, show_text=False)
    printer.header()
    printer(tail_row(settings.topics.merged, decision_bytes(), [], settings))
    printer(tail_row(settings.topics.merged, decision_bytes(), [], settings))
    printer(tail_row(settings.topics.dlq, b"x", dead_letter_headers(settings), settings))
    header, rule, first, copy, dead = out.getvalue().splitlines()
    assert header.split() == ["input", "event_id", "scope", "outcome", "memory", "why"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert "peanuts" not in out.getvalue()
    why = header.index("why")
    for line, outcome in ((first, "merged"), (copy, "merged (re-emitted)"), (dead, "dlq:")):
        assert line[header.index("outcome") :].startswith(outcome)
        assert line[why - 2 : why] == "  "
    assert first[why:] == "semantic sim=0.877"
    assert dead[why:].startswith("record value is not JSON")
    assert dead.startswith("p2@7")
    assert printer.rows == 3


def test_show_text_adds_the_stored_text(settings: Settings) -> None:
    out = io.StringIO()
    printer = Printer(out, as_json=False, show_text=True)
    printer.header()
    printer(tail_row(settings.topics.merged, decision_bytes(), [], settings))
    assert table_header(show_text=True)[0].endswith("stored memory text")
    assert out.getvalue().splitlines()[2].endswith("User is allergic to peanuts")


def test_json_lines_parse_and_keep_text_out_by_default(settings: Settings) -> None:
    out = io.StringIO()
    printer = Printer(out, as_json=True, show_text=False)
    printer.header()
    printer(tail_row(settings.topics.merged, decision_bytes(), [], settings))
    printer(tail_row(settings.topics.dlq, b"x", dead_letter_headers(settings), settings))
    decided, dead = (json.loads(line) for line in out.getvalue().splitlines())
    assert decided["decision"] == "merged"
    assert decided["memory_id"] == "m-1"
    assert decided["similarity"] == pytest.approx(0.87654)
    assert "content" not in decided
    assert dead["outcome"] == "dlq:invalid_json"
    assert dead["error_code"] == "invalid_json"
    assert dead["input_partition"] == 2
    assert dead["input_offset"] == 7

    shown = io.StringIO()
    Printer(shown, as_json=True, show_text=True)(
        tail_row(settings.topics.merged, decision_bytes(), [], settings)
    )
    assert json.loads(shown.getvalue())["content"] == "User is allergic to peanuts"
