"""The cross-encoder end to end (local broker, real embedding model, the shipped
cross-encoder, real parser, embedded store): a paraphrase just below the merge
band is rescued and merged, and a band match it finds a different fact is kept
apart with its veto recorded; with `dedup.cross_encoder.enabled` off, both go
as before, and a namespace with `rescue` off keeps the paraphrase apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import (
    decide_after_stored,
    event,
    make_settings,
    only,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

STORED = [
    event("s1", "User works remotely from home."),
    event("s2", "User likes hiking in the Alps."),
    event("s3", "User's frequent flyer status with Flying Blue is Silver."),
]
FOLLOW_UP = [
    # Same fact, cosine about 0.68 (below the 0.77 merge threshold); P(same) ~0.83.
    event("p1", "Works from home; fully remote."),
    # Another activity, cosine about 0.86 (merge band); no guard, alignment or
    # local verifier veto; P(same) ~0.07.
    event("p2", "User likes skiing in the Alps."),
    # A note of the stored sentence, every word of it in the sentence: cosine about
    # 0.74, P(same) ~0.45, rescued from the contained cut (0.40), not the plain 0.70.
    event("p3", "Flying Blue Silver"),
]


async def decide(settings: Any, embedder: Any) -> dict[str, list[dict[str, Any]]]:
    return await decide_after_stored(settings, embedder, STORED, FOLLOW_UP)


async def test_the_cross_encoder_rescues_a_paraphrase_and_vetoes_another_fact(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide(settings, real_embedder)

    rescued = only(decisions, "p1")
    assert rescued["decision"] == "merged", rescued
    assert rescued["memory_id"] == only(decisions, "s1")["memory_id"]
    assert rescued["threshold"] == 0.47
    assert 0.47 <= rescued["similarity"] < 0.77

    vetoed = only(decisions, "p2")
    assert vetoed["decision"] == "accepted", vetoed
    assert vetoed["memory_id"] != only(decisions, "s2")["memory_id"]
    assert vetoed["guard"]["name"] == "verifier"
    assert vetoed["guard"]["detail"].startswith("cross-encoder: P(same fact)")
    assert vetoed["guard"]["memory_id"] == only(decisions, "s2")["memory_id"]

    note = only(decisions, "p3")
    assert note["decision"] == "merged", note
    assert note["memory_id"] == only(decisions, "s3")["memory_id"]
    assert note["threshold"] == 0.47


async def test_a_namespace_with_the_rescue_off_keeps_the_paraphrase_apart(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={"namespaces": {"chat": {"rescue": False}}},
    )
    stored = [*STORED, event("c1", "User works remotely from home.", namespace="chat")]
    follow_up = [*FOLLOW_UP, event("c2", "Works from home; fully remote.", namespace="chat")]
    decisions = await decide_after_stored(settings, real_embedder, stored, follow_up)

    kept = only(decisions, "c2")
    assert kept["decision"] == "accepted", kept
    assert kept["memory_id"] != only(decisions, "c1")["memory_id"]
    # The namespace's own band match was below its merge threshold: no veto to name.
    assert kept.get("guard") is None
    # The same pair in a namespace that rescues is merged, in the same run.
    assert only(decisions, "p1")["decision"] == "merged"
    assert only(decisions, "p1")["memory_id"] == only(decisions, "s1")["memory_id"]


async def test_with_one_rescue_cut_the_note_stays_apart(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(
        local_broker.bootstrap_servers,
        tmp_path,
        dedup={"cross_encoder": {"rescue_contained_from": 0.70}},
    )
    decisions = await decide(settings, real_embedder)
    assert only(decisions, "p1")["decision"] == "merged"
    assert only(decisions, "p3")["decision"] == "accepted"


async def test_without_it_the_paraphrase_is_new_and_the_other_fact_merged(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(
        local_broker.bootstrap_servers, tmp_path, dedup={"cross_encoder": {"enabled": False}}
    )
    decisions = await decide(settings, real_embedder)
    assert only(decisions, "p1")["decision"] == "accepted"
    merged = only(decisions, "p2")
    assert merged["decision"] == "merged", merged
    assert merged["memory_id"] == only(decisions, "s2")["memory_id"]
