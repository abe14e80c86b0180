"""Amounts with units in base units, rates and currencies (consumer.domain.units),
and what the numbers guard makes of them. Sentences are written for these tests."""

from __future__ import annotations

from fractions import Fraction

import pytest

from consumer.domain.guards import GuardName, check_pair
from consumer.domain.units import (
    currencies,
    frequencies,
    read_units,
    same_currencies,
    unit_amounts,
)


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
        ("an SLO of 0.3 seconds", ["0.005 minutes"]),
        ("an SLO of 300 ms", ["0.005 minutes"]),
        ("a 250-millisecond timeout", ["0.00416667 minutes"]),
        ("lasts a quarter of an hour", ["15 minutes"]),
        ("runs three quarters of an hour", ["45 minutes"]),
        ("ran it for a year and a half", ["18 months"]),
        ("two and a half years", ["30 months"]),
        ("for 2 hours and a half, then 1 hour", ["150 minutes", "60 minutes"]),
        ("an hour and a half", ["90 minutes"]),
        ("a 26.2-mile race", ["42164.8 metres"]),
        ("six feet tall", ["1.8288 metres"]),
        ("a 12 oz steak", ["340.194 grams"]),
        ("weighs 10 lbs", ["4535.92 grams"]),
        ("lives in Lyon", []),  # "in" is no inch
        ("a half and a half mix", []),
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
        (
            "The public API's p99 latency SLO is 0.3 seconds.",
            "The public API has a p99 latency SLO of 300 ms.",
        ),
        (
            "Daily standup is at 9:30 am and lasts 15 minutes.",
            "Daily standup is at 09:30 and lasts a quarter of an hour.",
        ),
        (
            "Piano lessons are on Thursdays and last 45 minutes.",
            "Piano lessons happen Thursdays and run three quarters of an hour.",
        ),
        (
            "The water heater should be flushed again every 12 months.",
            "The water heater should be flushed again every year.",
        ),
        ("Water the ferns every 7 days.", "Water the ferns once a week."),
        # hours and days are one dimension; a month has no fixed number of days
        ("Water the ferns daily.", "Water the ferns every 24 hours."),
        ("Credentials rotate once a day.", "Credentials rotate every 24 hours."),
        ("The trial lasts 48 hours.", "The trial lasts two days."),
        ("Oona ran the service for a year and a half.", "Oona ran the service for 18 months."),
        ("Oona's commute is 3 miles.", "Oona's commute is three miles."),
        # Rates: one text's among the other's is no difference.
        ("Oona drinks two coffees a day.", "Oona drinks two coffees daily."),
        ("Oona works from home a day a week.", "Oona works from home one day per week."),
        ("Oona waters the ferns daily.", "Oona waters the ferns daily and feeds them monthly."),
        ("The drive takes an hour and a half.", "The drive takes ninety minutes."),
        ("The visa lasts two and a half years.", "The visa lasts 30 months."),
        ("Water the ferns every 2 weeks.", "Water the ferns fortnightly."),
        ("The domain renews every twelve months.", "The domain renews annually."),
        # "every second" before a weekday or a period is every other one; alone, a unit.
        ("Team retro every second week", "Team retro fortnightly"),
        ("Dinner at Gran's every second Sunday", "Fortnightly Sunday dinner at Gran's"),
        ("The probe pings the server every second.", "The probe pings the server once a second."),
        # Rates with the same numbers on both sides stay equal as before.
        ("User runs 5 km a day.", "User runs 5 km daily."),
        ("User swims twice a week.", "User swims 2 times per week."),
        # A range's unit counts its first number too.
        (
            "Brightline pays invoices 2-3 weeks late.",
            "Brightline pays invoices 14 to 21 days late.",
        ),
        ("The repair takes two or three hours.", "The repair takes 120 to 180 minutes."),
        ("Jet lag lasts between 2 and 3 days.", "Jet lag lasts 48-72 hours."),
        # A decimal comma, temperatures in the other scale, a weekend's days.
        ("Oona got a 2.3 in the statistics exam.", "Oona scored 2,3 in the statistics exam."),
        ("The greenhouse stays at 24°C.", "The greenhouse stays at 75°F."),
        ("Oona's fever peaked at 38.5 °C.", "Oona's fever peaked at 101.3 degrees Fahrenheit."),
        ("Oona cycles on weekends.", "Oona cycles on Saturdays and Sundays."),
        # A spoken clock time ending the text; a weekday abbreviation before a day part.
        ("Standup is at 9:30.", "Standup is at half past nine."),
        ("Choir meets on Saturday evenings.", "Choir: Sat evenings, St Mark's hall"),
        # A date with a year whose day and month either order allows.
        ("Oona's visa expires on 3/4/2027.", "Oona's visa expires on 4 March 2027."),
        ("Oona's visa expires on 3/4/2027.", "Oona's visa expires on April 3, 2027."),
        # Half a unit with no article: "a half-hour", "a half mile".
        ("Oona takes a 30-min walk after lunch.", "Oona takes a half-hour walk after lunch."),
        ("Oona signed a half-year lease.", "Oona signed a 6-month lease."),
        # "first" closing its clause is "beforehand", no number.
        (
            "Oona wants the summary first, then the details.",
            "Oona wants the summary before the details.",
        ),
        ("Plans should be run past Kofi first.", "Plans should be run past Kofi beforehand."),
    ],
)
def test_equal_amounts_in_other_forms_pass(existing: str, new: str) -> None:
    assert check_pair(existing, new) is None
    assert check_pair(new, existing) is None


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Feed the fish every 2 hours.", "Feed the fish every 2 days."),
        ("The trial lasts 36 hours.", "The trial lasts two days."),
        ("The trial lasts 30 days.", "The trial lasts a month."),
        ("The ferry ride takes 40 minutes.", "The ferry ride takes 40 hours."),
        ("The trail is 5 km long.", "The trail is 5 m long."),
        ("Choir practice is every Tuesday.", "Choir practice is every other Tuesday."),
        ("Choir practice is every Tuesday.", "Choir practice is every second Tuesday."),
        # The same forms with another value.
        (
            "Brightline pays invoices 2-3 weeks late.",
            "Brightline pays invoices 14 to 28 days late.",
        ),
        ("Brightline pays invoices 2-3 weeks late.", "Brightline pays invoices 2-3 days late."),
        ("Oona got a 2.3 in the statistics exam.", "Oona scored 2,7 in the statistics exam."),
        ("The greenhouse stays at 24°C.", "The greenhouse stays at 72°F."),
        ("The freezer runs at -18°C.", "The freezer runs at 64°F."),
        ("Oona cycles on weekends.", "Oona cycles on Saturdays."),
        ("Standup is at 9:30.", "Standup is at half past ten."),
        ("Choir meets on Sunday evenings.", "Choir: Sat evenings, St Mark's hall"),
        ("Oona takes a half-hour walk after lunch.", "Oona takes a 45-minute walk after lunch."),
        ("Oona's visa expires on 3/4/2027.", "Oona's visa expires on 5 March 2027."),
        ("Oona's visa expires on 3/4/2027.", "Oona's visa expires on 4 March 2028."),
        # A half day off work is no 12 hours.
        ("Oona takes a half day off on Fridays.", "Oona takes 12 hours off on Fridays."),
        # A "first" that ranks stays a number.
        ("Kofi finished first.", "Kofi finished."),
        ("Kofi came first in the relay.", "Kofi came in the relay."),
        ("Kofi is the first engineer on the team.", "Kofi is an engineer on the team."),
        ("The probe pings the server every second.", "The probe pings the server every minute."),
        ("The lease ends on 2027-03-04.", "The lease ends on 2027-04-03."),
        ("The sauna session lasts half an hour.", "The sauna session lasts 3 hours."),
        ("Nadia runs 5 km every morning.", "Nadia runs 5 miles every morning."),
        ("The parcel weighs 2 kg.", "The parcel weighs 2 lbs."),
        # rates of one unit that differ
        ("The API allows 100 requests per minute.", "The API allows 100 requests per second."),
        ("Oona waters the ferns daily.", "Oona waters the ferns weekly."),
        ("Oona visits her aunt every year.", "Oona visits her aunt every month."),
        ("Oona takes a day off every month.", "Oona takes a day off every week."),
        # an amount with no number differs from the unit alone
        ("The sauna session lasts half an hour.", "The sauna session lasts an hour."),
        ("The drive takes an hour and a half.", "The drive takes an hour."),
        ("The drive takes an hour and a half.", "The drive takes two hours."),
        ("The visa lasts two and a half years.", "The visa lasts two years."),
        (
            "The public API's p99 latency SLO is 0.3 seconds.",
            "The public API has a p99 latency SLO of 30 ms.",
        ),
        ("Standup lasts 15 minutes.", "Standup lasts three quarters of an hour."),
        ("Standup lasts 45 minutes.", "Standup lasts a quarter of an hour."),
        ("Flush the water heater every 6 months.", "Flush the water heater every year."),
        ("Water the ferns every 5 days.", "Water the ferns every week."),
        # A rate of one unit only makes amounts equal: daily is not weekly, and
        # a rate is not a time ago.
        ("User trains 7 days a week.", "User trains every week."),
        ("User visits Rome every year.", "User visited Rome 12 months ago."),
    ],
)
def test_different_amounts_veto(existing: str, new: str) -> None:
    for a, b in ((existing, new), (new, existing)):
        veto = check_pair(a, b)
        assert veto is not None, (a, b)
        assert veto.guard is GuardName.NUMBERS


