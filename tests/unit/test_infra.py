"""Deployment files name only settings that exist, with values the settings accept,
and the Grafana dashboard charts only metrics the service registers."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from consumer.observability.metrics import ServiceMetrics
from consumer.settings import (
    ConfigError,
    Settings,
    TopicSettings,
    environment_variables,
    load_settings,
)

REPO = Path(__file__).resolve().parents[2]
INFRA = REPO / "infra"
COMPOSE = REPO / "docker-compose.yml"
DASHBOARD = INFRA / "grafana" / "memdedup-dashboard.json"
ENV_NAME = re.compile(r"MEMDEDUP_[A-Z0-9_]+")
METRIC_NAME = re.compile(r"\b(?:memdedup|dedup)_[a-z0-9_]+")


def setting_env_names() -> set[str]:
    """Every variable the settings read, and each section prefix above it
    (`MEMDEDUP_KAFKA`, `MEMDEDUP_DEDUP__MERGER`, ...)."""
    names: set[str] = set()
    for name in environment_variables():
        parts = name.split("__")
        names.update("__".join(parts[:i]) for i in range(1, len(parts) + 1))
    return names


VALID = setting_env_names()


def yaml_files() -> list[Path]:
    files = sorted(p for p in INFRA.rglob("*") if p.suffix in (".yaml", ".yml"))
    return [*files, COMPOSE]


def documents(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [d for d in yaml.safe_load_all(handle) if d is not None]


def strings(node: Any) -> Iterator[str]:
    """Every key and string value of a parsed document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                yield key
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)
    elif isinstance(node, str):
        yield node


def test_valid_names_are_derived_from_the_settings() -> None:
    assert "MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS" in VALID
    assert "MEMDEDUP_QDRANT__API_KEY" in VALID
    assert "MEMDEDUP_SHUTDOWN_TIMEOUT_S" in VALID
    assert "MEMDEDUP_HTTP__PORT" in VALID
    assert "MEMDEDUP_SECURITY__SASL_PASSWORD" in VALID
    assert "MEMDEDUP_KAFKA__BOOTSTRAP_SERVER" not in VALID


def test_there_are_files_to_check() -> None:
    names = {p.relative_to(REPO).as_posix() for p in yaml_files()}
    assert {
        "docker-compose.yml",
        "infra/k8s/deployment.yaml",
        "infra/k8s/service.yaml",
        "infra/k8s/pdb.yaml",
        "infra/k8s/keda-scaledobject.yaml",
        "infra/k8s/secret.example.yaml",
    } <= names


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_yaml_names_only_real_settings(path: Path) -> None:
    found = {name for text in strings(documents(path)) for name in ENV_NAME.findall(text)}
    unknown = sorted(found - VALID)
    assert not unknown, f"{path.name} names settings that do not exist: {unknown}"


def test_dockerfile_names_only_real_settings() -> None:
    found = set(ENV_NAME.findall((REPO / "Dockerfile").read_text(encoding="utf-8")))
    assert found
    assert not sorted(found - VALID)


# -- the values are accepted by the settings ------------------------------------


def k8s_objects(kind: str) -> list[dict[str, Any]]:
    return [
        d
        for p in yaml_files()
        if p != COMPOSE
        for d in documents(p)
        if isinstance(d, dict) and d.get("kind") == kind
    ]


def deployment() -> dict[str, Any]:
    (found,) = k8s_objects("Deployment")
    return found


