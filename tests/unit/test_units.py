"""Amounts with units in base units (consumer.domain.units), and what the
numbers guard makes of them. Sentences are written for these tests."""

from __future__ import annotations

import pytest

from consumer.domain.guards import GuardName, check_pair
from consumer.domain.units import unit_amounts


@pytest.mark.parametrize(
    ("text", "bases"),
    [
        ("stays for two weeks", ["14 days"]),
        ("stays for 14 days", ["14 days"]),
        ("a 10-kilometre loop", ["10000 metres"]),
        ("keeps it under 0.5 GB", ["500000000 bytes"]),
        ("lasts half an hour", ["30 minutes"]),
        ("a streak of four-hundred days", ["400 days"]),
        ("twenty-five years", ["300 months"]),
        ("drinks 2,000 ml", ["2 litres"]),
        ("twice a week", []),  # a rate, not an amount
        ("moved to a new flat", []),
    ],
)
def test_amounts_in_base_units(text: str, bases: list[str]) -> None:
    assert [amount.base for amount in unit_amounts(text)] == bases


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Ravi's visa renewal takes 6 weeks.", "Ravi's visa renewal takes 42 days."),
        ("The backup disk holds 3 TB.", "The backup disk holds 3,000 GB."),
        ("The bakery is a 2 km walk away.", "The bakery is a two-kilometre walk away."),
        ("The sauna session lasts half an hour.", "The sauna session lasts 30 minutes."),
        ("Odile rents a three-room flat.", "Odile rents a 3-room flat."),
        ("The lease ends on 4 March 2027.", "The lease ends on 2027-03-04."),
        ("The permit is valid until 11/2028.", "The permit is valid until November 2028."),
        ("Choir practice is every other Tuesday.", "Choir practice is every second Tuesday."),
        ("Bins go out every Thu evening.", "Bins go out every Thursday evening."),
        ("Rent is $1,200/month.", "Rent is $1,200 a month."),
        ("Salary: $95k/year", "Salary is $95,000 per year"),
    ],
)
def test_equal_amounts_in_other_forms_pass(existing: str, new: str) -> None:
    assert check_pair(existing, new) is None
    assert check_pair(new, existing) is None


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Feed the fish every 2 hours.", "Feed the fish every 2 days."),
        ("The ferry ride takes 40 minutes.", "The ferry ride takes 40 hours."),
        ("The trail is 5 km long.", "The trail is 5 m long."),
        ("Choir practice is every Tuesday.", "Choir practice is every other Tuesday."),
        ("The lease ends on 2027-03-04.", "The lease ends on 2027-04-03."),
        ("The sauna session lasts half an hour.", "The sauna session lasts 3 hours."),
    ],
)
def test_different_amounts_veto(existing: str, new: str) -> None:
    veto = check_pair(existing, new)
    assert veto is not None
    assert veto.guard is GuardName.NUMBERS
