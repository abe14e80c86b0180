"""Shared fixtures: one local broker and one real model per test session; real
Apache Kafka and a Qdrant server (testcontainers) where a Docker engine runs."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def local_broker() -> Iterator[object]:
    from consumer.kafka.localbroker import LocalBroker

    with LocalBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def real_embedder() -> Iterator[object]:
    from consumer.embedding.embedders import SentenceTransformerEmbedder

    embedder = asyncio.run(
        SentenceTransformerEmbedder.load(
            model_path=None, model_id="sentence-transformers/all-MiniLM-L6-v2", batch_size=64
        )
    )
    yield embedder
    asyncio.run(embedder.close())


# Images of the testcontainers fixtures; override to test against other versions.
KAFKA_IMAGE = os.environ.get("MEMDEDUP_TEST_KAFKA_IMAGE", "confluentinc/cp-kafka:7.6.0")
QDRANT_IMAGE = os.environ.get("MEMDEDUP_TEST_QDRANT_IMAGE", "qdrant/qdrant:v1.16.2")
CONTAINER_START_TIMEOUT_S = 180


@functools.cache
def docker_unreachable() -> str | None:
    """Why no Docker engine can be used here, or None when one answers a ping."""
    try:
        import docker

        client = docker.from_env()
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # any failure means: no usable engine
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        return reason if len(reason) <= 200 else reason[:197] + "..."
    return None


def require_docker() -> None:
    reason = docker_unreachable()
    if reason is not None:
        pytest.skip(
            f"no Docker engine reachable ({reason}): these tests run against real "
            "Apache Kafka and a Qdrant server where Docker is available"
        )


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap address of a real Apache Kafka broker (KRaft, one node)."""
    require_docker()
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:  # testcontainers before the community namespace
        from testcontainers.kafka import KafkaContainer

    container = KafkaContainer(KAFKA_IMAGE).with_kraft()
    container.start(timeout=CONTAINER_START_TIMEOUT_S)
    try:
        yield container.get_bootstrap_server()
    finally:
        container.stop()


@pytest.fixture(scope="session")
def qdrant_url() -> Iterator[str]:
    """URL of a Qdrant server (REST)."""
    require_docker()
    try:
        from testcontainers.community.qdrant import QdrantContainer
    except ImportError:  # testcontainers before the community namespace
        from testcontainers.qdrant import QdrantContainer

    with QdrantContainer(QDRANT_IMAGE) as container:
        yield f"http://{container.rest_host_address}"
