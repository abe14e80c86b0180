"""The repository's scripts (bench/, tools/) imported in tests: they are files run
by path, not a package."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def import_script(name: str, folder: str, *also: str) -> Any:
    """`folder/name.py` as a module, with `folder` and the `also` folders (the
    scripts it imports by name) importable while it loads."""
    added = [str(REPO_ROOT / f) for f in (folder, *also)]
    sys.path[:0] = added
    try:
        return importlib.import_module(name)
    finally:
        for path in added:
            sys.path.remove(path)
