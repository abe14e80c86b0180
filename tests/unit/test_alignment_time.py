"""The parse alignment's reading of time in short notes (consumer.domain.alignment):
a note's past participle, a past "was" against a note without a verb, and a
main verb going on against one that has or did the thing. Real spaCy pipeline.

Sentences here are written for these tests, not taken from the labelled pair sets.
"""

from __future__ import annotations

import pytest

from consumer.domain.alignment import PairAligner, _going_on


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


def detail_of(aligner: PairAligner, existing: str, new: str) -> str | None:
    veto = aligner.check(existing, new).veto
    return None if veto is None else veto.detail


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        # a note's main verb tagged a participle: the past, against the present
        ("Lives near the harbour in Galway", "Lived near the harbour in Galway"),
        ("Works as a welder in Gdansk", "Worked as a welder in Gdansk"),
        # a past "was" against a note without a verb
        ("Allergic to shellfish", "Was allergic to shellfish"),
        ("Treasurer of the rowing club", "Was treasurer of the rowing club"),
        # going on, against had or done
        ("Has a vintage Vespa", "Is restoring a vintage Vespa"),
        ("Has asthma", "Is being assessed for asthma"),
        ("Tomas is applying for Irish citizenship", "Tomas got Irish citizenship"),
    ],
)
def test_a_fact_told_at_another_time_is_a_time_change(
    aligner: PairAligner, existing: str, new: str
) -> None:
    for first, second in ((existing, new), (new, existing)):
        detail = detail_of(aligner, first, second)
        assert detail is not None, (first, second)
        assert detail.startswith("time_change"), (first, second, detail)


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        # a passive state, with and without its "is"
        ("Based in Porto", "Is based in Porto"),
        ("Married to Sam", "Is married to Sam"),
        # a participle that qualifies a noun is no past of the note
        (
            "Boiler is a Vaillant, serviced every March by a local firm",
            "Every March a local firm services the Vaillant boiler",
        ),
        # a progressive set for a day ahead tells an arrangement
        ("Has a physio appointment on Thursday", "Is seeing the physio on Thursday"),
        ("Has a flight to Oslo next week", "Is flying to Oslo next week"),
        # a frame's fact is the verb it frames
        (
            "Decided to cancel the magazine subscription",
            "Is cancelling the magazine subscription",
        ),
        # an event told as done and in the present perfect
        ("Finished the pottery course in June", "Has finished the pottery course in June"),
        # the same progressive and simple present of one verb
        ("Is reading a biography of Lincoln", "Reads a biography of Lincoln"),
        # a value the note records, reported in the past
        (
            "Blood sugar 5.4 mmol/L at the March check-up",
            "Blood sugar was 5.4 mmol/L at the March check-up",
        ),
    ],
)
def test_the_same_time_told_otherwise_is_no_time_change(
    aligner: PairAligner, existing: str, new: str
) -> None:
    for first, second in ((existing, new), (new, existing)):
        detail = detail_of(aligner, first, second)
        assert detail is None or not detail.startswith("time_change"), (first, second, detail)


@pytest.mark.parametrize(
    ("form", "going_on"),
    [
        ("is fostering", True),
        ("'m interviewing", True),
        ("is being screened", True),
        ("being tested", True),
        ("caching", False),  # a heading's noun as often as a note's verb
        ("was moving", False),
        ("has", False),
    ],
)
def test_forms_going_on(form: str, going_on: bool) -> None:
    assert _going_on(form) is going_on
