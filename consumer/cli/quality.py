"""`memdedup evaluate` and `memdedup calibrate` (wired in consumer.cli)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consumer.domain.alignment import PairAligner
from consumer.domain.verifier import LlmVerifier, LocalVerifier, PairJudge, build_verifier
from consumer.embedding.cross_encoder import build_cross_encoder
from consumer.quality.calibrate import (
    GRID,
    calibrate,
)
from consumer.quality.calibration_report import (
    calibration_json,
    calibration_plot,
    render_calibration,
    yaml_snippet,
)
from consumer.quality.evaluate import (
    embed_similarities,
    evaluate_pairs,
    evaluation_json,
    judge_pairs,
    policy_from_settings,
    render_evaluation,
)
from consumer.quality.pairs import LabelledPair, PairFileError, load_pairs
from consumer.quality.plot import MISSING_MATPLOTLIB, have_matplotlib
from consumer.settings import Settings, load_settings

__all__ = ["CALIBRATION_REFUSED", "run_calibrate", "run_evaluate"]

# `memdedup calibrate` exit status when the default bands cannot reach the target.
CALIBRATION_REFUSED = 3


@dataclass(frozen=True, slots=True)
class _Scored:
    similarities: list[float]
    model: dict[str, Any]
    timing: dict[str, float]
    verifier: PairJudge | None = None
    verifier_name: str = "off"


def describe_verifier(settings: Settings, verifier: object) -> str:
    """What judges matches, for reports: "off", "local (P >= 0.45)", "llm gpt-4o-mini"."""
    if verifier is None:
        return "off"
    if isinstance(verifier, LlmVerifier):
        return f"llm {settings.dedup.verifier.model} (local fallback)"
    if isinstance(verifier, LocalVerifier):
        return f"local (P >= {verifier.min_probability:g})"
    return type(verifier).__name__


async def _score(
    settings: Settings,
    pairs: Sequence[LabelledPair],
    *,
    with_verifier: bool = True,
    verifier_floor: float | None = None,
    aligner: PairAligner | None = None,
) -> _Scored:
    """Similarities, and the consumer's verifier as a synchronous judge (an LLM
    verifier is asked here for each pair at or above `verifier_floor`, default the
    lowest merge band)."""
    from consumer.embedding.embedders import load_embedder

    started = time.perf_counter()
    embedder = await load_embedder(settings.embedding, data_dir=settings.qdrant.path)
    loaded = time.perf_counter()
    try:
        similarities = await embed_similarities(embedder, pairs)
    finally:
        await embedder.close()
    done = time.perf_counter()
    model = {"model_id": embedder.model_id, "backend": settings.embedding.backend}
    timing = {"model_load": round(loaded - started, 3), "embedding": round(done - loaded, 3)}
    verifier = build_verifier(settings.dedup, aligner=aligner) if with_verifier else None
    if verifier is None:
        return _Scored(similarities, model, timing)
    if verifier_floor is None:
        policy = policy_from_settings(settings.dedup)
        verifier_floor = min(
            b.merge_threshold for b in (policy.default, *policy.per_namespace.values())
        )
    judged = time.perf_counter()
    judge = await judge_pairs(verifier, pairs, similarities, min_similarity=verifier_floor)
    if not isinstance(verifier, LocalVerifier):
        timing["verifier"] = round(time.perf_counter() - judged, 3)
    return _Scored(similarities, model, timing, judge, describe_verifier(settings, verifier))


def _prepare(
    command: str, pairs_file: Path, config: Path | None
) -> tuple[Settings, list[LabelledPair]] | None:
    """Settings and pairs, or None after printing why the pairs file is unusable."""
    settings = load_settings(config)
    try:
        pairs = load_pairs(pairs_file)
    except PairFileError as exc:
        print(f"memdedup {command}: {exc}", file=sys.stderr)
        return None
    from consumer.observability.logs import configure_logging

    # Model-loading logs go to stderr, so that stdout stays one report (or JSON document).
    configure_logging(level="WARNING", fmt="console")
    return settings, pairs


def _aligner(settings: Settings, no_guards: bool) -> PairAligner | None:
    """The consumer's parse alignment, unless it is off or --no-guards asks for bands only."""
    if no_guards or not settings.dedup.alignment_enabled:
        return None
    return PairAligner()


