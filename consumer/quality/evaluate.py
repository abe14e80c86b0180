"""Run the consumer's decision on labelled pairs and report how often it is right.

The pipeline is the consumer's, without Kafka or a store: `normalize_content` of
both texts, the configured embedder, cosine similarity, the namespace's bands,
the guards and the verifier (`consumer.quality.rule.decide_pair`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from consumer.domain.alignment import PairAligner
from consumer.domain.cross_verifier import CrossEncoderVerifier
from consumer.domain.normalize import content_hash, normalize_content
from consumer.domain.thresholds import Bands, ThresholdPolicy, policy_from_settings
from consumer.domain.verifier import LocalVerifier, PairJudge, Verdict, Verifier
from consumer.ports import Embedder
from consumer.quality.metrics import Tally
from consumer.quality.pairs import LabelledPair
from consumer.quality.rule import PairDecision, decide_pair

__all__ = [
    "DEFAULT_NAMESPACE",
    "NO_CATEGORY",
    "Evaluation",
    "JudgedPairs",
    "ScoredPair",
    "embed_similarities",
    "evaluate_pairs",
    "evaluation_json",
    "judge_pairs",
    "policy_from_settings",
    "render_evaluation",
    "short_hash",
]

DEFAULT_NAMESPACE: Final = "(default)"
NO_CATEGORY: Final = "(none)"
EMBED_CHUNK: Final = 512
HASH_CHARS: Final = 12


def short_hash(text: str) -> str:
    """The first 12 hex digits of the memory's content hash (what logs carry)."""
    return content_hash(normalize_content(text))[:HASH_CHARS]


async def embed_similarities(
    embedder: Embedder, pairs: Sequence[LabelledPair], *, chunk: int = EMBED_CHUNK
) -> list[float]:
    """Cosine of each pair's normalised texts, embedding every distinct text once."""
    texts = list(
        dict.fromkeys(normalize_content(t) for pair in pairs for t in (pair.existing, pair.new))
    )
    vectors: dict[str, np.ndarray[Any, np.dtype[np.float32]]] = {}
    for start in range(0, len(texts), chunk):
        part = texts[start : start + chunk]
        matrix = await embedder.embed(part)
        for text, row in zip(part, matrix, strict=True):
            vectors[text] = np.asarray(row, dtype=np.float32)
    return [
        float(np.dot(vectors[normalize_content(p.existing)], vectors[normalize_content(p.new)]))
        for p in pairs
    ]


class JudgedPairs:
    """Verdicts of an asynchronous verifier (the LLM one), asked once per pair
    beforehand, served to the synchronous pair rule."""

    def __init__(self, verdicts: Mapping[tuple[str, str], Verdict]) -> None:
        self._verdicts = dict(verdicts)

    def judge(self, existing: str, new: str, similarity: float) -> Verdict:
        verdict = self._verdicts.get((existing.strip(), new))
        if verdict is None:
            return Verdict(True, None, "none", "not asked: below every band")
        return verdict


async def judge_pairs(
    verifier: Verifier,
    pairs: Sequence[LabelledPair],
    similarities: Sequence[float],
    *,
    min_similarity: float,
) -> PairJudge:
    """A synchronous judge for the quality tools: the local verifier as it is; any
    other verifier asked for every pair whose similarity reaches `min_similarity`."""
    if isinstance(verifier, LocalVerifier):
        return verifier
    verdicts: dict[tuple[str, str], Verdict] = {}
    for pair, similarity in zip(pairs, similarities, strict=True):
        if similarity >= min_similarity:
            existing = pair.existing.strip()
            verdicts[(existing, pair.new)] = await verifier.verify(existing, pair.new, similarity)
    return JudgedPairs(verdicts)


@dataclass(frozen=True, slots=True)
class ScoredPair:
    pair: LabelledPair
    outcome: PairDecision

    @property
    def mistake(self) -> str | None:
        """`false_merge` (distinct, merged or skipped), `missed_duplicate`, or None."""
        if self.outcome.duplicate and not self.pair.duplicate:
            return "false_merge"
        if self.pair.duplicate and not self.outcome.duplicate:
            return "missed_duplicate"
        return None


