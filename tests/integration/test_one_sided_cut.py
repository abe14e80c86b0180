"""The cross-encoder's cut for a pair whose alignment leaves words of one text
only unmatched (`dedup.cross_encoder.one_sided_below`), end to end (local broker,
real embedding model, the shipped cross-encoder, real parser, embedded store): a
stored fact and a later text that ends it ("outgrew his egg allergy"), which
the model finds more likely different (P about 0.27), are kept apart at the
default cut and merged at the plain veto's cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import (
    assert_folded,
    decide_after_stored,
    event,
    make_settings,
    only,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STORED = [event("s1", "Amara's son Theo is allergic to eggs.")]
FOLLOW_UP = [event("p1", "Amara's son Theo outgrew his egg allergy.")]


async def test_an_ended_fact_is_kept_apart_at_the_one_sided_cut(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide_after_stored(settings, real_embedder, STORED, FOLLOW_UP)
    body = only(decisions, "p1")
    assert body["decision"] == "accepted", body["reason"]
    assert body["memory_id"] != only(decisions, "s1")["memory_id"]
    assert body["guard"]["name"] == "verifier"
    assert "cross-encoder" in body["guard"]["detail"]


async def test_at_the_plain_veto_cut_it_was_merged(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={"cross_encoder": {"one_sided_below": 0.2}},
    )
    decisions = await decide_after_stored(settings, real_embedder, STORED, FOLLOW_UP)
    assert_folded(decisions, "p1", into="s1")
