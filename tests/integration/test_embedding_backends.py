"""The ONNX backends against sentence-transformers on torch: same vectors within
cosine 0.98 (int8) or 0.999 (fp32), and the same paraphrase-over-unrelated ranking."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from consumer.embedding.embedders import OnnxEmbedder, load_embedder
from consumer.settings import EmbeddingSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SENTENCES = [
    "User prefers Python over Java for backend services.",
    "Lives in Paris.",
    "Home is in Paris, France.",
    "I prefer Python.",
    "Python is my favorite programming language.",
    "User's flight leaves at 9am on Friday.",
    "The weekly team meeting is on Monday at 10:30.",
    "Allergic to peanuts and shellfish; always carries an EpiPen.",
    "Has two cats named Miso and Tofu.",
    "Works as a data engineer at a fintech startup in Berlin.",
    "Prefers dark mode in every editor and terminal.",
    "Birthday is March 3rd.",
    "Wants reminders 15 minutes before every meeting.",
    "C# developer with 10 years of experience.",
    "Budget for the Japan trip is $2,500.",
    "ok",
    "Vegetarian",
    "Uses vim.",
    "Él vive en Madrid y trabaja en un banco.",
    "Merged PR #260 into main.",
    "The user's daughter, Emma, starts kindergarten in September 2025 at Lincoln Elementary.",
    "Drinks a flat white every morning before work.",
    "Is training for the Berlin marathon in October and runs five times a week.",
    "Dislikes long meetings; prefers async updates in Slack.",
    "Their manager is Priya Raman, VP of Engineering.",
    "Speaks English, French and a little Japanese.",
    "Runs Kubernetes 1.29 on GKE with Istio.",
    "Password manager of choice is 1Password.",
    "Favorite band: Radiohead 🎸",
    "Is lactose intolerant.",
    "Wants all reports exported as PDF, never as Word documents.",
    "Moved from Toronto to Vancouver in 2021.",
    "Their son plays hockey on Saturday mornings.",
    "Prefers window seats on long-haul flights.",
    "Timezone is UTC+9 (Tokyo).",
    "Owns a 2019 Subaru Outback.",
    "Is allergic to penicillin.",
    "Reads science fiction, especially Ursula K. Le Guin.",
    "The project deadline was moved to 2024-11-15.",
    "Likes coffee, usually a flat white.",
    "Loves coffee, especially flat whites.",
    "Is not a fan of spicy food.",
    "Plays guitar in a jazz quartet on weekends.",
    "Uses a standing desk and a split keyboard.",
    "Doctor's appointment every first Tuesday of the month.",
    "The API rate limit for the billing service is 100 requests per second.",
    "SELECT * FROM users WHERE id = 42;",
    "user prefers tea over coffee in the afternoon",
    "Has a mortgage with a 3.1% fixed rate until 2027.",
    # Longer than 128 word pieces: checks truncation at 256, not the tokenizer file's 128.
    "Meeting notes: discussed the Q3 roadmap, hiring two backend engineers, migrating the "
    "search service to Qdrant, and deprecating the legacy v1 API by the end of the year; "
    "action items were assigned to Ana, Ben and Chloé, with a follow-up in two weeks. " * 6,
]

PARAPHRASES = [
    ("Likes coffee, usually a flat white.", "Loves coffee, especially flat whites."),
    ("Lives in Paris.", "Home is in Paris, France."),
    ("I prefer Python.", "Python is my favorite programming language."),
    ("Is allergic to penicillin.", "The user has a penicillin allergy."),
    ("Prefers window seats on long-haul flights.", "Likes to sit by the window on long flights."),
]
UNRELATED = [
    ("Likes coffee, usually a flat white.", "Owns a 2019 Subaru Outback."),
    ("Lives in Paris.", "Uses a standing desk and a split keyboard."),
    ("I prefer Python.", "Their son plays hockey on Saturday mornings."),
    ("Is allergic to penicillin.", "Timezone is UTC+9 (Tokyo)."),
    ("Prefers window seats on long-haul flights.", "Has two cats named Miso and Tofu."),
]

MIN_COSINE = {"onnx-int8": 0.98, "onnx-fp32": 0.999}
# How far a pair's similarity may move from torch's. int8 depends on which texts
# share a batch (activations are quantised per batch): over 1,500 STS-B dev pairs,
# p99 0.03 and max 0.040-0.044, whichever way texts were batched.
MAX_PAIR_DRIFT = {"onnx-int8": 0.045, "onnx-fp32": 0.001}


@pytest.fixture(scope="module", params=["onnx-int8", "onnx-fp32"])
def onnx_embedder(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    backend = str(request.param)
    data_dir = tmp_path_factory.mktemp("onnx-data")
    # The backends compared as models: the same texts in, no subject form.
    settings = EmbeddingSettings(backend=backend, same_subject=False)
    embedder = asyncio.run(load_embedder(settings, data_dir=data_dir))
    yield backend, embedder
    asyncio.run(embedder.close())


def pair_scores(vectors: dict[str, np.ndarray], pairs: list[tuple[str, str]]) -> np.ndarray:
    return np.array([float(np.dot(vectors[a], vectors[b])) for a, b in pairs])


async def embed_all(embedder: Any, texts: list[str]) -> dict[str, np.ndarray]:
    matrix = await embedder.embed(texts)
    return dict(zip(texts, matrix, strict=True))


async def test_vectors_agree_with_torch(onnx_embedder: tuple[str, Any], real_embedder: Any) -> None:
    backend, embedder = onnx_embedder
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.dimension == real_embedder.dimension == 384
    reference = await real_embedder.embed(SENTENCES)
    batched = await embedder.embed(SENTENCES)
    single = np.vstack([await embedder.embed([text]) for text in SENTENCES])
    assert batched.shape == (len(SENTENCES), 384)
    assert batched.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    for vectors in (batched, single):
        cosines = (vectors * reference).sum(axis=1)
        worst = int(np.argmin(cosines))
        assert cosines.min() >= MIN_COSINE[backend], (
            f"{backend}: cosine {cosines.min():.4f} with torch on {SENTENCES[worst][:40]!r}"
        )


async def test_paraphrases_still_rank_above_unrelated_pairs(
    onnx_embedder: tuple[str, Any], real_embedder: Any
) -> None:
    backend, embedder = onnx_embedder
    texts = list(dict.fromkeys(text for pair in PARAPHRASES + UNRELATED for text in pair))
    torch_vectors = await embed_all(real_embedder, texts)
    onnx_vectors = await embed_all(embedder, texts)
    for vectors in (torch_vectors, onnx_vectors):
        paraphrase = pair_scores(vectors, PARAPHRASES)
        unrelated = pair_scores(vectors, UNRELATED)
        assert paraphrase.min() > unrelated.max()
        # Each paraphrase pair beats the unrelated pair with the same first text.
        assert (paraphrase > unrelated).all()
    # Similarities, which the thresholds apply to, move little.
    drift = np.abs(
        pair_scores(onnx_vectors, PARAPHRASES + UNRELATED)
        - pair_scores(torch_vectors, PARAPHRASES + UNRELATED)
    )
    assert drift.max() <= MAX_PAIR_DRIFT[backend], (
        f"{backend}: similarity moved by {drift.max():.4f}"
    )
    # Pairs that torch tells apart by a clear margin keep their order.
    torch_scores = pair_scores(torch_vectors, PARAPHRASES + UNRELATED)
    onnx_scores = pair_scores(onnx_vectors, PARAPHRASES + UNRELATED)
    for i, j in itertools.permutations(range(len(torch_scores)), 2):
        if torch_scores[i] - torch_scores[j] > 0.05:
            assert onnx_scores[i] > onnx_scores[j]


async def test_nearest_neighbour_is_the_same(
    onnx_embedder: tuple[str, Any], real_embedder: Any
) -> None:
    _, embedder = onnx_embedder
    corpus = [b for _, b in PARAPHRASES] + [b for _, b in UNRELATED] + SENTENCES[:30]
    queries = [a for a, _ in PARAPHRASES]
    corpus = [text for text in dict.fromkeys(corpus) if text not in queries]
    for model in (real_embedder, embedder):
        matrix = await model.embed(corpus)
        found = [corpus[int(np.argmax(matrix @ q))] for q in await model.embed(queries)]
        assert found == [paraphrase for _, paraphrase in PARAPHRASES]


async def test_torch_batches_texts_by_token_count(
    real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The torch backend groups a call's texts by token count (`plan_batches`):
    each text's vector is the one it gets alone."""
    model = real_embedder._model
    texts = [f"user {' '.join(['really'] * (n % 7))} likes item {n}" for n in range(40)] + SENTENCES
    alone = np.stack([(await real_embedder.embed([text]))[0] for text in texts])
    batches: list[list[str]] = []
    encode = model.encode

    def recording_encode(batch: list[str], **kwargs: Any) -> Any:
        batches.append(list(batch))
        return encode(batch, **kwargs)

    monkeypatch.setattr(model, "encode", recording_encode)
    together = await real_embedder.embed(texts)
    np.testing.assert_allclose(together, alone, atol=1e-5)
    counts = [[len(ids) for ids in model.tokenizer(batch)["input_ids"]] for batch in batches]
    assert sorted(text for batch in batches for text in batch) == sorted(texts)
    assert all(len(batch) <= 64 for batch in batches)
    # Longest first, and a batch holding 8 texts takes no shorter one.
    assert [c[0] for c in counts] == sorted((c[0] for c in counts), reverse=True)
    assert all(c == sorted(c, reverse=True) for c in counts)
    assert all(c[i] == c[i - 1] for c in counts for i in range(8, len(c)))
    assert len(batches) > 1
