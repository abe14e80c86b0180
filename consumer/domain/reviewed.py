"""Pairs of texts a reviewer separated (a reversed skip or merge).

The engine never skips or merges such a pair again: it is vetoed like a guard
veto (`reviewed_pair`). Pairs are kept per partition, loaded from the store the
first time a partition is decided and added to when this consumer applies a
reversal; the partition's owner is the only one that applies reviews to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from consumer.domain.models import Scope

PairKey = tuple[str, str, frozenset[str]]


class ReviewedPairs:
    def __init__(self) -> None:
        self._pairs: set[PairKey] = set()
        self._loaded: set[int] = set()

    def is_loaded(self, partition: int) -> bool:
        return partition in self._loaded

    def load(self, partition: int, pairs: Iterable[tuple[Scope, str, str]]) -> None:
        for scope, first_hash, second_hash in pairs:
            self.add(scope, first_hash, second_hash)
        self._loaded.add(partition)

    def forget(self, partition: int) -> None:
        """Load again next time (the partition may come back with other reviews)."""
        self._loaded.discard(partition)

    def add(self, scope: Scope, first_hash: str, second_hash: str) -> None:
        if first_hash != second_hash:
            self._pairs.add(
                (scope.tenant_id, scope.namespace, frozenset((first_hash, second_hash)))
            )

    def separated(self, scope: Scope, first_hash: str, second_hash: str) -> bool:
        if not self._pairs:
            return False
        key = (scope.tenant_id, scope.namespace, frozenset((first_hash, second_hash)))
        return key in self._pairs

    def __len__(self) -> int:
        return len(self._pairs)