@pytest.mark.parametrize(
    ("text", "rates", "rated"),
    [
        ("flush it every year", ["12 months"], []),
        ("twice a week", ["7 days"], []),
        ("billed monthly, checked each day", ["1 months", "1 days"], []),
        ("every 12 months", [], ["12 months"]),
        ("runs 5 km per hour", ["60 minutes"], []),
        ("waited 5 km and a m", [], []),  # single letters are no units without digits
    ],
)
def test_rates_of_one_unit_and_rated_amounts(text: str, rates: list[str], rated: list[str]) -> None:
    reading = read_units(text)
    assert list(reading.rates) == rates
    assert [amount.base for amount in reading.amounts if amount.rate] == rated


# --- currencies ---


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("freelances at $95 per hour", {"$"}),
        ("freelances at \u20ac95 per hour", {"eur"}),
        ("a budget of 40k EUR", {"eur"}),
        ("a budget of EUR 40,000", {"eur"}),
        ("pays 4,800 dollars annually", {"$"}),
        ("costs forty euros", {"eur"}),
        ("a \u00a3250 deposit", {"gbp"}),
        ("Rs. 500 a month", {"inr"}),
        ("US$5 here and C$7 there", {"usd", "cad"}),
        ("costs 5 USD", {"usd"}),
        ("costs 5 CHF", {"chf"}),
        ("has prices in EUR", set()),  # no number next to it
        ("a dollar for luck", set()),
        ("shipped 1,200 pounds of flour", set()),  # a weight
        ("has 3 cats", set()),
    ],
)
def test_currencies_next_to_a_number(text: str, expected: set[str]) -> None:
    assert currencies(text) == expected


