"""Confusion counts and the figures derived from them.

Positive = labelled `duplicate`; predicted positive = skipped or merged.

- precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = 2TP / (2TP + FP + FN);
- false-merge rate = FP / (FP + TN): the share of distinct pairs that would be
  merged or skipped, i.e. distinct facts lost.

An undefined ratio (empty denominator) is None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemas import Decision

__all__ = ["Confusion", "Tally", "ratio"]


def ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


@dataclass(slots=True)
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, *, duplicate: bool, predicted: bool) -> None:
        if duplicate and predicted:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif duplicate:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def duplicates(self) -> int:
        return self.tp + self.fn

    @property
    def distinct(self) -> int:
        return self.fp + self.tn

    @property
    def predicted(self) -> int:
        return self.tp + self.fp

    @property
    def precision(self) -> float | None:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def false_merge_rate(self) -> float | None:
        return ratio(self.fp, self.fp + self.tn)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "duplicates": self.duplicates,
            "distinct": self.distinct,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "false_merge_rate": self.false_merge_rate,
        }


@dataclass(slots=True)
class Tally:
    """Confusion counts plus what was decided, per label, and how many guard vetoes."""

    confusion: Confusion = field(default_factory=Confusion)
    # label -> decision -> count
    decisions: dict[str, dict[str, int]] = field(default_factory=dict)
    vetoes: int = 0

    def add(self, *, duplicate: bool, decision: Decision, vetoed: bool) -> None:
        self.confusion.add(duplicate=duplicate, predicted=decision is not Decision.ACCEPTED)
        label = "duplicate" if duplicate else "distinct"
        by_decision = self.decisions.setdefault(label, {d.value: 0 for d in Decision})
        by_decision[decision.value] += 1
        self.vetoes += int(vetoed)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.confusion.as_dict(),
            "decisions": {label: dict(counts) for label, counts in sorted(self.decisions.items())},
            "vetoes": self.vetoes,
        }
