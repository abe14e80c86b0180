"""The parse alignment's reading of an agent noun against its verb
(consumer.domain.alignment): "Manager is Priya" says Priya manages the user;
"I manage Priya" says the user manages her. Real spaCy pipeline.

Sentences here are written for these tests, not taken from the labelled pair sets.
"""

from __future__ import annotations

import pytest

from consumer.domain.alignment import PairAligner, _agent_noun_of


@pytest.fixture(scope="module")
def aligner() -> PairAligner:
    return PairAligner()


def detail_of(aligner: PairAligner, existing: str, new: str) -> str | None:
    veto = aligner.check(existing, new).veto
    return None if veto is None else veto.detail


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Manager is Priya Nair", "I manage Priya Nair"),
        ("The user's coach is Tom Baker", "The user coaches Tom Baker"),
        ("Supervisor is Dr. Amara Okafor", "Supervises Dr. Amara Okafor"),
    ],
)
def test_the_user_doing_the_act_of_an_agent_noun_is_a_role_change(
    aligner: PairAligner, existing: str, new: str
) -> None:
    for first, second in ((existing, new), (new, existing)):
        detail = detail_of(aligner, first, second)
        assert detail is not None, (first, second)
        assert detail.startswith("role_change"), (first, second, detail)


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Priya Nair manages the user", "Manager is Priya Nair"),
        ("Tom Baker coaches the user", "The user's coach is Tom Baker"),
    ],
)
def test_the_named_one_doing_the_act_is_the_same_role(
    aligner: PairAligner, existing: str, new: str
) -> None:
    for first, second in ((existing, new), (new, existing)):
        detail = detail_of(aligner, first, second)
        assert detail is None or not detail.startswith("role_change"), (first, second, detail)


@pytest.mark.parametrize(
    ("noun", "verb", "agent"),
    [
        ("manager", "manage", True),
        ("supervisor", "supervise", True),
        ("teacher", "teach", True),
        ("coach", "coach", True),
        ("mentor", "mentor", True),
        ("manager", "mentor", False),
        ("landlord", "rent", False),
    ],
)
def test_agent_nouns(noun: str, verb: str, agent: bool) -> None:
    assert _agent_noun_of(noun, verb) is agent
