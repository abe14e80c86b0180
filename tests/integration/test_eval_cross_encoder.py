"""tools/eval_cross_encoder.py: the cross-encoder's scores it evaluates are the
service's own."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.scripts import import_script

pytestmark = pytest.mark.integration


def _tool() -> Any:
    return import_script("eval_cross_encoder", "tools", "bench")


def test_the_scores_evaluated_are_the_services() -> None:
    """Scored together in one call, each pair still gets the P the service's
    scorer gives it alone (batched int8 scores move with their neighbours)."""
    tool = _tool()
    from consumer.embedding.cross_encoder import DEFAULT_MODEL_DIR, CrossEncoderInfo, OnnxPairScorer

    pairs = [
        SimpleNamespace(existing="User likes tea.", new="I like tea"),
        SimpleNamespace(existing="User lives in Oslo.", new="User lives in Bergen."),
        SimpleNamespace(
            existing="The team moved the nightly build from Jenkins to GitHub Actions last spring.",
            new="Nightly builds run on GitHub Actions now.",
        ),
    ]
    info = CrossEncoderInfo.read(DEFAULT_MODEL_DIR)
    variant = info.model_file.name.removeprefix("model-").removesuffix(".onnx")
    scorer = tool.OnnxScorer(DEFAULT_MODEL_DIR, variant=variant, max_length=info.max_length)
    mean, forward = tool.ce_scores(scorer, pairs, both_orders=True)

    service = OnnxPairScorer.load()
    for pair, both, one in zip(pairs, mean, forward, strict=True):
        there, back = service.probabilities([(pair.existing, pair.new), (pair.new, pair.existing)])
        assert one == pytest.approx(there, abs=1e-9)
        assert both == pytest.approx((there + back) / 2, abs=1e-9)
