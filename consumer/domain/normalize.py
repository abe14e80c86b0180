"""Normalisation, content hashes and deterministic ids.

Two texts that differ only in case, Unicode composition, spacing or surrounding
punctuation are the same memory: they get one hash and therefore one point id.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from typing import Final

# Fixed namespaces: changing either would re-key every stored memory and decision.
MEMORY_ID_NAMESPACE: Final = uuid.UUID("6f1c2a9e-4d0b-5c7e-9a51-3b8f0e2d7c41")
DECISION_ID_NAMESPACE: Final = uuid.UUID("0b7d3e52-91a4-5f6c-8e2d-7a1c4b9f3e60")

_WHITESPACE = re.compile(r"\s+")


# Only marks that frame a sentence are noise at an edge: sentence punctuation,
# quotes and brackets, and list bullets. Symbols carry meaning there ("C#",
# "C++", "50%", "-5", emoji) and stay.
_SENTENCE_PUNCTUATION: Final = frozenset(".,;:!?\u2026\u00bf\u00a1")
_QUOTES: Final = frozenset("\"'`")
_BULLETS: Final = frozenset("-*\u2022\u00b7\u2013\u2014")


def _is_trimmable(char: str) -> bool:
    if char == " " or char in _SENTENCE_PUNCTUATION or char in _QUOTES:
        return True
    # Ps/Pe: brackets; Pi/Pf: typographic quotes.
    return unicodedata.category(char) in {"Ps", "Pe", "Pi", "Pf"}


def _strip_bullet(text: str) -> str:
    if text in _BULLETS:
        return ""
    if len(text) > 1 and text[0] in _BULLETS and text[1] == " ":
        return text[2:]
    return text


def normalize_content(text: str) -> str:
    """NFC, casefold, collapse whitespace, trim framing punctuation at both edges
    (sentence punctuation, quotes, brackets, a leading list bullet)."""
    folded = unicodedata.normalize("NFC", text).casefold()
    # casefold can produce decomposed sequences (e.g. "İ"); recompose.
    folded = unicodedata.normalize("NFC", folded)
    collapsed = _WHITESPACE.sub(" ", folded).strip()
    previous = None
    while previous != collapsed:
        previous = collapsed
        collapsed = _strip_bullet(collapsed)
        start, end = 0, len(collapsed)
        while start < end and _is_trimmable(collapsed[start]):
            start += 1
        while end > start and _is_trimmable(collapsed[end - 1]):
            end -= 1
        collapsed = collapsed[start:end]
    return collapsed


# Words for `spelled_alike`: letters and digits, an inner apostrophe kept
# ("user's"), and every symbol but sentence punctuation ("$", "€", "/", "%");
# hyphens are dropped first ("co-worker" / "coworker").
_SPELLING_WORD: Final = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*|[^\w\s.,;:!?'\"\u2019()]")
# A one-edit slip only counts in words this long: shorter ones are often other
# words ("lives" / "lived", "angle" / "angel").
_SLIP_MIN_LENGTH: Final = 6


def spelled_alike(a: str, b: str) -> bool:
    """The same words and symbols in the same order but for case, hyphens and one
    slip of the keyboard (a letter added, dropped, changed or two swapped) in one
    lowercase word of six letters or more: "golden retriever" / "golden retreiver", "coworker" /
    "co-worker", "Sunday" / "sunday". A capitalised word (a name) or a number
    must be written the same ("Dr. Reyes" / "Dr. Reyna", "Maria" / "Marie")."""
    left = _SPELLING_WORD.findall(unicodedata.normalize("NFC", a).replace("-", ""))
    right = _SPELLING_WORD.findall(unicodedata.normalize("NFC", b).replace("-", ""))
    if not left or len(left) != len(right):
        return False
    slips = 0
    for x, y in zip(left, right, strict=True):
        if x.casefold() == y.casefold():
            continue
        slips += 1
        lowercase_words = x.isalpha() and y.isalpha() and x.islower() and y.islower()
        if not lowercase_words or min(len(x), len(y)) < _SLIP_MIN_LENGTH or not one_slip(x, y):
            return False
    # One slip: two words off is a rewording, not a typo.
    return slips <= 1


def one_slip(x: str, y: str) -> bool:
    """One letter added, dropped or changed, or two adjacent letters swapped."""
    if len(x) > len(y):
        x, y = y, x
    if len(y) - len(x) > 1:
        return False
    start = 0
    while start < len(x) and x[start] == y[start]:
        start += 1
    if len(x) < len(y):
        return x[start:] == y[start + 1 :]
    rest = start + 1
    if x[rest:] == y[rest:]:
        return True  # one letter changed
    swapped = x[start : start + 2] == y[start : start + 2][::-1]
    return swapped and x[start + 2 :] == y[start + 2 :]


def content_hash(normalized: str) -> str:
    """Hex SHA-256 of normalised text."""
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


def uuid5_text(namespace: uuid.UUID, name: str) -> str:
    """`str(uuid.uuid5(namespace, name))` without building a `UUID` (two per event
    on the hot path, where the object cost more than the hash)."""
    # SHA-1 is what UUIDv5 is defined on (an id, not a security measure).
    sha1 = hashlib.sha1(namespace.bytes + name.encode(), usedforsecurity=False)
    digest = bytearray(sha1.digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def memory_id_for(tenant_id: str, namespace: str, hash_hex: str) -> str:
    """UUIDv5 of the scope and the content hash: concurrent exact inserts converge."""
    return uuid5_text(MEMORY_ID_NAMESPACE, f"{tenant_id}\x1f{namespace}\x1f{hash_hex}")


def decision_id_for(event_id: str) -> str:
    """UUIDv5 of the event id: a replayed event keeps its decision id."""
    return uuid5_text(DECISION_ID_NAMESPACE, event_id)


# The user is named in the first person ("I", "my", "me", "I'm") or the third ("the
# user", "User's"). Pronouns are a closed class, so one pattern covers them; the
# embedding model is uncased, so "user" and "User" are the same tokens.
_APOSTROPHE: Final = "['\u2019]"
_SUBJECT_FORMS: Final = {
    "i'm": "user is",
    "i am": "user is",
    "i've": "user has",
    "i'd": "user would",
    "i'll": "user will",
    "i": "user",
    "my": "user's",
    "me": "user",
    "myself": "user",
    "the user": "user",
}
_SUBJECT: Final = re.compile(
    rf"\b(?:i{_APOSTROPHE}(?:m|ve|d|ll)|i am|my|myself|me|the user"
    # A lone "i" only before a word: not "World War I" or "Part I".
    r"|i(?= [^\W\d_]))\b",
    re.IGNORECASE,
)


def _subject(match: re.Match[str]) -> str:
    found = re.sub(_APOSTROPHE, "'", match.group(0).lower())
    return _SUBJECT_FORMS[found]


def subject_form(text: str) -> str:
    """The text with the user named one way, as the embedder sees it: "I like
    climbing" and "User likes climbing" embed alike. Hashes and stored texts keep
    the original words; only similarity is computed on this form."""
    return _SUBJECT.sub(_subject, text)
