"""The gray-zone verifier: features, the shipped local model, the LLM verifier on
loopback, settings, and the engine's use of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consumer.domain.dedup import DedupEngine
from consumer.domain.guards import GuardName
from consumer.domain.models import Candidate, Outcome
from consumer.domain.recent import RecentCache
from consumer.domain.thresholds import Bands, ThresholdPolicy
from consumer.domain.verifier import (
    DEFAULT_MODEL_PATH,
    FEATURE_NAMES,
    LlmVerifier,
    LocalVerifier,
    Verdict,
    VerifierModel,
    build_verifier,
    pair_features,
)
from consumer.ports import MemoryStore
from consumer.quality.rule import decide_pair
from consumer.settings import ConfigError, load_settings
from schemas import Decision
from tests.chat_server import Completions, chat_completions_server

from .helpers import FIXED_NOW, FakeEmbedder, base_vector, make_candidate, unit_vector

LOCAL = LocalVerifier.load()


def features(existing: str, new: str, similarity: float = 0.9) -> dict[str, float]:
    return dict(zip(FEATURE_NAMES, pair_features(existing, new, similarity), strict=True))


# Features ------------------------------------------------------------------------


def test_features_of_identical_texts() -> None:
    f = features("User lives in Paris", "User lives in Paris", 1.0)
    assert len(f) == len(FEATURE_NAMES)
    assert f["cosine"] == 1.0
    assert f["content_jaccard"] == f["token_jaccard"] == f["char_trigram_jaccard"] == 1.0
    assert f["unmatched_max"] == f["unmatched_min"] == 0.0
    assert f["lcs_ratio"] == 1.0
    assert f["order_discord"] == 0.0
    assert f["guard_veto"] == 0.0


def test_features_see_substitutions_names_numbers_and_negation() -> None:
    city = features("User lives in Paris", "User lives in Lyon")
    assert city["unmatched_max"] == city["unmatched_min"] == 1.0
    assert city["proper_noun_diff"] == 2.0
    time_change = features("Standup at 9am", "Standup at 10am")
    assert time_change["quantities_differ"] == 2.0
    assert time_change["guard_veto"] == 1.0
    negated = features("User likes jazz", "User does not like jazz")
    assert negated["cues_differ"] == 1.0
    antonym = features("The gym is open on Sundays", "The gym is closed on Sundays")
    assert antonym["antonym_clashes"] == 1.0
    subject = features("User is vegetarian", "User's son is vegetarian")
    assert subject["relations_differ"] == 1.0


def test_features_see_word_order() -> None:
    swapped = features("Alice sent the report to Bob", "Bob sent the report to Alice")
    assert swapped["same_bag_other_order"] == 1.0
    assert swapped["order_discord"] > 0.0
    assert swapped["lcs_ratio"] < 1.0


def test_with_the_parse_the_guard_veto_feature_is_what_the_consumer_counts() -> None:
    from consumer.domain.alignment import PairAligner

    aligner = PairAligner()
    passive = ("The finance team approved the new travel policy in March.",
               "In March the new travel policy was approved by the finance team.")  # fmt: skip
    # The word lists alone see the words moved; the parse finds each in its role.
    assert features(*passive)["guard_veto"] == 1.0
    with_parse = dict(zip(FEATURE_NAMES, pair_features(*passive, 0.99, aligner), strict=True))
    assert with_parse["guard_veto"] == 0.0
    assert with_parse["order_discord"] == features(*passive, 0.99)["order_discord"]
    # Roles traded, amounts traded, or a number added as a detail: still a veto.
    for pair in (
        ("Marta switched from Vim to Emacs.", "Marta switched from Emacs to Vim."),
        (
            "User pays $900 for rent and $150 for parking.",
            "User pays $150 for rent and $900 for parking.",
        ),
        ("Kofi is vegetarian.", "Kofi is vegetarian on weekdays."),
    ):
        assert pair_features(*pair, 0.95, aligner)[FEATURE_NAMES.index("guard_veto")] == 1.0


def test_features_read_persons_as_one() -> None:
    f = features("I live in Paris", "User lives in Paris")
    assert f["content_jaccard"] == 1.0
    assert f["unmatched_max"] == 0.0


# The shipped local model ---------------------------------------------------------


def test_shipped_model_loads_and_names_this_version_s_features() -> None:
    document = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    assert document["features"] == list(FEATURE_NAMES)
    model = VerifierModel.from_json(document)
    assert model.trees
    assert 0.0 < model.min_probability < 1.0
    assert LOCAL.min_probability == model.min_probability


def test_model_with_other_features_is_rejected() -> None:
    document = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    document["features"] = document["features"][:-1]
    with pytest.raises(ValueError, match="FEATURE_NAMES"):
        VerifierModel.from_json(document)
    with pytest.raises(ValueError, match="memdedup-verifier"):
        VerifierModel.from_json({**document, "format": "other"})


def test_logistic_part_adds_to_the_log_odds() -> None:
    n = len(FEATURE_NAMES)
    model = VerifierModel(
        features=FEATURE_NAMES,
        min_probability=0.5,
        mean=(0.0,) * n,
        scale=(1.0,) * n,
        coef=(2.0,) + (0.0,) * (n - 1),
        intercept=-1.0,
    )
    x = [1.0] + [0.0] * (n - 1)
    assert model.log_odds(x) == pytest.approx(1.0)
    assert model.probability(x) == pytest.approx(1 / (1 + 2.718281828**-1))


SAME_FACT = [
    ("I live in Paris", "User lives in Paris", 0.85),
    ("User prefers dark mode in the editor", "User likes their editor in dark mode", 0.885),
    ("User dislikes long meetings", "User can't stand lengthy meetings", 0.872),
    (
        "User prefers tea over coffee",
        "Given the choice, the user picks tea rather than coffee",
        0.83,
    ),
    ("User's favourite editor is Vim", "User's favorite editor is vim", 0.97),
]
DIFFERENT_FACT = [
    ("User lives in Paris", "User lives in Lyon", 0.80),
    ("User is travelling to Berlin next month", "User is travelling to Munich next month", 0.815),
    (
        "We decided to use PostgreSQL for the orders service",
        "We decided to use MongoDB for the orders service",
        0.71,  # all-MiniLM-L6-v2's cosine for this pair
    ),
]


@pytest.mark.parametrize(("existing", "new", "similarity"), SAME_FACT)
def test_local_verifier_keeps_paraphrases(existing: str, new: str, similarity: float) -> None:
    verdict = LOCAL.judge(existing, new, similarity)
    assert verdict.same_fact, verdict
    assert verdict.source == "local"
    assert verdict.probability is not None
    assert verdict.probability >= LOCAL.min_probability


@pytest.mark.parametrize(("existing", "new", "similarity"), DIFFERENT_FACT)
def test_local_verifier_rejects_another_value(existing: str, new: str, similarity: float) -> None:
    verdict = LOCAL.judge(existing, new, similarity)
    assert not verdict.same_fact, verdict
    assert "P(same fact)" in verdict.detail
    assert existing not in verdict.detail
    assert new not in verdict.detail


def test_min_probability_overrides_the_shipped_cut() -> None:
    strict = LocalVerifier.load(min_probability=1.0)
    lenient = LocalVerifier.load(min_probability=0.0)
    pair = ("User lives in Paris", "User lives in Lyon", 0.8)
    assert not strict.judge(*SAME_FACT[0]).same_fact
    assert lenient.judge(*pair).same_fact


async def test_local_verify_is_judge() -> None:
    assert await LOCAL.verify(*DIFFERENT_FACT[0]) == LOCAL.judge(*DIFFERENT_FACT[0])


# The quality tools' rule uses the verifier like the engine ------------------------

BANDS = Bands(duplicate_threshold=0.96, merge_threshold=0.77)


def test_decide_pair_turns_a_verifier_veto_into_accepted() -> None:
    outcome = decide_pair("User lives in Paris", "User lives in Lyon", 0.80, BANDS, verifier=LOCAL)
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.veto is not None
    assert outcome.veto.guard is GuardName.VERIFIER
    merged = decide_pair("I live in Paris", "User lives in Paris", 0.85, BANDS, verifier=LOCAL)
    assert merged.decision is Decision.MERGED
    assert merged.veto is None
    # Guards first: a guard's veto is reported, not the verifier's.
    vetoed = decide_pair("Flight at 9am", "Flight at 9pm", 0.97, BANDS, verifier=LOCAL)
    assert vetoed.veto is not None
    assert vetoed.veto.guard is GuardName.NUMBERS
    # Below every band nothing is asked.
    low = decide_pair("User lives in Paris", "User lives in Lyon", 0.5, BANDS, verifier=LOCAL)
    assert low.decision is Decision.ACCEPTED
    assert low.veto is None


# The LLM verifier against a server on loopback -----------------------------------


@pytest.fixture
def completions() -> Iterator[tuple[Completions, str]]:
    with chat_completions_server('{"same_fact": true}') as served:
        yield served


def llm(url: str, timeout_s: float = 5.0) -> LlmVerifier:
    return LlmVerifier(
        base_url=url, model="tiny", fallback=LOCAL, api_key="sk-1", timeout_s=timeout_s
    )


@pytest.mark.parametrize(
    ("answer", "same"),
    [
        ('{"same_fact": true}', True),
        ('{"same_fact": false}', False),
        ('```json\n{"same_fact": false}\n```', False),
    ],
)
async def test_llm_verifier_asks_the_question_and_reads_the_answer(
    completions: tuple[Completions, str], answer: str, same: bool
) -> None:
    state, url = completions
    state.text = answer
    verifier = llm(url)
    # The local model would say "different": the LLM's answer is what counts.
    verdict = await verifier.verify("User lives in Paris", "User lives in Lyon", 0.8)
    assert verdict == Verdict(same, None, "llm", f"tiny: {'same' if same else 'different'} fact")
    [(path, headers, body)] = state.requests
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-1"
    assert body["model"] == "tiny"
    assert body["temperature"] == 0
    prompt = body["messages"][0]["content"]
    assert "same fact" in prompt
    assert prompt.index("User lives in Paris") < prompt.index("User lives in Lyon")
    assert verifier.failures == 0


@pytest.mark.parametrize(
    ("status", "text", "raw", "delay_s"),
    [
        (500, '{"same_fact": true}', None, 0.0),
        (200, "yes, the same", None, 0.0),
        (200, '{"same_fact": "yes"}', None, 0.0),
        (200, "{not json}", None, 0.0),
        (200, None, None, 0.0),
        (200, None, b"<html>busy</html>", 0.0),
        (200, '{"same_fact": true}', None, 1.0),
    ],
    ids=["server-error", "prose", "not-boolean", "bad-json", "no-text", "not-json-body", "timeout"],
)
async def test_llm_verifier_falls_back_to_the_local_verifier(
    completions: tuple[Completions, str],
    status: int,
    text: str | None,
    raw: bytes | None,
    delay_s: float,
) -> None:
    state, url = completions
    state.status, state.text, state.raw, state.delay_s = status, text, raw, delay_s
    verifier = llm(url, timeout_s=0.3)
    verdict = await verifier.verify("User lives in Paris", "User lives in Lyon", 0.8)
    local = LOCAL.judge("User lives in Paris", "User lives in Lyon", 0.8)
    assert verdict.same_fact is local.same_fact is False
    assert verdict.probability == local.probability
    assert verdict.source == "local (llm failed)"
    assert verdict.detail.startswith("llm failed")
    assert verifier.failures == 1


async def test_llm_verifier_unreachable_falls_back() -> None:
    verifier = llm("http://127.0.0.1:9/v1", timeout_s=0.5)
    verdict = await verifier.verify("I live in Paris", "User lives in Paris", 0.85)
    assert verdict.same_fact
    assert verdict.source == "local (llm failed)"


# Settings --------------------------------------------------------------------------


def test_verifier_settings_default_to_the_local_model() -> None:
    settings = load_settings()
    assert settings.dedup.verifier.kind == "local"
    assert settings.dedup.verifier.min_probability is None
    verifier = build_verifier(settings.dedup)
    assert isinstance(verifier, LocalVerifier)
    assert verifier.min_probability == LOCAL.min_probability


def test_verifier_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__KIND", "off")
    assert build_verifier(load_settings().dedup) is None
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__KIND", "local")
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__MIN_PROBABILITY", "0.9")
    verifier = build_verifier(load_settings().dedup)
    assert isinstance(verifier, LocalVerifier)
    assert verifier.min_probability == 0.9
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__KIND", "llm")
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__API_KEY_ENV", "MY_VERIFIER_KEY")
    monkeypatch.setenv("MY_VERIFIER_KEY", "sk-secret")
    verifier = build_verifier(load_settings().dedup)
    assert isinstance(verifier, LlmVerifier)
    assert verifier.fallback.min_probability == 0.9


def test_llm_verifier_needs_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__KIND", "llm")
    with pytest.raises(ConfigError, match="base_url"):
        load_settings()


def test_bad_verifier_settings_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEDUP_DEDUP__VERIFIER__MIN_PROBABILITY", "1.5")
    with pytest.raises(ConfigError, match="MEMDEDUP_DEDUP__VERIFIER__MIN_PROBABILITY"):
        load_settings()


def test_model_path_setting_loads_another_model(tmp_path: Path) -> None:
    document = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    document["min_probability"] = 0.99
    path = tmp_path / "verifier.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert LocalVerifier.load(path).min_probability == 0.99


# The engine ------------------------------------------------------------------------

MEMORY_A = "User lives in Lyon"
MEMORY_B = "User lives in Paris"
NEW = "I live in Paris"


class ScriptedVerifier:
    """Judges "different fact" for existing texts in `different`; records calls."""

    def __init__(self, *different: str) -> None:
        self.different = set(different)
        self.calls: list[tuple[str, str, float]] = []

    async def verify(self, existing: str, new: str, similarity: float) -> Verdict:
        self.calls.append((existing, new, similarity))
        same = existing not in self.different
        return Verdict(same, None, "scripted", "same" if same else "different")


@pytest.fixture
def vectors(embedder: FakeEmbedder) -> FakeEmbedder:
    embedder.set(NEW, base_vector())
    embedder.set(MEMORY_A, unit_vector(0.90, axis=1))  # merge band, best match
    embedder.set(MEMORY_B, unit_vector(0.85, axis=2))  # merge band, second
    return embedder


def engine(
    store: MemoryStore, embedder: FakeEmbedder, verifier: Any, guards: bool = True
) -> DedupEngine:
    return DedupEngine(
        store=store,
        embedder=embedder,
        policy=ThresholdPolicy(default=Bands(duplicate_threshold=0.95, merge_threshold=0.80)),
        recent=RecentCache(ttl_s=300, max_entries=1000),
        guards=guards,
        verifier=verifier,
        clock=lambda: FIXED_NOW,
    )


async def run(store: MemoryStore, dedup: DedupEngine, *candidates: Candidate) -> list[Outcome]:
    plan = await dedup.decide(0, list(candidates))
    await store.write(0, list(plan.writes.values()), [])
    dedup.commit(plan)
    return plan.outcomes


async def test_a_vetoed_match_falls_through_to_the_next_match(
    store: MemoryStore, vectors: FakeEmbedder
) -> None:
    verifier = ScriptedVerifier(MEMORY_A)
    dedup = engine(store, vectors, verifier)
    await run(store, dedup, make_candidate(event_id="a", content=MEMORY_A))
    await run(store, dedup, make_candidate(event_id="b", content=MEMORY_B, offset=1))
    [outcome] = await run(store, dedup, make_candidate(event_id="c", content=NEW, offset=2))
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.content == MEMORY_B
    assert outcome.guard is not None
    assert outcome.guard.veto.guard is GuardName.VERIFIER
    assert outcome.guard.veto.detail == "scripted: different"
    assert outcome.guard.similarity == pytest.approx(0.90, abs=1e-4)
    asked = [(existing, new) for existing, new, _ in verifier.calls]
    assert asked[-2:] == [(MEMORY_A, NEW), (MEMORY_B, NEW)]


async def test_every_match_vetoed_means_accepted(store: MemoryStore, vectors: FakeEmbedder) -> None:
    dedup = engine(store, vectors, ScriptedVerifier(MEMORY_A, MEMORY_B))
    await run(store, dedup, make_candidate(event_id="a", content=MEMORY_A))
    await run(store, dedup, make_candidate(event_id="b", content=MEMORY_B, offset=1))
    [outcome] = await run(store, dedup, make_candidate(event_id="c", content=NEW, offset=2))
    assert outcome.decision is Decision.ACCEPTED
    assert outcome.guard is not None
    assert outcome.guard.veto.guard is GuardName.VERIFIER


async def test_the_verifier_is_not_asked_below_the_bands_or_after_a_guard_veto(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    embedder.set("Standup at 9am", base_vector())
    embedder.set("Standup at 10am", unit_vector(0.97, axis=1))
    embedder.set("User enjoys hiking", unit_vector(0.5, axis=2))
    verifier = ScriptedVerifier()
    dedup = engine(store, embedder, verifier)
    await run(store, dedup, make_candidate(event_id="a", content="Standup at 9am"))
    [vetoed] = await run(store, dedup, make_candidate(event_id="b", content="Standup at 10am"))
    [low] = await run(store, dedup, make_candidate(event_id="c", content="User enjoys hiking"))
    assert vetoed.guard is not None
    assert vetoed.guard.veto.guard is GuardName.NUMBERS
    assert low.decision is Decision.ACCEPTED
    assert low.guard is None
    assert verifier.calls == []


async def test_engine_with_the_local_verifier(store: MemoryStore, embedder: FakeEmbedder) -> None:
    # Similarities near the real model's: the verifier weighs cosine too, and at
    # 0.85 and above it lets a changed city through (docs/quality.md).
    embedder.set(NEW, base_vector())
    embedder.set(MEMORY_A, unit_vector(0.815, axis=1))
    embedder.set(MEMORY_B, unit_vector(0.81, axis=2))
    dedup = engine(store, embedder, LOCAL)
    await run(store, dedup, make_candidate(event_id="a", content=MEMORY_A))
    await run(store, dedup, make_candidate(event_id="b", content=MEMORY_B, offset=1))
    [outcome] = await run(store, dedup, make_candidate(event_id="c", content=NEW, offset=2))
    # "Lyon" is another city: vetoed; "User lives in Paris" is the same fact.
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.content == MEMORY_B
    assert outcome.guard is not None
    assert outcome.guard.veto.guard is GuardName.VERIFIER
    assert outcome.guard.veto.detail.startswith("local: P(same fact)")


async def test_engine_without_a_verifier_takes_the_best_match(
    store: MemoryStore, vectors: FakeEmbedder
) -> None:
    dedup = engine(store, vectors, None)
    await run(store, dedup, make_candidate(event_id="a", content=MEMORY_A))
    await run(store, dedup, make_candidate(event_id="b", content=MEMORY_B, offset=1))
    [outcome] = await run(store, dedup, make_candidate(event_id="c", content=NEW, offset=2))
    assert outcome.decision is Decision.MERGED
    assert outcome.memory.content == MEMORY_A
    assert outcome.guard is None


def test_a_typo_is_the_same_fact_without_asking_the_model() -> None:
    typo = ("Volunteers at the animal shelter every Saturday", "volunteers at the animal sheltre")
    assert LOCAL.probability(typo[0], typo[0] + " morning", 0.77) < 1.0
    verdict = LOCAL.judge(
        "Volunteers at the animal shelter", "volunteers at the animal sheltre", 0.77
    )
    assert verdict.same_fact
    assert verdict.detail.startswith("spelled alike")
    # Two words off is a rewording: the model judges it.
    assert not LOCAL.judge(*typo, 0.77).detail.startswith("spelled alike")
