"""Antonyms with no negation cue, end to end (local broker, real embedding
model, parser and cross-encoder, embedded store): a stance for and against is
kept apart, and the decision tells downstream which memory it may supersede."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import (
    assert_folded,
    assert_kept_apart,
    decide_after_stored,
    event,
    make_settings,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STORED = [
    event("s1", "Marta is in favour of the four-day week"),
    event("s2", "The council supports the new bike lanes"),
    event("s3", "The council supports the new bike lanes", namespace="same"),
]
FOLLOW_UP = [
    event("n1", "Marta is against the four-day week"),
    event("n2", "The council opposes the new bike lanes"),
    event("n3", "The council is in favour of the new bike lanes", namespace="same"),
]


async def test_a_stance_turned_stays_apart_and_one_told_otherwise_folds(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    # n1 was merged: "in favour of" / "against" was no antonym pair.
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide_after_stored(settings, real_embedder, STORED, FOLLOW_UP)
    for new, stored in (("n1", "s1"), ("n2", "s2")):
        body = assert_kept_apart(decisions, new, from_=stored, guard="negation")
        assert body["guard"]["detail"] == "negation differs: antonyms (support/oppose)"
        assert body["related"][0]["kind"] == "negation"
    # One pole written two ways: no antonym, the same stance.
    assert_folded(decisions, "n3", into="s3", outcomes=("merged",))
