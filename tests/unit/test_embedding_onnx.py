"""OnnxEmbedder without onnxruntime: pooling and normalisation math, batching,
padding and order, on a fake session and a tiny tokenizer; and the export cache."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import TemplateProcessing

from consumer.embedding import onnx_export
from consumer.embedding.embedders import (
    OnnxEmbedder,
    available_cpus,
    cgroup_cpu_quota,
    mean_pool_normalize,
    plan_batches,
)
from consumer.errors import EmbedderUnavailable

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3} | {
    word: index + 4 for index, word in enumerate(WORDS)
}
DIMENSION = 6


def tiny_tokenizer(max_length: int = 16) -> Tokenizer:
    tokenizer = Tokenizer(WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


class _Input:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeSession:
    """Token embeddings from a fixed table, context-free; padding rows are made
    large so any leak of padding into the mean shows."""

    def __init__(
        self,
        *,
        with_token_types: bool = True,
        fail: bool = False,
        barrier: threading.Barrier | None = None,
    ) -> None:
        rng = np.random.default_rng(7)
        self.table = rng.normal(size=(len(VOCAB), DIMENSION)).astype(np.float32)
        self.table[0] = 1000.0
        self.with_token_types = with_token_types
        self.fail = fail
        self.feeds: list[dict[str, np.ndarray]] = []
        self.threads: set[str] = set()
        # Set: each run waits there for as many others (runs that overlap).
        self.barrier = barrier
        self.fail_when: Any = None

    def get_inputs(self) -> list[_Input]:
        names = ["input_ids", "attention_mask"]
        if self.with_token_types:
            names.append("token_type_ids")
        return [_Input(name) for name in names]

    def run(self, outputs: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        if self.fail:
            raise RuntimeError("session broke")
        assert outputs == ["last_hidden_state"]
        self.feeds.append(feed)
        self.threads.add(threading.current_thread().name)
        if self.barrier is not None:
            self.barrier.wait(timeout=5)
        if self.fail_when is not None and self.fail_when(feed):
            raise RuntimeError("session broke on this batch")
        return [self.table[feed["input_ids"]]]


def expected_vector(session: FakeSession, text: str) -> np.ndarray:
    ids = [2] + [VOCAB.get(word, 1) for word in text.split()] + [3]
    mean: np.ndarray = session.table[ids].mean(axis=0)
    normalized: np.ndarray = mean / np.linalg.norm(mean)
    return normalized


def make(
    session: FakeSession, batch_size: int = 64, max_length: int = 16, workers: int = 1
) -> OnnxEmbedder:
    return OnnxEmbedder(
        session=session,
        tokenizer=tiny_tokenizer(max_length),
        model_id="fake/onnx",
        batch_size=batch_size,
        workers=workers,
    )


def test_mean_pool_normalize_ignores_masked_tokens() -> None:
    tokens = np.array(
        [
            [[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]],
            [[0.0, 2.0], [0.0, 4.0], [0.0, 6.0]],
        ],
        dtype=np.float32,
    )
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    vectors = mean_pool_normalize(tokens, mask)
    # Row 0: mean of the first two tokens is (2, 2); row 1: (0, 4).
    np.testing.assert_allclose(vectors, [[2**-0.5, 2**-0.5], [0.0, 1.0]], atol=1e-6)
    assert vectors.dtype == np.float32


def test_mean_pool_normalize_is_safe_on_empty_mask_and_zero_vector() -> None:
    tokens = np.zeros((1, 2, 3), dtype=np.float32)
    vectors = mean_pool_normalize(tokens, np.zeros((1, 2)))
    assert np.isfinite(vectors).all()


async def test_embed_matches_pooling_of_each_text_alone() -> None:
    session = FakeSession()
    embedder = make(session)
    texts = ["alpha", "beta gamma delta epsilon zeta", "  eta theta  ", "unknown words here"]
    vectors = await embedder.embed(texts)
    assert vectors.shape == (4, DIMENSION)
    assert vectors.dtype == np.float32
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, expected_vector(session, text.strip()), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    # One batch, padded to its longest text only (7 tokens), not to a fixed length.
    assert [feed["input_ids"].shape for feed in session.feeds[1:]] == [(4, 7)]
    await embedder.close()


async def test_small_batches_keep_input_order() -> None:
    session = FakeSession()
    embedder = make(session, batch_size=2)
    texts = ["alpha beta gamma", "delta", "epsilon zeta eta theta alpha", "beta", "gamma delta"]
    vectors = await embedder.embed(texts)
    expected = np.stack([expected_vector(session, text) for text in texts])
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    # After the dimension probe: longest first, one batch per token count (7, 5,
    # 4, then the two 3-token texts together), none padded.
    assert [feed["input_ids"].shape for feed in session.feeds[1:]] == [
        (1, 7),
        (1, 5),
        (1, 4),
        (2, 3),
    ]
    assert all(feed["attention_mask"].all() for feed in session.feeds[1:])
    await embedder.close()


def test_plan_batches_groups_texts_by_token_count() -> None:
    lengths = [8] * 30 + [10] * 20 + [9] * 3 + [12] * 70
    batches = plan_batches(lengths, batch_size=64)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    by_length = [[lengths[i] for i in batch] for batch in batches]
    # 70 of 12 tokens: a full batch, then 6 more alone (a batch of 8+ is cut where
    # the count drops); 20 of 10 alike; the 3 of 9 are too few to stand alone and
    # take the 30 of 8 with them (padded to 9).
    assert by_length == [[12] * 64, [12] * 6 + [10] * 20, [9] * 3 + [8] * 30]
    # Ties keep input order; the same lengths always give the same batches.
    assert batches[0] == list(range(53, 117))
    assert plan_batches(lengths, batch_size=64) == batches


def test_plan_batches_edges() -> None:
    assert plan_batches([], batch_size=8) == []
    assert plan_batches([5, 7, 6], batch_size=1) == [[1], [2], [0]]
    # Below 8 texts a batch is cut at every drop in length.
    assert plan_batches([3, 5, 5, 4], batch_size=4) == [[1, 2], [3], [0]]


async def test_texts_of_many_lengths_embed_as_each_alone() -> None:
    session = FakeSession()
    embedder = make(session, batch_size=16)
    rng = np.random.default_rng(3)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(200)]
    vectors = await embedder.embed(texts)
    expected = np.stack([expected_vector(session, text) for text in texts])
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    feeds = session.feeds[1:]
    assert sum(feed["input_ids"].shape[0] for feed in feeds) == 200
    assert all(feed["input_ids"].shape[0] <= 16 for feed in feeds)
    padded = sum(feed["input_ids"].size for feed in feeds)
    assert padded == sum(len(text.split()) + 2 for text in texts)  # no padding at all
    await embedder.close()


async def test_truncates_long_texts() -> None:
    session = FakeSession()
    embedder = make(session, max_length=4)
    vectors = await embedder.embed(["alpha beta gamma delta epsilon"])
    # [CLS] alpha beta [SEP]: truncation keeps the special tokens.
    np.testing.assert_allclose(vectors[0], expected_vector(session, "alpha beta"), atol=1e-5)
    await embedder.close()


async def test_feeds_token_types_only_when_the_model_takes_them() -> None:
    with_types, without_types = FakeSession(), FakeSession(with_token_types=False)
    for session in (with_types, without_types):
        embedder = make(session)
        await embedder.embed(["alpha beta"])
        await embedder.close()
    assert "token_type_ids" in with_types.feeds[-1]
    assert "token_type_ids" not in without_types.feeds[-1]


async def test_runs_on_one_worker_thread_and_reports_dimension() -> None:
    session = FakeSession()
    embedder = make(session)
    assert embedder.dimension == DIMENSION
    assert embedder.model_id == "fake/onnx"
    session.threads.clear()
    for _ in range(3):
        await embedder.embed(["alpha", "beta"])
    assert len(session.threads) == 1
    assert next(iter(session.threads)).startswith("embedder")
    assert threading.current_thread().name not in session.threads
    empty = await embedder.embed([])
    assert empty.shape == (0, DIMENSION)
    await embedder.close()


async def test_workers_run_batches_side_by_side_in_the_same_batches() -> None:
    """Batches of one call run at once on several worker threads; the texts fall
    into the same batches as with one worker, and come back in input order."""
    texts = ["alpha beta gamma", "delta", "epsilon zeta eta theta alpha", "beta", "gamma delta"]
    alone, side_by_side = FakeSession(), FakeSession()
    one, four = make(alone, batch_size=2), make(side_by_side, batch_size=2, workers=4)
    side_by_side.barrier = threading.Barrier(4)  # 4 token counts: 4 batches at once
    vectors = await four.embed(texts)
    np.testing.assert_array_equal(vectors, await one.embed(texts))
    expected = np.stack([expected_vector(side_by_side, text) for text in texts])
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    batches = {tuple(map(tuple, feed["input_ids"])) for feed in side_by_side.feeds[1:]}
    assert batches == {tuple(map(tuple, feed["input_ids"])) for feed in alone.feeds[1:]}
    assert len(side_by_side.threads - {"MainThread"}) == 4
    await one.close()
    await four.close()


async def test_a_failed_batch_fails_the_call_and_later_calls_still_run() -> None:
    session = FakeSession()
    embedder = make(session, batch_size=1, workers=2)
    # The batch holding "gamma" ([CLS] gamma [SEP]) fails; the others succeed.
    session.fail_when = lambda feed: VOCAB["gamma"] in feed["input_ids"]
    with pytest.raises(EmbedderUnavailable):
        await embedder.embed(["alpha", "beta", "gamma", "delta"])
    session.fail_when = None
    vectors = await embedder.embed(["alpha", "gamma"])
    np.testing.assert_allclose(vectors[1], expected_vector(session, "gamma"), atol=1e-5)
    await embedder.close()


async def test_session_failure_is_transient() -> None:
    session = FakeSession()
    embedder = OnnxEmbedder(
        session=session,
        tokenizer=tiny_tokenizer(),
        model_id="fake/onnx",
        batch_size=8,
        dimension=DIMENSION,
    )
    session.fail = True
    with pytest.raises(EmbedderUnavailable):
        await embedder.embed(["alpha"])
    await embedder.close()


def _fake_model_dir(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "tokenizer.json").write_text("{}")
    return model


def test_export_is_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []

    def fake_export(model_path: Path, out_dir: Path) -> None:
        calls.append(out_dir)
        for name in (onnx_export.FP32_FILE, onnx_export.INT8_FILE, onnx_export.TOKENIZER_FILE):
            (out_dir / name).write_bytes(b"x")

    monkeypatch.setattr(onnx_export, "export_model", fake_export)
    model = _fake_model_dir(tmp_path)
    cache = tmp_path / "cache"
    first = onnx_export.ensure_onnx_model(cache, model_path=model)
    second = onnx_export.ensure_onnx_model(cache, model_path=model)
    fp32 = onnx_export.ensure_onnx_model(cache, model_path=model, variant="fp32")
    assert first == second
    assert first.name == onnx_export.INT8_FILE
    assert fp32.parent == first.parent
    assert len(calls) == 1
    # Exported in a staging directory, published by rename: no staging left.
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == [first.parent.name]


def test_failed_export_leaves_nothing_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_export(model_path: Path, out_dir: Path) -> None:
        (out_dir / onnx_export.FP32_FILE).write_bytes(b"half")
        raise RuntimeError("killed mid-export")

    monkeypatch.setattr(onnx_export, "export_model", broken_export)
    model = _fake_model_dir(tmp_path)
    cache = tmp_path / "cache"
    with pytest.raises(RuntimeError):
        onnx_export.ensure_onnx_model(cache, model_path=model)
    assert [p for p in cache.iterdir() if p.is_dir()] == []


def test_concurrent_callers_export_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    gate = threading.Event()

    def slow_export(model_path: Path, out_dir: Path) -> None:
        calls.append(1)
        gate.wait(2)
        for name in (onnx_export.FP32_FILE, onnx_export.INT8_FILE, onnx_export.TOKENIZER_FILE):
            (out_dir / name).write_bytes(b"x")

    monkeypatch.setattr(onnx_export, "export_model", slow_export)
    model = _fake_model_dir(tmp_path)
    cache = tmp_path / "cache"
    results: list[Any] = []
    workers = [
        threading.Thread(
            target=lambda: results.append(onnx_export.ensure_onnx_model(cache, model_path=model))
        )
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    gate.set()
    for worker in workers:
        worker.join(10)
    assert len(results) == 3
    assert len(set(results)) == 1
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("files", "quota"),
    [
        ({"cpu.max": "200000 100000\n"}, 2.0),
        ({"cpu.max": "150000 100000\n"}, 1.5),
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0.5),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu.max": "garbage"}, None),
        ({}, None),
    ],
    ids=["v2-two", "v2-one-and-a-half", "v2-none", "v1-half", "v1-none", "unreadable", "absent"],
)
def test_cgroup_cpu_quota(tmp_path: Path, files: dict[str, str], quota: float | None) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpu_quota(tmp_path) == quota


def test_available_cpus_is_capped_by_the_quota_rounded_up(tmp_path: Path) -> None:
    unlimited = available_cpus(tmp_path)
    assert unlimited >= 1
    (tmp_path / "cpu.max").write_text("50000 100000\n")
    assert available_cpus(tmp_path) == 1  # half a CPU still runs one batch
    (tmp_path / "cpu.max").write_text(f"{(unlimited + 3) * 100000} 100000\n")
    assert available_cpus(tmp_path) == unlimited  # a quota above the affinity
