"""Which guard vetoes the parse alignment lifts (consumer.domain.lifting), with the
real spaCy pipeline."""

from __future__ import annotations

import pytest

from consumer.domain.alignment import PairAligner
from consumer.domain.guards import GuardName, check_pair
from consumer.domain.lifting import detail_in_a_clause, guards_after_parse, guards_for_verifier


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


@pytest.mark.parametrize(
    ("existing", "new", "lifted"),
    [
        # quantities that come with a clause the new text adds
        (
            "User's favorite band is Radiohead.",
            "User's favorite band is Radiohead, and they've seen them live four times.",
            True,
        ),
        (
            "User holds the AWS certification.",
            "User holds the AWS certification, earned in 2023.",
            True,
        ),
        # an adjunct or a modifier that may narrow the stored fact
        ("Kofi is vegetarian.", "Kofi is vegetarian on weekdays.", False),
        ("User owns a house.", "User owns half of a house.", False),
        # a clause set against the stored fact
        ("User is vegetarian.", "User is vegetarian, though they eat fish twice a month.", False),
        ("User plays tennis.", "User plays tennis but stopped in 2020.", False),
    ],
)
def test_the_verifier_reads_a_detail_in_a_clause_as_no_numbers_veto(
    aligner: PairAligner, existing: str, new: str, lifted: bool
) -> None:
    veto = check_pair(existing, new)
    assert veto is not None
    assert veto.guard is GuardName.NUMBERS
    assert detail_in_a_clause(veto, existing, new, aligner.check(existing, new)) is lifted
    assert (guards_for_verifier(veto, existing, new, aligner) is None) is lifted


def test_without_the_alignment_the_verifier_reads_the_guards_as_they_are() -> None:
    existing, new = (
        "User holds the AWS certification.",
        "User holds the AWS certification, earned in 2023.",
    )
    veto = check_pair(existing, new)
    assert guards_for_verifier(veto, existing, new, None) is veto


def test_the_verifier_reads_a_rearranged_sentence_as_no_word_order_veto(
    aligner: PairAligner,
) -> None:
    existing = "The finance team approved the new travel policy in March."
    new = "In March the new travel policy was approved by the finance team."
    veto = check_pair(existing, new)
    assert veto is not None
    assert veto.guard is GuardName.WORD_ORDER
    assert guards_for_verifier(veto, existing, new, aligner) is None


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        (
            "Decided to use Postgres instead of MongoDB for the analytics store",
            "Decided to use MongoDB instead of Postgres for the analytics store",
        ),
        ("User would rather hike than cycle.", "User would rather cycle than hike."),
        # the parser reads "PostgreSQL" as an adverb of "chose"
        (
            "Team chose PostgreSQL over MongoDB for the billing service.",
            "Team chose MongoDB over PostgreSQL for the billing service.",
        ),
    ],
)
def test_alternatives_set_against_each_other_keep_the_word_order_veto(
    aligner: PairAligner, existing: str, new: str
) -> None:
    """The parser reads "X instead of Y" as a list, whose order the alignment
    ignores: the word-order guard's veto stays."""
    veto = check_pair(existing, new)
    assert veto is not None
    assert veto.guard is GuardName.WORD_ORDER
    assert guards_for_verifier(veto, existing, new, aligner) == veto


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        # the parser reads "chess" as a conjunct of "Ines": every word in the same place
        (
            "Does pottery with Ines and chess with Tariq",
            "Does pottery with Tariq and chess with Ines",
        ),
        (
            "Forwards the invoices to Acme and the receipts to Initech",
            "Forwards the invoices to Initech and the receipts to Acme",
        ),
    ],
)
def test_phrases_whose_fillers_traded_places_keep_the_word_order_veto(
    aligner: PairAligner, existing: str, new: str
) -> None:
    """Each "with X" / "to X" stayed where it was and what it governs moved: no
    parse lifts that veto, even one that reads the two texts as equivalent."""
    veto = check_pair(existing, new)
    assert veto is not None
    assert veto.guard is GuardName.WORD_ORDER
    assert guards_after_parse(existing, new, aligner) == veto
    assert guards_for_verifier(veto, existing, new, aligner) == veto