def test_a_dollar_sign_is_any_dollar() -> None:
    assert same_currencies(frozenset({"$"}), frozenset({"cad"}))
    assert same_currencies(frozenset({"usd"}), frozenset({"$"}))
    assert not same_currencies(frozenset({"usd"}), frozenset({"cad"}))
    assert not same_currencies(frozenset({"$"}), frozenset({"eur"}))
    assert not same_currencies(frozenset({"$"}), frozenset({"$", "eur"}))


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        (
            "User pays $4,800 a year for insurance.",
            "User pays 4,800 dollars annually for insurance.",
        ),
        ("The project has a budget of 40k EUR.", "The project has a budget of \u20ac40,000."),
        ("User's budget is $5.", "User's budget is 5."),  # a currency on one side only
        ("The fee is $5.", "The fee is 5 CAD."),
        ("The fee is 50 euros.", "The fee is \u20ac50."),
        ("User owes Tom 50 euros.", "User owes Tom EUR 50."),
    ],
)
def test_same_currency_in_other_forms_passes(existing: str, new: str) -> None:
    assert check_pair(existing, new) is None
    assert check_pair(new, existing) is None


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        (
            "User freelances at $95 per hour for DevOps consulting.",
            "User freelances at \u20ac95 per hour for DevOps consulting.",
        ),
        ("The fee is 100 USD.", "The fee is 100 CAD."),
        ("The deposit is \u00a3250.", "The deposit is 250 euros."),
        ("The deposit is 250 francs.", "The deposit is 250 rupees."),
    ],
)
def test_changed_currency_vetoes(existing: str, new: str) -> None:
    for a, b in ((existing, new), (new, existing)):
        veto = check_pair(a, b)
        assert veto is not None, (a, b)
        assert veto.guard.value == "numbers"
        assert veto.detail.startswith("currency differs: ")


