"""The package keeps the shape docs/architecture.md describes: layers that only
import downwards, no import circle, no long module without a reason."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "consumer"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LONG_MODULE_LINES = 500


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("consumer", exclude_type_checking_imports=True)


def test_layer_contracts_hold() -> None:
    # The command line is import-linter's public interface.
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:]


def test_no_import_circle(graph: grimp.ImportGraph) -> None:
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                circles.append(" -> ".join((importer, *back)))
    assert circles == []


def test_long_modules_say_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") <= LONG_MODULE_LINES:
            continue
        docstring = re.match(r'\s*(?:"""(.*?)""")', text, re.S)
        if docstring is None or "One module because" not in docstring.group(1):
            unexplained.append(str(path.relative_to(ROOT)))
    assert unexplained == []


def test_architecture_page_names_every_module() -> None:
    page = ARCHITECTURE.read_text()
    missing = [
        str(path.relative_to(ROOT))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in {"__init__.py", "__main__.py"}
        and f"`{path.relative_to(ROOT)}`" not in page
    ]
    assert missing == []
