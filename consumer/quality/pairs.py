"""The labelled-pairs format: one JSON object per line.

```
{"existing": "User lives in Paris", "new": "User's home is in Paris",
 "label": "duplicate", "namespace": "biography", "category": "paraphrase"}
```

- `existing`: the memory already stored; `new`: the incoming memory (both
  non-empty strings, also after normalisation);
- `label`: `duplicate` (the same fact: skipping or merging `new` loses nothing)
  or `distinct` (a different fact: it must be accepted);
- `namespace` (optional): whose bands decide the pair; absent or null means the
  default bands. Same rules as event namespaces (`[a-z0-9_-]`, 1-64 chars);
- `category` (optional): a free-form kind for the per-category report.
- `group` (optional): the template or base fact the pair was written from; pairs
  of one group are variants of one fact and always share a split;
- `split` (optional): `train`, `dev` or `test`, fixed by the group
  (`split_of(group)`): a pair cannot move to another split without the file
  failing to load. Tune on train and dev only; test is frozen.

Other keys (`id`, `score`, ...) are ignored, so the public sets under
`shared/datasets` load as they are. Blank lines are skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from consumer.domain.normalize import normalize_content
from consumer.errors import PermanentError
from schemas.events import NAMESPACE_PATTERN

__all__ = [
    "DISTINCT",
    "DUPLICATE",
    "SPLITS",
    "LabelledPair",
    "PairFileError",
    "load_pairs",
    "parse_pair",
    "parse_pairs",
    "split_of",
]

DUPLICATE: Final = "duplicate"
DISTINCT: Final = "distinct"
SPLITS: Final = ("train", "dev", "test")
# Percent of groups per split: train 60, dev 20, test 20.
_SPLIT_BOUNDS: Final = ((60, "train"), (80, "dev"), (100, "test"))


def split_of(group: str) -> str:
    """The split a group belongs to, from its name alone (a stable hash): no
    choice made while tuning can move a pair into or out of the frozen test."""
    bucket = int(hashlib.sha256(group.encode()).hexdigest()[:8], 16) % 100
    return next(name for bound, name in _SPLIT_BOUNDS if bucket < bound)


_NAMESPACE_RE: Final = re.compile(NAMESPACE_PATTERN)
_MAX_NAMESPACE: Final = 64


class PairFileError(PermanentError):
    """A labelled-pairs file is missing or invalid; the message names the line."""


@dataclass(frozen=True, slots=True)
class LabelledPair:
    existing: str
    new: str
    duplicate: bool
    namespace: str | None = None
    category: str | None = None
    line: int = 0
    group: str | None = None
    split: str | None = None

    @property
    def label(self) -> str:
        return DUPLICATE if self.duplicate else DISTINCT


def _text(obj: dict[str, object], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ValueError(f"`{key}` must be a string, got {type(value).__name__}")
    if not normalize_content(value):
        raise ValueError(f"`{key}` is empty after normalisation")
    return value


def _optional(obj: dict[str, object], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"`{key}` must be a string or null, got {type(value).__name__}")
    return value


def parse_pair(obj: object, line: int = 0) -> LabelledPair:
    """One decoded JSON value as a pair; ValueError says what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    existing = _text(obj, "existing")
    new = _text(obj, "new")
    label = obj.get("label")
    if label not in (DUPLICATE, DISTINCT):
        raise ValueError(f"`label` must be {DUPLICATE!r} or {DISTINCT!r}, got {label!r}")
    namespace = _optional(obj, "namespace")
    if namespace is not None and (
        len(namespace) > _MAX_NAMESPACE or not _NAMESPACE_RE.match(namespace)
    ):
        raise ValueError(f"`namespace` {namespace!r} must match {NAMESPACE_PATTERN} (<= 64 chars)")
    category = _optional(obj, "category")
    group = _optional(obj, "group") or None
    split = _optional(obj, "split") or None
    if split is not None:
        if split not in SPLITS:
            raise ValueError(f"`split` must be one of {', '.join(SPLITS)}, got {split!r}")
        if group is None:
            raise ValueError("`split` needs the pair's `group` (the split follows the group)")
        if split != split_of(group):
            raise ValueError(
                f"group {group!r} belongs to split {split_of(group)!r}, not {split!r}: "
                "splits are fixed by the group (consumer.quality.pairs.split_of)"
            )
    return LabelledPair(
        existing, new, label == DUPLICATE, namespace, category or None, line, group, split
    )


def parse_pairs(lines: Iterable[str], *, source: str = "<pairs>") -> list[LabelledPair]:
    """Pairs from JSON Lines; PairFileError names `source` and the bad line (1-based)."""
    pairs: list[LabelledPair] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PairFileError(f"{source}:{number}: invalid JSON: {exc.msg}") from exc
        try:
            pairs.append(parse_pair(obj, number))
        except ValueError as exc:
            raise PairFileError(f"{source}:{number}: {exc}") from exc
    if not pairs:
        raise PairFileError(f"{source}: no labelled pairs (expected one JSON object per line)")
    return pairs


def _decoded(data: bytes, source: str) -> list[str]:
    lines: list[str] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise PairFileError(f"{source}:{number}: not UTF-8 text ({exc.reason})") from exc
    return lines


def load_pairs(path: Path) -> list[LabelledPair]:
    """Read a labelled-pairs file; PairFileError when it is missing or invalid."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise PairFileError(
            f"{path}: no such file (pass a JSON Lines file of labelled pairs)"
        ) from exc
    except IsADirectoryError as exc:
        raise PairFileError(f"{path}: is a directory, not a JSON Lines file") from exc
    except OSError as exc:
        raise PairFileError(f"{path}: cannot read: {exc.strerror}") from exc
    return parse_pairs(_decoded(data, str(path)), source=str(path))
