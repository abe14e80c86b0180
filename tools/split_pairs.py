"""Writes each labelled pair's `split` (train / dev / test) from its `group`.

Usage::

    python tools/split_pairs.py bench/pairs/memory/*.jsonl [--check]

The split is a function of the group's name alone (consumer.quality.pairs.split_of),
so it is fixed before any tuning and cannot be chosen afterwards; loading a file
whose `split` disagrees with its group fails. Run it once after writing new pairs;
`--check` writes nothing and exits 1 when a file lacks or misplaces a split.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from consumer.quality.pairs import split_of  # noqa: E402


def with_splits(path: Path) -> tuple[list[str], Counter[str]]:
    lines: list[str] = []
    counts: Counter[str] = Counter()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        row = json.loads(raw)
        group = row.get("group")
        if not isinstance(group, str) or not group:
            raise SystemExit(f"{path}:{number}: a pair needs a `group` to be split")
        row["split"] = split_of(group)
        counts[row["split"]] += 1
        lines.append(json.dumps(row, ensure_ascii=False))
    return lines, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = False
    for path in args.files:
        lines, counts = with_splits(path)
        text = "\n".join(lines) + "\n"
        if path.read_text(encoding="utf-8") != text:
            stale = True
            if not args.check:
                path.write_text(text, encoding="utf-8")
        print(
            f"{path}: " + ", ".join(f"{name} {counts[name]}" for name in ("train", "dev", "test"))
        )
    if args.check and stale:
        print("splits missing or stale: run tools/split_pairs.py on these files", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
