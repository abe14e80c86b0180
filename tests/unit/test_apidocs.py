"""The generated contract documents stay in step with the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from consumer.cli.apidocs import ASYNCAPI_PATH, JSON_SCHEMA_DIR, render_all, stale_docs, write_docs
from consumer.cli.main import main
from schemas import DeadLetterHeaders, MemoryDecisionEvent, MemoryExtracted

REPO = Path(__file__).resolve().parents[2]


def test_checked_in_docs_are_up_to_date(tmp_path: Path) -> None:
    written = write_docs(tmp_path)
    assert {p.relative_to(tmp_path) for p in written} == set(render_all())
    for path in written:
        relative = path.relative_to(tmp_path)
        checked_in = REPO / relative
        assert checked_in.is_file(), f"{relative} is missing: run `memdedup docs`"
        assert checked_in.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"{relative} is stale: run `memdedup docs` and commit the result"
        )


def test_no_stray_schema_files() -> None:
    expected = {p.name for p in render_all() if p.parent == JSON_SCHEMA_DIR}
    assert {p.name for p in (REPO / JSON_SCHEMA_DIR).glob("*.json")} == expected


def test_generation_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    before = render_all()
    monkeypatch.setenv("MEMDEDUP_TOPICS__INPUT", "elsewhere")
    monkeypatch.setenv("MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS", "kafka.internal:9093")
    assert render_all() == before


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        for value in node.values():
            found.extend(_refs(value))
        return found
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def test_asyncapi_document_describes_every_topic() -> None:
    document = yaml.safe_load(render_all()[ASYNCAPI_PATH])
    assert document["asyncapi"] == "3.0.0"
    addresses = {c["address"]: c for c in document["channels"].values()}
    assert set(addresses) == {
        "memory.extracted",
        "memory.accepted",
        "memory.merged",
        "memory.skipped",
        "memory.reversed",
        "memdedup.command-results",
        "memory.dlq",
        "memory.changelog",
    }
    messages = document["components"]["messages"]
    assert messages["MemoryExtracted"]["payload"] == {
        "$ref": "#/components/schemas/MemoryExtracted"
    }
    assert "tenant_id" in messages["MemoryExtracted"]["bindings"]["kafka"]["key"]["description"]
    assert messages["DeadLetter"]["payload"]["format"] == "binary"
    headers = _resolve(document, messages["DeadLetter"]["headers"]["$ref"])
    assert set(DeadLetterHeaders.model_fields) <= set(headers["properties"])
    assert headers["properties"]["source_offset"]["type"] == "string"
    schemas = document["components"]["schemas"]
    assert set(schemas["MemoryExtracted"]["properties"]) == set(MemoryExtracted.model_fields)
    assert set(schemas["MemoryDecisionEvent"]["properties"]) == set(
        MemoryDecisionEvent.model_fields
    )
    changelog = next(c for c in document["channels"].values() if c["address"] == "memory.changelog")
    assert changelog["bindings"]["kafka"]["topicConfiguration"] == {"cleanup.policy": ["compact"]}
    for ref in _refs(document):
        assert _resolve(document, ref) is not None, ref
    for op in document["operations"].values():
        assert op["action"] in ("send", "receive")


def test_json_schemas_match_the_models() -> None:
    files = render_all()
    for model in (MemoryExtracted, MemoryDecisionEvent, DeadLetterHeaders):
        schema = json.loads(files[JSON_SCHEMA_DIR / f"{model.__name__}.schema.json"])
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["title"] == model.__name__
        assert set(schema["properties"]) == set(model.model_fields)
        assert schema["additionalProperties"] is False
        for ref in _refs(schema):
            assert _resolve(schema, ref) is not None, ref


def test_cli_docs_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "--out", str(tmp_path), "--check"]) == 1
    assert main(["docs", "--out", str(tmp_path)]) == 0
    assert (tmp_path / ASYNCAPI_PATH).is_file()
    assert main(["docs", "--out", str(tmp_path), "--check"]) == 0
    assert stale_docs(tmp_path) == []
    (tmp_path / JSON_SCHEMA_DIR / "MemoryExtracted.schema.json").write_text("{}\n")
    assert stale_docs(tmp_path) == [tmp_path / JSON_SCHEMA_DIR / "MemoryExtracted.schema.json"]
    capsys.readouterr()
