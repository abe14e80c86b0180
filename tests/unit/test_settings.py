"""Settings from environment (MEMDEDUP_, __ nesting) over an optional YAML file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from consumer.settings import (
    DEFAULT_DUPLICATE_THRESHOLD,
    DEFAULT_MERGE_THRESHOLD,
    ConfigError,
    QdrantSettings,
    load_settings,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMDEDUP_* variable of the surrounding shell leaks into these tests."""
    for name in list(os.environ):
        if name.upper().startswith("MEMDEDUP_"):
            monkeypatch.delenv(name)


def write_yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "memdedup.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    settings = load_settings()
    assert settings.dedup.duplicate_threshold == DEFAULT_DUPLICATE_THRESHOLD
    assert settings.dedup.merge_threshold == DEFAULT_MERGE_THRESHOLD
    assert settings.topics.input == "memory.extracted"
    assert settings.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert settings.qdrant.backend == "edge"
    assert settings.config_file is None


def test_env_vars_with_prefix_and_nesting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS", "broker:29092")
    monkeypatch.setenv("MEMDEDUP_KAFKA__BATCH_MAX_RECORDS", "17")
    monkeypatch.setenv("MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD", "0.95")
    monkeypatch.setenv("MEMDEDUP_DEDUP__MERGE_THRESHOLD", "0.85")
    monkeypatch.setenv("MEMDEDUP_TOPICS__DLQ", "custom.dlq")
    monkeypatch.setenv("MEMDEDUP_LOG__LEVEL", "DEBUG")
    monkeypatch.setenv("MEMDEDUP_SHUTDOWN_TIMEOUT_S", "5")
    settings = load_settings()
    assert settings.kafka.bootstrap_servers == "broker:29092"
    assert settings.kafka.batch_max_records == 17
    assert settings.dedup.duplicate_threshold == 0.95
    assert settings.dedup.merge_threshold == 0.85
    assert settings.topics.dlq == "custom.dlq"
    assert settings.log.level == "DEBUG"
    assert settings.shutdown_timeout_s == 5.0


def test_env_per_namespace_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_DEDUP__NAMESPACES__FACTS__DUPLICATE_THRESHOLD", "0.97")
    monkeypatch.setenv("MEMDEDUP_DEDUP__NAMESPACES__FACTS__MERGE_THRESHOLD", "0.93")
    settings = load_settings()
    assert settings.bands_for("facts").duplicate_threshold == 0.97
    assert settings.bands_for("facts").merge_threshold == 0.93
    assert settings.bands_for("prefs").duplicate_threshold == DEFAULT_DUPLICATE_THRESHOLD


def test_unprefixed_env_vars_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA__BOOTSTRAP_SERVERS", "nope:1")
    assert load_settings().kafka.bootstrap_servers == "127.0.0.1:9092"


YAML = """
kafka:
  bootstrap_servers: file-broker:9092
  group_id: from-file
dedup:
  duplicate_threshold: 0.93
  merge_threshold: 0.7
  namespaces:
    facts:
      duplicate_threshold: 0.98
      merge_threshold: 0.95
    scratch:
      duplicate_threshold: 0.85
qdrant:
  path: /var/lib/memdedup
"""


def test_yaml_file(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, YAML)
    settings = load_settings(path)
    assert settings.config_file == path
    assert settings.kafka.bootstrap_servers == "file-broker:9092"
    assert settings.kafka.group_id == "from-file"
    assert settings.dedup.duplicate_threshold == 0.93
    assert settings.dedup.merge_threshold == 0.7
    facts = settings.bands_for("facts")
    assert (facts.duplicate_threshold, facts.merge_threshold) == (0.98, 0.95)
    scratch = settings.bands_for("scratch")
    assert (scratch.duplicate_threshold, scratch.merge_threshold) == (
        0.85,
        DEFAULT_MERGE_THRESHOLD,
    )
    assert settings.bands_for("prefs") == settings.dedup
    assert settings.qdrant.path == Path("/var/lib/memdedup")


def test_yaml_file_from_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_yaml(tmp_path, YAML)
    monkeypatch.setenv("MEMDEDUP_CONFIG_FILE", str(path))
    settings = load_settings()
    assert settings.kafka.group_id == "from-file"
    assert settings.config_file == path


def test_env_overrides_file_and_merges_nested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_yaml(tmp_path, YAML)
    monkeypatch.setenv("MEMDEDUP_KAFKA__GROUP_ID", "from-env")
    monkeypatch.setenv("MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD", "0.96")
    settings = load_settings(path)
    assert settings.kafka.group_id == "from-env"
    # The rest of the same sections still comes from the file.
    assert settings.kafka.bootstrap_servers == "file-broker:9092"
    assert settings.dedup.duplicate_threshold == 0.96
    assert settings.dedup.merge_threshold == 0.7
    assert settings.bands_for("facts").duplicate_threshold == 0.98


