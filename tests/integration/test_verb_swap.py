"""One verb put for another, end to end (local broker, real embedding model, the
shipped cross-encoder, real parser, embedded store): the alignment marks it
(`Alignment.verb_swap`), and the pair is merged only where the cross-encoder
finds it the same fact at `dedup.cross_encoder.verb_swap_from`; otherwise it is
accepted as a changed value, with the stored memory named as related."""

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
    only,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STORED = [
    event("s1", "Amara works at Zalando."),
    event("s2", "Kofi joined the data team in March."),
]
FOLLOW_UP = [
    # A synonym: cosine about 0.94, P(same fact) about 0.98.
    event("p1", "Amara is employed by Zalando."),
    # Another act: cosine about 0.93, P(same fact) about 0.69.
    event("p2", "Kofi left the data team in March."),
]


async def decide(settings: Any, embedder: Any) -> dict[str, list[dict[str, Any]]]:
    return await decide_after_stored(settings, embedder, STORED, FOLLOW_UP)


def assert_a_changed_value(decisions: dict[str, list[dict[str, Any]]], new: str, old: str) -> None:
    body = assert_kept_apart(decisions, new, from_=old, guard="alignment")
    assert body["guard"]["detail"].startswith("value_change")
    assert body["related"][0]["kind"] == "value_change"


async def test_a_synonym_is_merged_and_another_act_kept_apart(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide(settings, real_embedder)

    assert_folded(decisions, "p1", into="s1")
    assert only(decisions, "p1")["related"] == []

    assert_a_changed_value(decisions, "p2", "s2")


async def test_with_the_lift_off_the_synonym_is_a_changed_value(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={"cross_encoder": {"verb_swap_from": 1.0}},
    )
    decisions = await decide(settings, real_embedder)
    assert_a_changed_value(decisions, "p1", "s1")
    assert_a_changed_value(decisions, "p2", "s2")