@dataclass(slots=True)
class Evaluation:
    scored: list[ScoredPair]
    policy: ThresholdPolicy
    guards: bool
    verifier: str = "off"  # what judged matches: "off", "local (P >= 0.45)", "llm ..."
    overall: Tally = field(default_factory=Tally)
    by_category: dict[str, Tally] = field(default_factory=dict)
    by_namespace: dict[str, Tally] = field(default_factory=dict)

    def mistakes(self, limit: int) -> list[ScoredPair]:
        """False merges, most similar first (they lose facts), then missed duplicates,
        least similar first; at most `limit` of each."""
        wrong = [s for s in self.scored if s.mistake == "false_merge"]
        missed = [s for s in self.scored if s.mistake == "missed_duplicate"]
        wrong.sort(key=lambda s: (-s.outcome.similarity, s.pair.line))
        missed.sort(key=lambda s: (s.outcome.similarity, s.pair.line))
        return wrong[:limit] + missed[:limit]


def evaluate_pairs(
    pairs: Sequence[LabelledPair],
    similarities: Sequence[float],
    policy: ThresholdPolicy,
    *,
    guards: bool = True,
    verifier: PairJudge | None = None,
    verifier_name: str | None = None,
    aligner: PairAligner | None = None,
    cross_encoder: CrossEncoderVerifier | None = None,
) -> Evaluation:
    """Decide every pair (its namespace's bands) and tally overall, per category and
    per namespace."""
    if len(pairs) != len(similarities):
        raise ValueError("one similarity per pair is needed")
    if verifier_name is None:
        verifier_name = "off" if verifier is None else type(verifier).__name__
    evaluation = Evaluation(scored=[], policy=policy, guards=guards, verifier=verifier_name)
    for pair, similarity in zip(pairs, similarities, strict=True):
        bands = policy.bands_for(pair.namespace) if pair.namespace else policy.default
        outcome = decide_pair(
            pair.existing,
            pair.new,
            similarity,
            bands,
            guards=guards,
            verifier=verifier,
            aligner=aligner,
            cross_encoder=cross_encoder,
        )
        evaluation.scored.append(ScoredPair(pair, outcome))
        tallies = (
            evaluation.overall,
            evaluation.by_category.setdefault(pair.category or NO_CATEGORY, Tally()),
            evaluation.by_namespace.setdefault(pair.namespace or DEFAULT_NAMESPACE, Tally()),
        )
        for tally in tallies:
            tally.add(
                duplicate=pair.duplicate,
                decision=outcome.decision,
                vetoed=outcome.veto is not None,
            )
    return evaluation


def _bands_dict(bands: Bands) -> dict[str, float]:
    return {
        "duplicate_threshold": bands.duplicate_threshold,
        "merge_threshold": bands.merge_threshold,
    }


def _mistake_dict(item: ScoredPair, show_text: bool) -> dict[str, Any]:
    pair, outcome = item.pair, item.outcome
    row: dict[str, Any] = {
        "line": pair.line,
        "mistake": item.mistake,
        "label": pair.label,
        "category": pair.category,
        "namespace": pair.namespace,
        "decision": outcome.decision.value,
        "reason": outcome.reason.value,
        "similarity": round(outcome.similarity, 6),
        "threshold": outcome.threshold,
        "veto": outcome.veto.guard.value if outcome.veto else None,
        "veto_detail": outcome.veto.detail if outcome.veto else None,
        "existing_hash": short_hash(pair.existing),
        "new_hash": short_hash(pair.new),
    }
    if show_text:
        row["existing"] = pair.existing
        row["new"] = pair.new
    return row


