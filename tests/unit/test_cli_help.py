"""Every `memdedup` subcommand explains itself in `memdedup SUB --help`."""

from __future__ import annotations

import argparse

import pytest

from consumer.cli.main import build_parser


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def help_text(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([name, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_there_are_subcommands_to_check() -> None:
    assert {"run", "produce", "log", "tail"} <= set(subparsers())


@pytest.mark.parametrize("name", sorted(subparsers()))
def test_every_subcommand_help_shows_a_description(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    description = subparsers()[name].description
    assert description, f"`memdedup {name}` has no description="
    # A sentence or two: what it does and when to use it.
    assert len(description.split()) >= 12, description
    assert description.rstrip().endswith((".", ")")), description
    # argparse rewraps the text: compare word by word.
    assert " ".join(description.split()) in " ".join(help_text(name, capsys).split())


@pytest.mark.parametrize("name", ["produce", "tail"])
def test_every_argument_has_help(name: str) -> None:
    parser = subparsers()[name]
    missing = [
        action.dest
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert not missing, f"`memdedup {name}` arguments without help=: {missing}"