def test_overrides_lose_to_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_KAFKA__GROUP_ID", "from-env")
    settings = load_settings(kafka={"group_id": "from-arg", "client_id": "cli"})
    assert settings.kafka.group_id == "from-env"
    assert settings.kafka.client_id == "cli"


def test_empty_yaml_file_gives_defaults(tmp_path: Path) -> None:
    settings = load_settings(write_yaml(tmp_path, ""))
    assert settings.dedup.duplicate_threshold == DEFAULT_DUPLICATE_THRESHOLD


@pytest.mark.parametrize(
    ("env", "fragments"),
    [
        (
            {"MEMDEDUP_DEDUP__MERGE_THRESHOLD": "0.99"},
            ["MEMDEDUP_DEDUP", "merge_threshold", "duplicate_threshold"],
        ),
        (
            {"MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD": "1.5"},
            ["MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD", "dedup.duplicate_threshold"],
        ),
        (
            {"MEMDEDUP_DEDUP__MERGE_THRESHOLD": "-0.1"},
            ["MEMDEDUP_DEDUP__MERGE_THRESHOLD"],
        ),
        (
            {"MEMDEDUP_KAFKA__HEARTBEAT_INTERVAL_MS": "10000"},
            ["MEMDEDUP_KAFKA", "heartbeat_interval_ms"],
        ),
        (
            {
                "MEMDEDUP_KAFKA__SESSION_TIMEOUT_MS": "6000",
                "MEMDEDUP_KAFKA__HEARTBEAT_INTERVAL_MS": "7000",
            },
            ["MEMDEDUP_KAFKA", "heartbeat_interval_ms"],
        ),
        (
            {"MEMDEDUP_KAFKA__BATCH_MAX_RECORDS": "0"},
            ["MEMDEDUP_KAFKA__BATCH_MAX_RECORDS"],
        ),
        (
            {"MEMDEDUP_LOG__LEVEL": "chatty"},
            ["MEMDEDUP_LOG__LEVEL"],
        ),
    ],
)
def test_invalid_env_values_raise_config_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], fragments: list[str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert message.startswith("invalid settings:")
    for fragment in fragments:
        assert fragment in message


def test_invalid_namespace_bands_in_file(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path,
        "dedup:\n  namespaces:\n    facts:\n      duplicate_threshold: 0.5\n      merge_threshold: 0.9\n",
    )
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert "MEMDEDUP_DEDUP__NAMESPACES__FACTS" in message
    assert "dedup.namespaces.facts" in message


def test_threshold_out_of_range_in_file(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, "dedup:\n  duplicate_threshold: 1.5\n")
    with pytest.raises(ConfigError, match="MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD"):
        load_settings(path)


def test_unknown_key_in_file(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, "kafka:\n  bootstrap_server: typo:9092\n")
    with pytest.raises(ConfigError, match="MEMDEDUP_KAFKA__BOOTSTRAP_SERVER"):
        load_settings(path)


def test_file_and_env_combine_into_invalid_bands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_yaml(tmp_path, "dedup:\n  merge_threshold: 0.85\n")
    monkeypatch.setenv("MEMDEDUP_DEDUP__DUPLICATE_THRESHOLD", "0.84")
    with pytest.raises(ConfigError, match="merge_threshold"):
        load_settings(path)


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match="cannot read config file") as info:
        load_settings(missing)
    assert str(missing) in str(info.value)


def test_missing_file_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_CONFIG_FILE", str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings()


def test_invalid_yaml(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, "kafka: [unclosed\n  - x: : :\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(path)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_yaml_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="mapping at the top level"):
        load_settings(write_yaml(tmp_path, text))


@pytest.mark.parametrize(
    ("kwargs", "backend"),
    [
        ({"url": "http://qdrant:6333"}, "server"),
        ({"url": "http://qdrant:6333", "location": ":memory:"}, "server"),
        ({"location": ":memory:"}, "local"),
        ({}, "edge"),
        ({"url": ""}, "edge"),
        ({"path": "/tmp/x"}, "edge"),
    ],
)
def test_qdrant_backend_selection(kwargs: dict[str, str], backend: str) -> None:
    assert QdrantSettings(**kwargs).backend == backend


def test_qdrant_backend_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_QDRANT__URL", "http://qdrant:6333")
    monkeypatch.setenv("MEMDEDUP_QDRANT__API_KEY", "s3cret")
    settings = load_settings()
    assert settings.qdrant.backend == "server"
    assert settings.qdrant.api_key is not None
    assert settings.qdrant.api_key.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    monkeypatch.delenv("MEMDEDUP_QDRANT__URL")
    monkeypatch.delenv("MEMDEDUP_QDRANT__API_KEY")
    monkeypatch.setenv("MEMDEDUP_QDRANT__LOCATION", ":memory:")
    assert load_settings().qdrant.backend == "local"


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(Exception, match="frozen"):
        settings.shutdown_timeout_s = 1.0  # type: ignore[misc]