def run_evaluate(
    pairs_file: Path,
    *,
    config: Path | None = None,
    as_json: bool = False,
    show_text: bool = False,
    no_guards: bool = False,
    mistakes: int = 10,
) -> int:
    prepared = _prepare("evaluate", pairs_file, config)
    if prepared is None:
        return 2
    settings, pairs = prepared
    # --no-guards: cosine bands only, so neither guards nor the verifier.
    aligner = _aligner(settings, no_guards)
    scored = asyncio.run(_score(settings, pairs, with_verifier=not no_guards, aligner=aligner))
    guards = settings.dedup.guards_enabled and not no_guards
    evaluation = evaluate_pairs(
        pairs,
        scored.similarities,
        policy_from_settings(settings.dedup),
        guards=guards,
        verifier=scored.verifier,
        verifier_name=scored.verifier_name,
        aligner=aligner,
        # The cross-encoder's veto and rescue, as the consumer decides.
        cross_encoder=None if no_guards else build_cross_encoder(settings.dedup.cross_encoder),
    )
    source = str(pairs_file)
    if as_json:
        document = evaluation_json(
            evaluation,
            source=source,
            model=scored.model,
            show_text=show_text,
            mistakes=mistakes,
            timing=scored.timing,
        )
        print(json.dumps(document, indent=2))
    else:
        report = render_evaluation(
            evaluation,
            source=source,
            model=scored.model,
            show_text=show_text,
            mistakes=mistakes,
            timing=scored.timing,
        )
        print(report)
    return 0


def run_calibrate(
    pairs_file: Path,
    *,
    target_precision: float,
    config: Path | None = None,
    png: Path | None = None,
    no_guards: bool = False,
    as_json: bool = False,
) -> int:
    if not 0.0 < target_precision <= 1.0:
        print(
            f"memdedup calibrate: --target-precision must be within (0, 1], got {target_precision}",
            file=sys.stderr,
        )
        return 2
    if png is not None and not have_matplotlib():
        # Before the model loads: the plot is drawn last.
        print(f"memdedup calibrate: --png: {MISSING_MATPLOTLIB}", file=sys.stderr)
        return 2
    prepared = _prepare("calibrate", pairs_file, config)
    if prepared is None:
        return 2
    settings, pairs = prepared
    aligner = _aligner(settings, no_guards)
    scored = asyncio.run(
        _score(
            settings, pairs, with_verifier=not no_guards, verifier_floor=GRID[0], aligner=aligner
        )
    )
    guards = settings.dedup.guards_enabled and not no_guards
    try:
        result = calibrate(
            pairs,
            scored.similarities,
            policy_from_settings(settings.dedup),
            target=target_precision,
            guards=guards,
            verifier=scored.verifier,
            aligner=aligner,
            cross_encoder=(
                None if no_guards else build_cross_encoder(settings.dedup.cross_encoder)
            ),
        )
    except ValueError as exc:  # e.g. every pair is in the test split
        print(f"memdedup calibrate: {pairs_file}: {exc}", file=sys.stderr)
        return 2
    # Exit 3: the default bands cannot reach the target; the snippet keeps them.
    code = 0 if result.overall.refused is None else CALIBRATION_REFUSED
    snippet = yaml_snippet(result, model_id=str(scored.model["model_id"]))
    if png is not None:
        png.write_bytes(calibration_plot(result))
    if as_json:
        document = {
            "pairs_file": str(pairs_file),
            "model": scored.model,
            **calibration_json(result),
            "yaml": snippet,
            "png": str(png) if png is not None else None,
        }
        print(json.dumps(document, indent=2))
    else:
        print(f"memdedup calibrate: {len(pairs)} labelled pairs from {pairs_file}")
        print(f"model {scored.model['model_id']} (backend {scored.model['backend']})")
        print()
        print(render_calibration(result))
        if png is not None:
            print(f"\nprecision/recall curve written to {png}")
        print("\nconfig snippet (memdedup.yaml):\n")
        print(snippet)
    if code:
        print(
            f"memdedup calibrate: default bands not calibrated: {result.overall.refused}",
            file=sys.stderr,
        )
    return code
