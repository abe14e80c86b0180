"""Fault injection around the group: a consumer that stalls mid-batch.

With `MEMDEDUP_CHAOS__STALL_FILE` set, a consumer about to append a batch to the
changelog blocks its whole event loop (no heartbeats, no fetches), as a long
garbage-collection pause or a frozen VM would, for as long as that file exists.
It first writes `<file>.reached`, so a drill or test knows the stall began and
can let the group evict the consumer before removing the file.
"""

from __future__ import annotations

import time
from pathlib import Path

from consumer.ports import MembershipFence


class StallSwitch:
    """A membership fence that first stalls the event loop while the file exists."""

    def __init__(self, inner: MembershipFence, *, stall_file: Path) -> None:
        self._inner = inner
        self._stall_file = stall_file

    @property
    def reached_file(self) -> Path:
        return self._stall_file.with_name(self._stall_file.name + ".reached")

    async def ensure(self) -> int | None:
        if self._stall_file.exists():
            self.reached_file.touch()
            while self._stall_file.exists():
                time.sleep(0.05)  # noqa: ASYNC251 (blocking on purpose: the stall is the point)
        return await self._inner.ensure()

    async def confirm(self, generation: int | None) -> None:
        await self._inner.confirm(generation)