def test_currency_detail_names_the_currencies() -> None:
    veto = check_pair("User freelances at $95 per hour.", "User freelances at \u20ac95 per hour.")
    assert veto is not None
    assert veto.detail == "currency differs: {'$'} vs {'eur'}"
    codes = check_pair("The fee is 100 USD.", "The fee is 100 CAD.")
    assert codes is not None
    assert codes.detail == "currency differs: {'usd'} vs {'cad'}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # (kind, value per base unit, dimension): a day is 1,440 minutes
        ("Dentist every 6 months", [("count", Fraction(1, 6), "months")]),
        ("Sees the dentist twice a year", [("count", Fraction(1, 6), "months")]),
        ("Runs 5x/week", [("count", Fraction(5, 7 * 1440), "minutes")]),
        ("Runs three times weekly", [("count", Fraction(3, 7 * 1440), "minutes")]),
        ("Waters the ferns every other day", [("count", Fraction(1, 2 * 1440), "minutes")]),
        ("Rent is reviewed quarterly", [("count", Fraction(1, 3), "months")]),
        ("Insurance is $38/month", [("amount", Fraction(38), "months")]),
        ("Insurance is $456 a year", [("amount", Fraction(38), "months")]),
        ("Salary 120k per year", [("amount", Fraction(10_000), "months")]),
        # a bare "3/week" may be a date or a score: no amount is named
        ("Gym 3/week", []),
        ("Meets every Monday", []),
        ("Lives in Porto", []),
    ],
)
def test_frequencies_per_base_unit(text: str, expected: list[tuple[str, Fraction, str]]) -> None:
    assert [(f.kind, f.value, f.dimension) for f in frequencies(text)] == expected


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Dentist cleaning every 6 months", "Dentist cleaning twice a year"),
        ("Runs 5x/week", "Runs 5 times a week"),
        ("Standup 3x a week at 9:30", "Standup three times a week at 9:30"),
        ("Home insurance costs $38 a month", "Home insurance costs $456 a year"),
        ("Waters the plants every other day", "Waters the plants every two days"),
    ],
)
def test_equal_frequencies_written_otherwise_pass(existing: str, new: str) -> None:
    assert check_pair(existing, new) is None
    assert check_pair(new, existing) is None


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Home insurance with Lemonade, $38/month", "Home insurance with Lemonade, $38/quarter"),
        ("Pays $1,200 rent monthly", "Pays $1,200 rent quarterly"),
        ("Dentist cleaning every 6 months", "Dentist cleaning once a year"),
        ("Runs 5x/week", "Runs 5x/month"),
        ("Standup 3x a week at 9:30", "Standup three times a week at 10:30"),
        ("Home insurance costs $38 a month", "Home insurance costs $38 a year"),
    ],
)
def test_changed_frequencies_veto(existing: str, new: str) -> None:
    for a, b in ((existing, new), (new, existing)):
        veto = check_pair(a, b)
        assert veto is not None
        assert veto.guard is GuardName.NUMBERS
