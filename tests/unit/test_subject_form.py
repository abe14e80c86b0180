"""The user is named one way before embedding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from consumer.domain.normalize import subject_form
from consumer.embedding.embedders import SubjectFormEmbedder, with_subject_form
from consumer.ports import Vectors
from consumer.settings import EmbeddingSettings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I like climbing.", "user like climbing."),
        ("i\u2019m allergic to nuts", "user is allergic to nuts"),
        ("I am a nurse", "user is a nurse"),
        ("I've got 2 cats", "user has got 2 cats"),
        ("I'll move in May", "user will move in May"),
        ("My sister lives in Lyon", "user's sister lives in Lyon"),
        ("The user prefers Python", "user prefers Python"),
        ("Tell me in French", "Tell user in French"),
        ("I did it myself", "user did it user"),
    ],
)
def test_first_and_third_person_become_one_subject(text: str, expected: str) -> None:
    assert subject_form(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Ian likes tea",  # a name starting with "I"
        "Uses an iPhone",
        "Reads about World War I",  # a numeral at the end of the text
        "Mentor: Mia",
        "Enjoys anime",
    ],
)
def test_other_words_stay(text: str) -> None:
    assert subject_form(text) == text


class RecordingEmbedder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @property
    def model_id(self) -> str:
        return "recording"

    @property
    def dimension(self) -> int:
        return 2

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return np.ones((len(texts), 2), dtype=np.float32)

    async def close(self) -> None:
        pass


async def test_the_wrapper_embeds_the_subject_form_once() -> None:
    inner = RecordingEmbedder()
    wrapped = with_subject_form(inner, EmbeddingSettings())
    assert isinstance(wrapped, SubjectFormEmbedder)
    assert with_subject_form(wrapped, EmbeddingSettings()) is wrapped
    await wrapped.embed(["I like tea", "the user likes tea"])
    assert inner.seen == ["user like tea", "user likes tea"]
    assert with_subject_form(inner, EmbeddingSettings(same_subject=False)) is inner
