"""bench/skip_variants.py end to end on a few texts with the real models and
parser: the variants come from train and dev texts only, and a changed
condition in the skip band is not skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.pair_rows import write_duplicates
from tests.scripts import import_script

pytestmark = pytest.mark.integration


def _bench() -> Any:
    return import_script("skip_variants", "bench")


def _figures(bench: Any, pairs: Path, *mode: str) -> dict[str, Any]:
    """The bench's JSON figures on the pair files in `pairs`."""
    out = pairs.parent / "figures.json"
    argv = ["--pairs-dir", str(pairs), *mode, "--show", "0", "--json", str(out)]
    assert bench.main(argv) == 0
    figures: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return figures


def test_variants_of_tuning_texts_change_one_small_word(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    write_duplicates(
        pairs / "a.jsonl",
        [
            ("Walks to work if it is dry", "User walks to work if it is dry", "train"),
            ("Rides the tram or the bus", "Takes the tram or the bus", "dev"),
            ("Swims if the pool is open", "A test text the bench must not read.", "test"),
        ],
    )
    bench = _bench()
    texts = bench.tuning_texts(pairs)
    assert "Swims if the pool is open" not in texts
    assert len(texts) == 4
    found = bench.variants(texts, 100, 0)
    assert ("Walks to work if it is dry", "Walks to work unless it is dry", "if -> unless") in found
    assert ("Rides the tram or the bus", "Rides the tram and the bus", "or -> and") in found
    assert all(text in texts for text, _, _ in found)

    figures = _figures(bench, pairs)
    assert figures["variants"] == len(found)
    assert sum(figures["outcomes"].values()) == figures["in_skip_band"]
    # "if" / "unless" turns the condition around: in the skip band, never skipped.
    condition = figures["band_by_change"]["if -> unless"]
    assert sum(condition.values()) >= 1
    assert "skipped" not in condition


def test_trades_swap_two_words_of_one_part_of_speech_and_keep_apart_what_traded(
    tmp_path: Path,
) -> None:
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    write_duplicates(
        pairs / "a.jsonl",
        [
            (
                "Used to live in Oslo, now lives in Bergen",
                "Lived in Oslo before; lives in Bergen now",
                "train",
            ),
            ("Swims in Leeds on Mondays", "A test text the bench must not read.", "test"),
        ],
    )
    bench = _bench()
    texts = bench.tuning_texts(pairs)
    found = bench.trades(texts, 100, 0)
    assert (
        "Used to live in Oslo, now lives in Bergen",
        "Used to live in Bergen, now lives in Oslo",
        "PROPN",
    ) in found
    # never two words side by side, nor from a test text
    assert all(text in texts and text != variant for text, variant, _ in found)
    assert not any("Leeds" in variant for _, variant, _ in found)

    figures = _figures(bench, pairs, "--trades")
    assert figures["trades"] is True
    assert figures["variants"] == len(found)
    # the cities traded between what was and what is: in the merge band, kept apart
    traded = figures["band_by_change"]["PROPN"]
    assert traded.get("accepted", 0) >= 1
    assert "merged" not in traded
    assert "skipped" not in traded


def test_frames_put_the_main_verb_under_a_frame_and_keep_apart_the_act_done(
    tmp_path: Path,
) -> None:
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    done = [
        "The team migrated the build to GitHub Actions in May",
        "Lena repainted the garden fence last weekend",
        "User sold the old Volvo to a neighbour in March",
    ]
    write_duplicates(
        pairs / "a.jsonl",
        [
            (done[0], done[1], "train"),
            (done[2], "User does not drink coffee", "dev"),
            ("The fence was repainted by Lena", "Swims in Leeds on Mondays", "test"),
        ],
    )
    bench = _bench()
    found = bench.framed(bench.tuning_texts(pairs), 100, 0)
    # a negated main verb is left as it is, and a test text is never read
    assert sorted(text for text, _, _ in found) == sorted(done)
    for _, variant, frame in found:
        assert frame in bench.FRAMES
        assert f" {frame} " in f" {variant[0].lower()}{variant[1:]}"
    assert any(
        variant.endswith("migrate the build to GitHub Actions in May") for _, variant, _ in found
    )

    figures = _figures(bench, pairs, "--frames")
    assert figures["frames"] is True
    assert figures["variants"] == len(found)
    # an act told as done, against its frame (a plan, a wish, a decision): kept apart
    assert figures["outcomes"].get("accepted", 0) >= 1
    assert set(figures["outcomes"]) == {"accepted"}
