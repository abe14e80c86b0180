"""The event contract as documents: an AsyncAPI 3.0 description of the topics and a
JSON Schema per event model, generated from the pydantic models in `schemas/`.

`memdedup docs` writes them into the repository (docs/asyncapi.yaml,
schemas/json/*.schema.json); a unit test regenerates them and fails when the
checked-in copies are stale. Topic names and partitions are the defaults of
consumer.settings, never the environment, so the output is the same everywhere.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from consumer.settings import KafkaSettings, TopicSettings
from schemas.commands import CommandResult, MemoryCommand, MemoryReversed
from schemas.events import (
    NAMESPACE_PATTERN,
    SCHEMA_VERSION,
    TENANT_PATTERN,
    DeadLetterHeaders,
    MemoryDecisionEvent,
    MemoryExtracted,
)

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
ASYNCAPI_PATH: Final = Path("docs/asyncapi.yaml")
JSON_SCHEMA_DIR: Final = Path("schemas/json")
_KAFKA_BINDING: Final = "0.5.0"
_COMPONENT_REF: Final = "#/components/schemas/{model}"

Mode = Literal["validation", "serialization"]

# Input is documented as producers must send it, outputs as memdedup writes them.
EVENT_MODELS: Final[tuple[tuple[type[BaseModel], Mode], ...]] = (
    (MemoryExtracted, "validation"),
    (MemoryDecisionEvent, "serialization"),
    (DeadLetterHeaders, "validation"),
    (MemoryCommand, "validation"),
    (CommandResult, "serialization"),
    (MemoryReversed, "serialization"),
)

_SCOPE_KEY: Final = {
    "type": "string",
    "description": (
        "`{tenant_id}/{namespace}`, UTF-8. Producers must key records this way: one "
        "scope then always lands on one partition."
    ),
    "pattern": f"^{TENANT_PATTERN[1:-1]}/{NAMESPACE_PATTERN[1:-1]}$",
    "examples": ["acme/preferences"],
}


def json_schema_files() -> dict[Path, str]:
    """schemas/json/<Model>.schema.json for each event model, as text."""
    files: dict[Path, str] = {}
    for model, mode in EVENT_MODELS:
        schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT}
        schema.update(model.model_json_schema(mode=mode))
        files[JSON_SCHEMA_DIR / f"{model.__name__}.schema.json"] = _dump_json(schema)
    return files


def asyncapi_document() -> dict[str, Any]:
    """The AsyncAPI 3.0 document of memdedup's topics."""
    topics = TopicSettings()
    kafka = KafkaSettings()
    _, top = models_json_schema(list(EVENT_MODELS), ref_template=_COMPONENT_REF)
    schemas: dict[str, Any] = dict(sorted(top["$defs"].items()))
    schemas["DeadLetterRecordHeaders"] = _kafka_headers(schemas["DeadLetterHeaders"])
    schemas["ChangelogPoint"] = _CHANGELOG_POINT

    def channel(
        address: str, summary: str, messages: list[str], *, compact: bool = False
    ) -> dict[str, Any]:
        binding: dict[str, Any] = {
            "topic": address,
            "partitions": topics.partitions,
            "replicas": topics.replication_factor,
        }
        if compact:
            binding["topicConfiguration"] = {"cleanup.policy": ["compact"]}
        binding["bindingVersion"] = _KAFKA_BINDING
        return {
            "address": address,
            "title": address,
            "summary": summary,
            "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in messages},
            "bindings": {"kafka": binding},
        }

    channels = {
        "memoryExtracted": channel(
            topics.input,
            "Extracted memories to deduplicate (input), and the commands of `memdedup "
            "review` and `memdedup compact`, keyed like the memories of their scope.",
            ["MemoryExtracted", "MemoryCommand"],
        ),
        "memoryReversed": channel(
            topics.reversed,
            "Compensating events of reversed skips and merges (`memdedup review`).",
            ["MemoryReversed"],
        ),
        "commandResults": channel(
            topics.command_results,
            "One result per command: applied or rejected, and why.",
            ["CommandResult"],
        ),
        "memoryAccepted": channel(
            topics.accepted, "New memories, stored as they are.", ["MemoryDecisionEvent"]
        ),
        "memoryMerged": channel(
            topics.merged,
            "Paraphrases folded into an existing memory.",
            ["MemoryDecisionEvent"],
        ),
        "memorySkipped": channel(
            topics.skipped, "Duplicates of an existing memory.", ["MemoryDecisionEvent"]
        ),
        "memoryDlq": channel(
            topics.dlq, "Records that cannot be decided, with their original bytes.", ["DeadLetter"]
        ),
        "memoryChangelog": channel(
            topics.changelog,
            "Changes of the embedded store, one partition per input partition "
            "(internal; unused with a Qdrant server).",
            ["ChangelogPoint"],
            compact=True,
        ),
    }

    group_binding = {
        "kafka": {
            "groupId": {"type": "string", "default": kafka.group_id},
            "clientId": {"type": "string", "default": kafka.client_id},
            "bindingVersion": _KAFKA_BINDING,
        }
    }

    def operation(
        action: str, channel_id: str, message: str, summary: str, *, group: bool = False
    ) -> dict[str, Any]:
        op: dict[str, Any] = {
            "action": action,
            "channel": {"$ref": f"#/channels/{channel_id}"},
            "summary": summary,
            "messages": [{"$ref": f"#/channels/{channel_id}/messages/{message}"}],
        }
        if group:
            op["bindings"] = group_binding
        return op

    operations = {
        "consumeMemoryExtracted": operation(
            "receive",
            "memoryExtracted",
            "MemoryExtracted",
            "Decide each memory: accepted, merged or skipped; bad input is dead-lettered.",
            group=True,
        ),
        "publishReversed": operation(
            "send", "memoryReversed", "MemoryReversed", "Publish a reversal of a decision."
        ),
        "publishCommandResult": operation(
            "send", "commandResults", "CommandResult", "Publish what a command did."
        ),
        "publishAccepted": operation(
            "send", "memoryAccepted", "MemoryDecisionEvent", "Publish an accepted decision."
        ),
        "publishMerged": operation(
            "send", "memoryMerged", "MemoryDecisionEvent", "Publish a merged decision."
        ),
        "publishSkipped": operation(
            "send", "memorySkipped", "MemoryDecisionEvent", "Publish a skipped decision."
        ),
        "publishDeadLetter": operation(
            "send", "memoryDlq", "DeadLetter", "Dead-letter a record that cannot be decided."
        ),
        "appendChangelog": operation(
            "send",
            "memoryChangelog",
            "ChangelogPoint",
            "Record a point before the embedded store writes it.",
        ),
        "restoreChangelog": operation(
            "receive",
            "memoryChangelog",
            "ChangelogPoint",
            "Replay a partition's changes into a shard this consumer lacks.",
        ),
    }

    messages = {
        "MemoryExtracted": {
            "name": "MemoryExtracted",
            "title": "Extracted memory",
            "summary": "An extracted memory, as producers send it.",
            "contentType": "application/json",
            "payload": {"$ref": "#/components/schemas/MemoryExtracted"},
            "bindings": {"kafka": {"key": _SCOPE_KEY, "bindingVersion": _KAFKA_BINDING}},
        },
        "MemoryCommand": {
            "name": "MemoryCommand",
            "title": "Command",
            "summary": (
                "A review of a decision or a compaction of a cluster, applied by the "
                "consumer that owns the scope's partition."
            ),
            "contentType": "application/json",
            "payload": {"$ref": "#/components/schemas/MemoryCommand"},
            "bindings": {"kafka": {"key": _SCOPE_KEY, "bindingVersion": _KAFKA_BINDING}},
        },
        "MemoryReversed": {
            "name": "MemoryReversed",
            "title": "Reversal",
            "summary": (
                "A skip or merge a reviewer reversed: the event's text is a memory of its "
                "own again; the target memory is given as it now stands."
            ),
            "contentType": "application/json",
            "payload": {"$ref": "#/components/schemas/MemoryReversed"},
            "bindings": {"kafka": {"key": _SCOPE_KEY, "bindingVersion": _KAFKA_BINDING}},
        },
        "CommandResult": {
            "name": "CommandResult",
            "title": "Command result",
            "summary": "Whether a command was applied, and what it changed.",
            "contentType": "application/json",
            "payload": {"$ref": "#/components/schemas/CommandResult"},
            "bindings": {"kafka": {"key": _SCOPE_KEY, "bindingVersion": _KAFKA_BINDING}},
        },
        "MemoryDecisionEvent": {
            "name": "MemoryDecisionEvent",
            "title": "Decision",
            "summary": (
                "What was decided for one input event. Replays re-emit it byte for "
                "byte: deduplicate by decision_id."
            ),
            "contentType": "application/json",
            "payload": {"$ref": "#/components/schemas/MemoryDecisionEvent"},
            "bindings": {"kafka": {"key": _SCOPE_KEY, "bindingVersion": _KAFKA_BINDING}},
        },
        "DeadLetter": {
            "name": "DeadLetter",
            "title": "Dead letter",
            "summary": (
                "The original record value, untouched; the original headers are kept and "
                "the error headers added."
            ),
            "contentType": "application/octet-stream",
            "headers": {"$ref": "#/components/schemas/DeadLetterRecordHeaders"},
            "payload": {
                "type": "string",
                "format": "binary",
                "description": "The original record value (may be empty or not JSON).",
            },
            "bindings": {
                "kafka": {
                    "key": {
                        "type": ["string", "null"],
                        "description": "The original record key, untouched.",
                    },
                    "bindingVersion": _KAFKA_BINDING,
                }
            },
        },
        "ChangelogPoint": {
            "name": "ChangelogPoint",
            "title": "Changelog point",
            "summary": "A point of the embedded store, with its vector; compacted by point id.",
            "contentType": "application/json",
            "payload": {"$ref": "#/components/schemas/ChangelogPoint"},
            "bindings": {
                "kafka": {
                    "key": {"type": "string", "description": "The point id (a UUID)."},
                    "bindingVersion": _KAFKA_BINDING,
                }
            },
        },
    }

    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "memdedup",
            "version": f"{SCHEMA_VERSION}.0.0",
            "description": (
                "Deduplication of AI-agent memories. memdedup consumes extracted memories, "
                "decides for each whether it is new (accepted), a paraphrase worth folding "
                "into an existing memory (merged) or a duplicate (skipped), and publishes "
                "the decision. Generated by `memdedup docs` from the models in `schemas/`; "
                "topic names are the defaults (MEMDEDUP_TOPICS__*)."
            ),
            "license": {"name": "Apache-2.0"},
        },
        "defaultContentType": "application/json",
        "servers": {
            "kafka": {
                "host": kafka.bootstrap_servers,
                "protocol": "kafka",
                "description": "Any Kafka cluster (MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS).",
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": schemas},
    }


def asyncapi_yaml() -> str:
    return yaml.safe_dump(
        asyncapi_document(), sort_keys=False, allow_unicode=True, width=100, indent=2
    )


def render_all() -> dict[Path, str]:
    """Every generated file, by path relative to the repository root."""
    files = {ASYNCAPI_PATH: asyncapi_yaml()}
    files.update(json_schema_files())
    return files


def write_docs(root: Path) -> list[Path]:
    """Write every generated file under `root`; returns the paths written."""
    written: list[Path] = []
    for relative, text in render_all().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def stale_docs(root: Path) -> list[Path]:
    """Generated files under `root` that are missing or differ from a fresh render."""
    stale: list[Path] = []
    for relative, text in render_all().items():
        path = root / relative
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def _dump_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _kafka_headers(headers_schema: dict[str, Any]) -> dict[str, Any]:
    """DeadLetterHeaders as they are on the wire: every header value is UTF-8 text."""
    schema = copy.deepcopy(headers_schema)
    schema["title"] = "DeadLetterRecordHeaders"
    schema["description"] = (
        "Headers of a dead letter: the original record's headers plus these. Header "
        "values are UTF-8 text; integers are written in decimal."
    )
    for prop in schema["properties"].values():
        if prop.get("type") == "integer":
            prop["type"] = "string"
            prop["pattern"] = "^-?[0-9]+$"
    schema["properties"]["event_id"] = {
        "title": "Event Id",
        "type": "string",
        "maxLength": 128,
        "description": "The record's event_id, when it had a readable one.",
    }
    schema["additionalProperties"] = {"type": "string"}
    return schema


_CHANGELOG_POINT: Final[dict[str, Any]] = {
    "title": "ChangelogPoint",
    "description": (
        "A stored point (a memory, a decision record, ...) as carried by the changelog: "
        "restoring it needs no re-embedding. A `seen` point is a memory's seen count "
        "after a skip, keyed apart from the memory; a restore sets it on the memory "
        "written before it."
    ),
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "Point id (UUID)."},
        "vector": {
            "type": "string",
            "contentEncoding": "base64",
            "description": (
                "The vector as little-endian float32 values, base64-encoded; only an "
                "embedded memory (`kind` memory) has one."
            ),
        },
        "payload": {
            "type": "object",
            "description": (
                "The point's payload; `kind` tells memories, decision records and "
                "seen updates apart."
            ),
        },
    },
    "required": ["id", "payload"],
    "additionalProperties": False,
}
