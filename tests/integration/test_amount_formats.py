"""Equal amounts written in other formats, end to end (local broker, real
embedding model, the shipped cross-encoder, real parser, embedded store): a
range whose unit follows its second number, a decimal comma, a temperature in
the other scale, a label joined to its number by a hyphen are folded into the
stored memory; the same forms with another
value are kept apart by the numbers guard, the stored memory named as related."""

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

FACTS = [
    "The greenhouse is kept at 24°C.",
    "Brightline pays its invoices 2-3 weeks late.",
    "Oona got a 2.3 in the statistics exam.",
    "Kofi's locker is 12-A in the east wing.",
]
# One scope for the equal amounts, another for the changed ones, so that no
# follow-up meets another's.
STORED = [event(f"s{i}", text) for i, text in enumerate(FACTS)] + [
    event(f"t{i}", text, namespace="changed") for i, text in enumerate(FACTS)
]
EQUAL = [
    event("p0", "The greenhouse is kept at 75°F."),  # 24°C = 75.2°F
    event("p1", "Brightline pays its invoices 14 to 21 days late."),
    event("p2", "Oona scored 2,3 in the statistics exam."),
    event("p3", "Kofi's locker is 12A in the east wing."),
]
CHANGED = [
    event("d0", "The greenhouse is kept at 72°F.", namespace="changed"),
    event("d1", "Brightline pays its invoices 14 to 28 days late.", namespace="changed"),
    event("d2", "Oona scored 2,7 in the statistics exam.", namespace="changed"),
    event("d3", "Kofi's locker is 12-C in the east wing.", namespace="changed"),
]


async def test_equal_amounts_fold_and_changed_ones_stay_apart(
    local_broker: Any, real_embedder: Any, tmp_path: Path
) -> None:
    settings = make_settings(local_broker.bootstrap_servers, tmp_path)
    decisions = await decide_after_stored(settings, real_embedder, STORED, EQUAL + CHANGED)
    for i in range(len(FACTS)):
        assert_folded(decisions, f"p{i}", into=f"s{i}")
        body = assert_kept_apart(decisions, f"d{i}", from_=f"t{i}", guard="numbers")
        assert body["related"][0]["kind"] == "number_change"