def container_env(container: dict[str, Any]) -> dict[str, str]:
    """Plain values as they are; a required secret gets a placeholder; optional
    secrets and field references are left out (absent when the key is)."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
            continue
        ref = item["valueFrom"].get("secretKeyRef")
        if ref is not None and not ref.get("optional", False):
            env[item["name"]] = "placeholder"
    return env


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    raw = service.get("environment", {})
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    # ${VAR:-default} -> default
    return {k: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(v)) for k, v in raw.items()}


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in list(os.environ):
        if name.upper().startswith("MEMDEDUP_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        return load_settings()
    except ConfigError as exc:  # pragma: no cover - the message is the point
        pytest.fail(f"settings reject these values: {exc}")


def test_deployment_env_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = deployment()["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    settings = settings_from(container_env(container), monkeypatch)
    assert settings.qdrant.backend == "server"
    assert settings.topics.create is False
    # The API key comes from a Secret, never a literal.
    (api_key,) = [e for e in container["env"] if e["name"] == "MEMDEDUP_QDRANT__API_KEY"]
    assert "secretKeyRef" in api_key["valueFrom"]
    for item in container["env"]:
        if "PASSWORD" in item["name"] or "API_KEY" in item["name"]:
            assert "value" not in item, f"{item['name']} must come from a Secret"

    assert spec["terminationGracePeriodSeconds"] > settings.shutdown_timeout_s
    (port,) = container["ports"]
    assert port["containerPort"] == settings.http.port == 9464
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] in (port["name"], port["containerPort"])
    assert container["resources"]["requests"]
    assert container["resources"]["limits"]["memory"]


def test_compose_env_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    (compose,) = documents(COMPOSE)
    for name, service in compose["services"].items():
        env = compose_env(service)
        if any(k.startswith("MEMDEDUP_") for k in env):
            settings = settings_from(env, monkeypatch)
            assert settings.kafka.bootstrap_servers == "kafka:9092", name
    consumer = compose["services"]["consumer"]
    settings = settings_from(compose_env(consumer), monkeypatch)
    assert "9464" in consumer["healthcheck"]["test"][-1]
    assert str(settings.http.port) in {str(p) for p in consumer["expose"]}


def test_secrets_referenced_by_the_deployment_are_in_the_example() -> None:
    (secret,) = k8s_objects("Secret")
    keys = set(secret["stringData"])
    referenced = {
        item["valueFrom"]["secretKeyRef"]["key"]
        for container in deployment()["spec"]["template"]["spec"]["containers"]
        for item in container["env"]
        if "secretKeyRef" in item.get("valueFrom", {})
    }
    assert referenced <= keys
    for auth in k8s_objects("TriggerAuthentication"):
        assert {ref["key"] for ref in auth["spec"]["secretTargetRef"]} <= keys


def test_keda_scales_on_lag_up_to_the_partition_count() -> None:
    (scaled,) = k8s_objects("ScaledObject")
    spec = scaled["spec"]
    topics = TopicSettings()
    assert spec["maxReplicaCount"] == topics.partitions == 6
    assert spec["scaleTargetRef"]["name"] == deployment()["metadata"]["name"]
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["topic"] == topics.input
    env = container_env(deployment()["spec"]["template"]["spec"]["containers"][0])
    assert trigger["metadata"]["consumerGroup"] == env["MEMDEDUP_KAFKA__GROUP_ID"]
    assert trigger["metadata"]["bootstrapServers"] == env["MEMDEDUP_KAFKA__BOOTSTRAP_SERVERS"]
    # The compose topic job creates as many partitions.
    (compose,) = documents(COMPOSE)
    assert compose["services"]["topics"]["environment"]["PARTITIONS"] == str(topics.partitions)


def test_selectors_match_the_pods() -> None:
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    for kind in ("Service", "PodDisruptionBudget"):
        for obj in k8s_objects(kind):
            selector = obj["spec"]["selector"]
            selector = selector.get("matchLabels", selector)
            assert selector.items() <= labels.items(), kind


# -- the dashboard --------------------------------------------------------------


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("expr", "definition", "query") and isinstance(value, str):
                    exprs.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(dashboard)
    return exprs


def test_dashboard_uses_only_registered_metrics() -> None:
    registered = ServiceMetrics().metric_names()
    used = {name for expr in dashboard_exprs() for name in METRIC_NAME.findall(expr)}
    assert used
    unknown = sorted(used - registered)
    assert not unknown, f"the dashboard charts metrics nobody registers: {unknown}"


def test_dashboard_charts_every_metric() -> None:
    families = {f.name for f in ServiceMetrics().registry.collect()}
    text = " ".join(dashboard_exprs())
    missing = sorted(f for f in families if f not in text)
    assert not missing, f"no panel for: {missing}"


def test_dashboard_panels_have_unique_ids() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_topic_script_creates_every_topic_the_service_uses() -> None:
    from consumer.kafka.topics import topic_names
    from consumer.settings import Settings

    script = (REPO / "infra" / "create-topics.sh").read_text()
    listed = re.search(r"for topic in (.*?); do", script, re.DOTALL)
    assert listed is not None
    assert listed.group(1).replace("\\", " ").split() == topic_names(Settings())
