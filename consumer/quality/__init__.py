"""Measured dedup quality: labelled pairs, the consumer's decision rule on them,
evaluation and threshold calibration (`memdedup evaluate`, `memdedup calibrate`).

Nothing here needs Kafka or a store, nor loads the model: its command line
(`consumer.cli.quality`) does.
"""

from __future__ import annotations

from consumer.quality.calibrate import Calibration, calibrate
from consumer.quality.evaluate import Evaluation, evaluate_pairs, policy_from_settings
from consumer.quality.metrics import Confusion, Tally
from consumer.quality.pairs import LabelledPair, PairFileError, load_pairs, parse_pairs
from consumer.quality.rule import PairDecision, decide_pair, is_exact

__all__ = [
    "Calibration",
    "Confusion",
    "Evaluation",
    "LabelledPair",
    "PairDecision",
    "PairFileError",
    "Tally",
    "calibrate",
    "decide_pair",
    "evaluate_pairs",
    "is_exact",
    "load_pairs",
    "parse_pairs",
    "policy_from_settings",
]
