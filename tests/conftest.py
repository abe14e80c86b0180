"""Shared fixtures: one local broker and one real model per test session."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def local_broker() -> Iterator[object]:
    from consumer.localbroker import LocalBroker

    with LocalBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def real_embedder() -> Iterator[object]:
    from consumer.embedding import SentenceTransformerEmbedder

    embedder = asyncio.run(
        SentenceTransformerEmbedder.load(
            model_path=None, model_id="sentence-transformers/all-MiniLM-L6-v2", batch_size=64
        )
    )
    yield embedder
    asyncio.run(embedder.close())
