"""Normalisation, content hashes and deterministic ids."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid

import pytest

from consumer.domain.normalize import (
    DECISION_ID_NAMESPACE,
    MEMORY_ID_NAMESPACE,
    content_hash,
    decision_id_for,
    memory_id_for,
    normalize_content,
    spelled_alike,
    uuid5_text,
)

HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello World", "hello world"),
        ("Straße", "strasse"),
        ("STRASSE", "strasse"),
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),
        ("a\tb\nc\r\nd", "a b c d"),
        ("a\u00a0b", "a b"),
        ("  lots   of \t\n  space  ", "lots of space"),
        ("Hello, world!", "hello, world"),
        ("...hello...", "hello"),
        ("\u2026hello\u2026", "hello"),
        ("\u00bfqu\u00e9?", "qu\u00e9"),
        ("\u00abquoted\u00bb", "quoted"),
        ('"quoted"', "quoted"),
        ("(aside)", "aside"),
        ("- bullet item", "bullet item"),
        ("e.g. this, or that; fine", "e.g. this, or that; fine"),
        ("U.S.", "u.s"),
        ("well-known o'clock", "well-known o'clock"),
        ("5.", "5"),
        ("50%.", "50%"),
        ("", ""),
        ("   ", ""),
        ("... !? ;", ""),
    ],
)
def test_normalize_content(raw: str, expected: str) -> None:
    assert normalize_content(raw) == expected


@pytest.mark.parametrize("word", ["café", "Ångström", "naïve résumé", "한국어"])
def test_nfc_and_nfd_forms_normalise_equal(word: str) -> None:
    nfc = unicodedata.normalize("NFC", word)
    nfd = unicodedata.normalize("NFD", word)
    assert nfc != nfd
    assert normalize_content(nfc) == normalize_content(nfd)
    assert normalize_content(nfd) == unicodedata.normalize("NFC", normalize_content(nfd))


@pytest.mark.parametrize(
    "variant",
    [
        "straße",
        "STRASSE",
        "Strasse.",
        "  strasse  ",
        "\tStrasse!\n",
        "\u00a0STRASSE\u00a0",
    ],
)
def test_casefold_variants_share_one_normal_form(variant: str) -> None:
    assert normalize_content(variant) == "strasse"


@pytest.mark.parametrize("marked", ["-5", "50%", "#7", "$5", "\u20ac5", "+5", "5\u00b0"])
def test_marks_touching_digits_are_kept(marked: str) -> None:
    assert normalize_content(marked) == marked
    assert normalize_content(marked) != normalize_content("5")
    assert content_hash(normalize_content(marked)) != content_hash(normalize_content("5"))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Temperature is -5.", "temperature is -5"),
        ("Discount of 50%!", "discount of 50%"),
        ("Ticket #7", "ticket #7"),
        ("$5 budget", "$5 budget"),
        ("Costs $5.", "costs $5"),
    ],
)
def test_marks_touching_digits_survive_inside_sentences(raw: str, expected: str) -> None:
    assert normalize_content(raw) == expected


def test_distinct_numbers_stay_distinct() -> None:
    values = {normalize_content(v) for v in ["5", "-5", "50%", "#7", "$5", "7"]}
    assert len(values) == 6


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # A meaningful trailing/leading symbol on a word must not be dropped: these
        # are different memories, yet normalise (and hash) identically today.
        ("I program in C#", "I program in C"),
        ("I program in C++", "I program in C"),
        ("User reacted 👍", "User reacted 👎"),
    ],
)
def test_meaningful_edge_symbols_are_not_collapsed(left: str, right: str) -> None:
    assert normalize_content(left) != normalize_content(right)


def test_normalize_is_idempotent() -> None:
    for raw in ["  Hello,   WORLD!! ", "Straße\u00a0-5", "\u00ab50%\u00bb", "(aside) x."]:
        once = normalize_content(raw)
        assert normalize_content(once) == once


# --- content_hash -------------------------------------------------------------


def test_content_hash_is_hex_sha256_of_utf8() -> None:
    text = "the user prefers dark mode"
    digest = content_hash(text)
    assert HEX64.match(digest)
    assert digest == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert content_hash("straße") == hashlib.sha256("straße".encode()).hexdigest()


def test_content_hash_equal_for_variants() -> None:
    variants = [
        "The user prefers dark mode.",
        "THE USER  prefers\tdark mode",
        " the user prefers dark mode!",
    ]
    hashes = {content_hash(normalize_content(v)) for v in variants}
    assert len(hashes) == 1


def test_content_hash_differs_for_different_text() -> None:
    assert content_hash("dark mode") != content_hash("light mode")


# --- memory_id_for / decision_id_for -------------------------------------------


def test_memory_id_is_deterministic_uuid5() -> None:
    h = content_hash("x")
    first = memory_id_for("tenant", "ns", h)
    assert first == memory_id_for("tenant", "ns", h)
    parsed = uuid.UUID(first)
    assert parsed.version == 5
    assert str(parsed) == first
    assert first == str(uuid.uuid5(MEMORY_ID_NAMESPACE, f"tenant\x1fns\x1f{h}"))


@pytest.mark.parametrize(
    "other",
    [
        ("tenant-b", "ns", content_hash("x")),
        ("tenant", "other", content_hash("x")),
        ("tenant", "ns", content_hash("y")),
    ],
)
def test_memory_id_differs_across_tenant_namespace_and_hash(other: tuple[str, str, str]) -> None:
    assert memory_id_for("tenant", "ns", content_hash("x")) != memory_id_for(*other)


def test_memory_id_separator_prevents_concatenation_collisions() -> None:
    h = content_hash("x")
    assert memory_id_for("a", "b/c", h) != memory_id_for("a/b", "c", h)
    assert memory_id_for("a", "bc", h) != memory_id_for("ab", "c", h)
    assert memory_id_for("a:b", "c", h) != memory_id_for("a", "b:c", h)


def test_decision_id_is_deterministic_and_distinct_per_event() -> None:
    first = decision_id_for("evt-1")
    assert first == decision_id_for("evt-1")
    assert uuid.UUID(first).version == 5
    assert first == str(uuid.uuid5(DECISION_ID_NAMESPACE, "evt-1"))
    ids = {decision_id_for(f"evt-{i}") for i in range(100)}
    assert len(ids) == 100


def test_decision_and_memory_ids_live_in_different_uuid_namespaces() -> None:
    assert decision_id_for("x") != str(uuid.uuid5(MEMORY_ID_NAMESPACE, "x"))


@pytest.mark.parametrize(
    "name",
    ["", "e-1", "évènement ✓", "x" * 1000, "tenant\x1fns\x1f" + "ab" * 32, "\U0001f600"],
)
@pytest.mark.parametrize(
    "namespace",
    [MEMORY_ID_NAMESPACE, DECISION_ID_NAMESPACE, uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)],
)
def test_uuid5_text_is_the_standard_uuid5(namespace: uuid.UUID, name: str) -> None:
    assert uuid5_text(namespace, name) == str(uuid.uuid5(namespace, name))


@pytest.mark.parametrize(
    ("a", "b", "alike"),
    [
        # one slip of the keyboard in a lowercase word of six letters or more
        ("Has a golden retriever named Biscuit", "has a golden retreiver named Biscuit.", True),
        ("Hates cilantro", "Hates cilatro", True),
        ("Plays tennis with a coworker", "plays tennis with a co-worker", True),
        ("Has a dentist appointment on Sunday", "has a dentist appointment on sunday", True),
        # a name, a number, a symbol, a short word or two slips: not a typo
        ("Dentist: Dr. Reyes", "Dentist: Dr. Reyna", False),
        ("User's sister Maria", "User's sister Marie", False),
        ("Salary is \u20ac72,000 a year", "Salary is \u00a372,000 a year", False),
        ("Pays 40 a month", "Pays 45 a month", False),
        ("User lives in Paris", "User lived in Paris", False),
        ("Likes the retriever and cilantro", "Likes the retreiver and cilatro", False),
        ("Likes tea", "Likes green tea", False),
    ],
)
def test_spelled_alike_is_a_typo_case_or_hyphen_apart(a: str, b: str, alike: bool) -> None:
    assert spelled_alike(a, b) is alike
    assert spelled_alike(b, a) is alike