def evaluation_json(
    evaluation: Evaluation,
    *,
    source: str,
    model: Mapping[str, Any],
    show_text: bool = False,
    mistakes: int = 10,
    timing: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The evaluation as one JSON-serialisable document."""
    policy = evaluation.policy
    return {
        "pairs_file": source,
        "model": dict(model),
        "guards": evaluation.guards,
        "verifier": evaluation.verifier,
        "bands": {
            "default": _bands_dict(policy.default),
            "namespaces": {n: _bands_dict(b) for n, b in sorted(policy.per_namespace.items())},
        },
        "overall": evaluation.overall.as_dict(),
        "by_category": {k: v.as_dict() for k, v in sorted(evaluation.by_category.items())},
        "by_namespace": {k: v.as_dict() for k, v in sorted(evaluation.by_namespace.items())},
        "mistakes": [_mistake_dict(m, show_text) for m in evaluation.mistakes(mistakes)],
        "timing_s": dict(timing or {}),
    }


def _verifier_vetoes(evaluation: Evaluation) -> int:
    return sum(
        1
        for s in evaluation.scored
        if s.outcome.veto is not None and s.outcome.veto.guard.value == "verifier"
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(title: str, groups: Mapping[str, Tally]) -> list[str]:
    lines = [
        "",
        title,
        f"| {title.split()[-1]} | n | dup | dist | TP | FN | FP | TN | precision | recall | F1 "
        "| false-merge rate | skipped | merged | accepted | vetoed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tally in sorted(groups.items()):
        c = tally.confusion
        totals = {d: 0 for d in ("skipped", "merged", "accepted")}
        for counts in tally.decisions.values():
            for decision, count in counts.items():
                totals[decision] += count
        lines.append(
            f"| {name} | {c.n} | {c.duplicates} | {c.distinct} | {c.tp} | {c.fn} | {c.fp} "
            f"| {c.tn} | {_fmt(c.precision)} | {_fmt(c.recall)} | {_fmt(c.f1)} "
            f"| {_fmt(c.false_merge_rate)} | {totals['skipped']} | {totals['merged']} "
            f"| {totals['accepted']} | {tally.vetoes} |"
        )
    return lines


def _describe_bands(policy: ThresholdPolicy) -> str:
    parts = [
        f"default skip >= {policy.default.duplicate_threshold:g}, "
        f"merge >= {policy.default.merge_threshold:g}"
    ]
    parts += [
        f"{name}: skip >= {b.duplicate_threshold:g}, merge >= {b.merge_threshold:g}"
        for name, b in sorted(policy.per_namespace.items())
    ]
    return "; ".join(parts)


def render_evaluation(
    evaluation: Evaluation,
    *,
    source: str,
    model: Mapping[str, Any],
    show_text: bool = False,
    mistakes: int = 10,
    timing: Mapping[str, float] | None = None,
) -> str:
    """A human-readable report (Markdown tables)."""
    c = evaluation.overall.confusion
    lines = [
        f"memdedup evaluate: {c.n} labelled pairs from {source} "
        f"({c.duplicates} duplicate, {c.distinct} distinct)",
        f"model {model.get('model_id')} (backend {model.get('backend')}), "
        f"guards {'on' if evaluation.guards else 'off'}, verifier {evaluation.verifier}",
        f"bands: {_describe_bands(evaluation.policy)}",
    ]
    if timing:
        lines.append(
            "time: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timing.items())
        )
    lines += [
        "",
        "duplicate class (predicted duplicate = skipped or merged):",
        f"  precision {_fmt(c.precision)}   recall {_fmt(c.recall)}   F1 {_fmt(c.f1)}",
        f"  false-merge rate {_fmt(c.false_merge_rate)} "
        f"({c.fp} of {c.distinct} distinct pairs merged or skipped)",
        f"  TP {c.tp}  FN {c.fn}  FP {c.fp}  TN {c.tn}; guard and verifier vetoes "
        f"{evaluation.overall.vetoes} (verifier {_verifier_vetoes(evaluation)})",
    ]
    lines += _table("per category", evaluation.by_category)
    lines += _table("per namespace", evaluation.by_namespace)
    worst = evaluation.mistakes(mistakes)
    lines += ["", f"worst mistakes (false merges first, then missed duplicates; {len(worst)})"]
    if not worst:
        lines.append("  none")
    else:
        lines += [
            "| line | mistake | category | namespace | decision | similarity | veto "
            "| existing hash | new hash |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for item in worst:
            pair, outcome = item.pair, item.outcome
            veto = outcome.veto.guard.value if outcome.veto else "-"
            lines.append(
                f"| {pair.line} | {item.mistake} | {pair.category or '-'} "
                f"| {pair.namespace or '-'} | {outcome.decision.value} ({outcome.reason.value}) "
                f"| {outcome.similarity:.3f} | {veto} | {short_hash(pair.existing)} "
                f"| {short_hash(pair.new)} |"
            )
        if show_text:
            lines.append("")
            for item in worst:
                lines.append(f"  line {item.pair.line}: {item.pair.existing!r} / {item.pair.new!r}")
        else:
            lines.append("(texts only with --show-text)")
    return "\n".join(lines)
