"""Negations without a "not", end to end (local broker, real embedding model,
the shipped cross-encoder, real parser, embedded store).

A negation written as a prefix: "dislikes" / "doesn't like" and "is unable" /
"is not able" are one fact, folded into the stored memory (merged, never
skipped), though the cross-encoder, reading the words as written, scores them as
different; "dislikes" / "likes" stays apart. An antonym: a stance for and
against is kept apart, and the decision tells downstream which memory it may
supersede."""

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
    event("s1", "Oona doesn't like horror movies."),
    event("s2", "Kofi is not able to attend the Friday standup."),
    event("t1", "Oona likes horror movies.", namespace="changed"),
]
FOLLOW_UP = [
    event("p1", "Oona dislikes horror movies."),
    event("p2", "Kofi is unable to attend the Friday standup."),
    event("d1", "Oona dislikes horror movies.", namespace="changed"),
]


async def test_a_prefixed_negation_folds_and_an_opposite_stays_apart(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide_after_stored(settings, real_embedder, STORED, FOLLOW_UP)
    assert_folded(decisions, "p1", into="s1")
    assert_folded(decisions, "p2", into="s2")
    body = assert_kept_apart(decisions, "d1", from_="t1", guard="negation")
    assert body["related"][0]["kind"] == "negation"


STANCE_STORED = [
    event("s1", "Marta is in favour of the four-day week"),
    event("s2", "The council supports the new bike lanes"),
    event("s3", "The council supports the new bike lanes", namespace="same"),
]
STANCE = [
    event("n1", "Marta is against the four-day week"),
    event("n2", "The council opposes the new bike lanes"),
    event("n3", "The council is in favour of the new bike lanes", namespace="same"),
]


async def test_a_stance_turned_stays_apart_and_one_told_otherwise_folds(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    # n1 was merged: "in favour of" / "against" was no antonym pair.
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide_after_stored(settings, real_embedder, STANCE_STORED, STANCE)
    for new, stored in (("n1", "s1"), ("n2", "s2")):
        body = assert_kept_apart(decisions, new, from_=stored, guard="negation")
        assert body["guard"]["detail"] == "negation differs: antonyms (support/oppose)"
        assert body["related"][0]["kind"] == "negation"
    # One pole written two ways: no antonym, the same stance.
    assert_folded(decisions, "n3", into="s3", outcomes=("merged",))
