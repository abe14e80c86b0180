"""pyproject.toml's license is an SPDX expression (PEP 639), which setuptools
reads without its deprecation warning from 77 on."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_license_is_an_spdx_expression() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    # A license classifier next to an expression is an error for setuptools.
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]


def test_the_build_requires_a_setuptools_that_reads_it() -> None:
    build = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["build-system"]
    [setuptools] = [r for r in map(Requirement, build["requires"]) if r.name == "setuptools"]
    assert not setuptools.specifier.contains("76.9")
    assert setuptools.specifier.contains("77.0.0")
