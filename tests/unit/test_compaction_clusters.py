"""Duplicate clusters of batch compaction: neighbour search, complete linkage,
vetoes and keepers, on synthetic vectors with chosen cosine similarities."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pytest

from consumer.compaction import (
    Cluster,
    ScopeAnalysis,
    analyse_scope,
    guard_pair_veto,
    nearest_neighbours,
)
from consumer.domain.models import MemoryRecord, Scope
from consumer.domain.thresholds import Bands
from schemas import Decision, MergePolicy

from .helpers import FIXED_NOW

DIMENSION = 16
BANDS = Bands(duplicate_threshold=0.95, merge_threshold=0.85)
TENANT, NAMESPACE = "tenant-a", "prefs"


def gram_vectors(gram: Sequence[Sequence[float]], dimension: int = DIMENSION) -> list[list[float]]:
    """Unit vectors whose pairwise cosine similarities are `gram` (which must be
    positive definite with a unit diagonal)."""
    lower = np.linalg.cholesky(np.asarray(gram, dtype=np.float64))
    padded = np.zeros((lower.shape[0], dimension))
    padded[:, : lower.shape[1]] = lower
    return [[float(x) for x in row] for row in padded]


def uniform_gram(size: int, similarity: float) -> list[list[float]]:
    return [[1.0 if i == j else similarity for j in range(size)] for i in range(size)]


def memory(
    memory_id: str,
    vector: list[float] | None,
    *,
    minute: int = 0,
    importance: float = 0.5,
    last_seen_minute: int | None = None,
    content: str | None = None,
    tenant_id: str = TENANT,
    namespace: str = NAMESPACE,
) -> MemoryRecord:
    created = FIXED_NOW + timedelta(minutes=minute)
    return MemoryRecord(
        memory_id=memory_id,
        tenant_id=tenant_id,
        namespace=namespace,
        content=content if content is not None else f"memory {memory_id}",
        content_hash=f"hash-{memory_id}",
        importance=importance,
        topics=[],
        entities=[],
        merged_event_ids=[],
        origin_event_id=f"evt-{memory_id}",
        created_at=created,
        updated_at=created,
        vector=vector,
        first_seen_at=created,
        last_seen_at=(
            None if last_seen_minute is None else FIXED_NOW + timedelta(minutes=last_seen_minute)
        ),
    )


def memories_from(
    gram: Sequence[Sequence[float]], ids: str = "abcdefghijklmnop"
) -> list[MemoryRecord]:
    vectors = gram_vectors(gram)
    return [memory(ids[i], vector, minute=i) for i, vector in enumerate(vectors)]


def allow_all(_first: MemoryRecord, _second: MemoryRecord) -> str | None:
    return None


class VetoPairs:
    """A pair veto for chosen pairs of ids; records every call."""

    def __init__(self, pairs: dict[frozenset[str], str]) -> None:
        self.pairs = pairs
        self.calls: list[tuple[str, str]] = []

    def __call__(self, first: MemoryRecord, second: MemoryRecord) -> str | None:
        self.calls.append((first.memory_id, second.memory_id))
        return self.pairs.get(frozenset((first.memory_id, second.memory_id)))


def analyse(memories: Sequence[MemoryRecord], **kwargs: object) -> ScopeAnalysis:
    options: dict[str, object] = {"bands": BANDS, "pair_veto": allow_all, **kwargs}
    return analyse_scope(memories, **options)  # type: ignore[arg-type]


def groups(analysis: ScopeAnalysis) -> list[set[str]]:
    return [cluster_ids(cluster) for cluster in analysis.clusters]


def cluster_ids(cluster: Cluster) -> set[str]:
    return {cluster.keeper_id, *(member.memory_id for member in cluster.members)}


def test_clean_pair_is_one_cluster_with_the_earliest_as_keeper() -> None:
    gram = [[1.0, 0.9, 0.1], [0.9, 1.0, 0.1], [0.1, 0.1, 1.0]]
    analysis = analyse(memories_from(gram))

    assert analysis.memories == 3
    assert analysis.unembedded == 0
    assert analysis.candidate_pairs == 1
    assert analysis.vetoes == {}
    assert len(analysis.clusters) == 1
    cluster = analysis.clusters[0]
    assert (cluster.tenant_id, cluster.namespace) == (TENANT, NAMESPACE)
    assert (cluster.keeper_id, cluster.keeper_hash) == ("a", "hash-a")
    assert cluster.text_source_id is None
    assert [m.memory_id for m in cluster.members] == ["b"]
    assert cluster.members[0].content_hash == "hash-b"
    assert cluster.members[0].similarity_to_keeper == pytest.approx(0.9, abs=1e-5)
    assert cluster.members[0].decision is Decision.MERGED
    assert cluster.min_similarity == pytest.approx(0.9, abs=1e-5)
    assert cluster.size == 2
    assert analysis.removed == 1


def test_best_neighbour_similarity_of_each_memory_feeds_the_histogram() -> None:
    gram = [[1.0, 0.9, 0.1], [0.9, 1.0, 0.3], [0.1, 0.3, 1.0]]
    analysis = analyse(memories_from(gram))

    assert analysis.pair_similarities == pytest.approx([0.9, 0.9, 0.3], abs=1e-5)


@pytest.mark.parametrize("neighbours", [1, 10])
def test_a_chain_is_not_one_cluster(neighbours: int) -> None:
    # a~b and b~c reach the merge threshold, a~c does not: single linkage would
    # fold all three into one memory.
    gram = [[1.0, 0.9, 0.7], [0.9, 1.0, 0.9], [0.7, 0.9, 1.0]]
    analysis = analyse(memories_from(gram), neighbours=neighbours)

    assert analysis.candidate_pairs == 2
    assert groups(analysis) == [{"a", "b"}]
    for cluster in analysis.clusters:
        assert cluster.min_similarity >= BANDS.merge_threshold


def test_a_longer_chain_keeps_every_cluster_within_the_threshold() -> None:
    # Points on a line under a Gaussian kernel: neighbours 0.9, two apart 0.66.
    gram = [[0.9 ** ((i - j) ** 2) for j in range(6)] for i in range(6)]
    analysis = analyse(memories_from(gram))

    assert groups(analysis) == [{"a", "b"}, {"c", "d"}, {"e", "f"}]


def test_a_clique_of_four_is_one_cluster() -> None:
    gram = uniform_gram(4, 0.92)
    gram = [[*row, 0.0] for row in gram] + [[0.0] * 4 + [1.0]]
    analysis = analyse(memories_from(gram))

    assert analysis.candidate_pairs == 6
    assert groups(analysis) == [{"a", "b", "c", "d"}]
    cluster = analysis.clusters[0]
    assert cluster.keeper_id == "a"
    assert cluster.min_similarity == pytest.approx(0.92, abs=1e-5)
    assert all(m.decision is Decision.MERGED for m in cluster.members)
    assert analysis.removed == 3


def test_a_vetoed_pair_splits_a_cluster() -> None:
    veto = VetoPairs({frozenset("ac"): "numbers"})
    analysis = analyse(memories_from(uniform_gram(3, 0.92)), pair_veto=veto)

    assert analysis.candidate_pairs == 3
    assert analysis.vetoes == {"numbers": 1}
    assert groups(analysis) == [{"a", "b"}]


def test_a_vetoed_cross_pair_blocks_a_join_even_outside_the_neighbour_lists() -> None:
    # With one neighbour each, a~c is no candidate pair (a's nearest is b, c's
    # nearest is b), yet joining c to {a, b} must ask about a~c.
    gram = [[1.0, 0.95, 0.9], [0.95, 1.0, 0.93], [0.9, 0.93, 1.0]]
    veto = VetoPairs({frozenset("ac"): "reviewed_pair"})
    analysis = analyse(memories_from(gram), pair_veto=veto, neighbours=1)

    assert analysis.candidate_pairs == 2
    assert analysis.vetoes == {}  # vetoes count candidate pairs only
    assert ("a", "c") in veto.calls
    assert groups(analysis) == [{"a", "b"}]


def test_without_the_veto_the_same_three_join() -> None:
    gram = [[1.0, 0.95, 0.9], [0.95, 1.0, 0.93], [0.9, 0.93, 1.0]]
    analysis = analyse(memories_from(gram), neighbours=1)

    assert groups(analysis) == [{"a", "b", "c"}]
    assert analysis.clusters[0].min_similarity == pytest.approx(0.9, abs=1e-5)


def test_the_veto_is_asked_once_per_pair_older_memory_first() -> None:
    # Created in reverse id order: "d" is the oldest.
    vectors = gram_vectors(uniform_gram(4, 0.92))
    memories = [memory(memory_id, vectors[i], minute=10 - i) for i, memory_id in enumerate("abcd")]
    veto = VetoPairs({})
    analyse(memories, pair_veto=veto)

    assert len(veto.calls) == len(set(veto.calls)) == 6
    assert all(first > second for first, second in veto.calls)


def test_vetoes_are_counted_by_reason() -> None:
    veto = VetoPairs(
        {frozenset("ab"): "numbers", frozenset("cd"): "numbers", frozenset("ef"): "verifier"}
    )
    gram = np.eye(6)
    for i in (0, 2, 4):
        gram[i, i + 1] = gram[i + 1, i] = 0.9
    analysis = analyse(memories_from(gram.tolist()), pair_veto=veto)

    assert analysis.candidate_pairs == 3
    assert analysis.vetoes == {"numbers": 2, "verifier": 1}
    assert analysis.clusters == []


def test_guard_pair_veto_names_the_guard() -> None:
    older = memory("a", None, content="The flight is at 9am")
    newer = memory("b", None, content="The flight is at 9pm", minute=1)
    paraphrase = memory("c", None, content="User lives in Paris", minute=2)
    original = memory("d", None, content="I live in Paris", minute=3)

    assert guard_pair_veto(older, newer) == "numbers"
    assert guard_pair_veto(original, paraphrase) is None


def keeper_cluster(policy: MergePolicy, memories: list[MemoryRecord]) -> Cluster:
    bands = Bands(duplicate_threshold=0.95, merge_threshold=0.85, merge_policy=policy)
    analysis = analyse(memories, bands=bands)
    assert len(analysis.clusters) == 1
    return analysis.clusters[0]


def policy_memories() -> list[MemoryRecord]:
    vectors = gram_vectors(uniform_gram(3, 0.9))
    return [
        # "b" is the earliest, "c" the most important, "a" the last seen.
        memory("a", vectors[0], minute=5, importance=0.4, last_seen_minute=90),
        memory("b", vectors[1], minute=1, importance=0.5, last_seen_minute=30),
        memory("c", vectors[2], minute=3, importance=0.9, last_seen_minute=60),
    ]


def test_keep_existing_keeps_the_earliest() -> None:
    cluster = keeper_cluster("keep_existing", policy_memories())
    assert (cluster.keeper_id, cluster.text_source_id) == ("b", None)


def test_replace_with_newer_keeps_the_earliest_id_and_takes_the_newest_text() -> None:
    cluster = keeper_cluster("replace_with_newer", policy_memories())
    assert (cluster.keeper_id, cluster.text_source_id) == ("b", "a")
    assert {m.memory_id for m in cluster.members} == {"a", "c"}


def test_replace_with_newer_falls_back_to_updated_at_and_skips_a_newest_keeper() -> None:
    vectors = gram_vectors(uniform_gram(2, 0.9))
    newest_is_earliest = [
        memory("a", vectors[0], minute=1, last_seen_minute=50),
        memory("b", vectors[1], minute=2),  # never seen again: updated_at decides
    ]
    cluster = keeper_cluster("replace_with_newer", newest_is_earliest)
    assert (cluster.keeper_id, cluster.text_source_id) == ("a", None)

    no_lineage = [memory("a", vectors[0], minute=1), memory("b", vectors[1], minute=2)]
    cluster = keeper_cluster("replace_with_newer", no_lineage)
    assert (cluster.keeper_id, cluster.text_source_id) == ("a", "b")


def test_keep_higher_importance_keeps_the_most_important_and_the_earliest_on_ties() -> None:
    cluster = keeper_cluster("keep_higher_importance", policy_memories())
    assert (cluster.keeper_id, cluster.text_source_id) == ("c", None)

    tied = [
        memory(m.memory_id, m.vector, minute=minute, importance=0.7)
        for m, minute in zip(policy_memories(), (4, 6, 2), strict=True)
    ]
    cluster = keeper_cluster("keep_higher_importance", tied)
    assert cluster.keeper_id == "c"


def test_synthesize_keeps_the_earliest_without_a_text_source() -> None:
    cluster = keeper_cluster("synthesize", policy_memories())
    assert (cluster.keeper_id, cluster.text_source_id) == ("b", None)


def test_created_at_ties_break_by_memory_id() -> None:
    vectors = gram_vectors(uniform_gram(2, 0.9))
    cluster = keeper_cluster("keep_existing", [memory("z", vectors[0]), memory("y", vectors[1])])
    assert cluster.keeper_id == "y"


def test_members_are_skipped_or_merged_by_their_similarity_to_the_keeper() -> None:
    gram = [[1.0, 0.97, 0.9], [0.97, 1.0, 0.88], [0.9, 0.88, 1.0]]
    analysis = analyse(memories_from(gram))

    [cluster] = analysis.clusters
    assert cluster.keeper_id == "a"
    assert [(m.memory_id, m.decision) for m in cluster.members] == [
        ("b", Decision.SKIPPED),
        ("c", Decision.MERGED),
    ]
    assert [m.similarity_to_keeper for m in cluster.members] == pytest.approx([0.97, 0.9], abs=1e-5)
    assert cluster.min_similarity == pytest.approx(0.88, abs=1e-5)


def random_scope(count: int, seed: int, *, clusters: int = 0) -> list[MemoryRecord]:
    """Random unit vectors, plus `clusters` groups of three close paraphrases."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIMENSION))
    for group in range(clusters):
        centre = vectors[group * 3]
        for offset in (1, 2):
            vectors[group * 3 + offset] = centre + 0.2 * rng.standard_normal(DIMENSION)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        memory(
            f"m{i:04d}",
            [float(x) for x in vectors[i]],
            minute=int(rng.integers(0, 1000)),
            importance=float(rng.integers(0, 3)) / 2,
        )
        for i in range(count)
    ]


def test_the_same_memories_in_any_order_give_the_same_analysis() -> None:
    memories = random_scope(120, seed=7, clusters=8)
    veto = VetoPairs({frozenset(("m0000", "m0002")): "numbers"})
    bands = Bands(duplicate_threshold=0.97, merge_threshold=0.9, merge_policy="replace_with_newer")
    expected = analyse(memories, bands=bands, pair_veto=veto, neighbours=4)
    assert expected.clusters  # the case has something to compare

    shuffler = random.Random(3)
    for _ in range(3):
        shuffled = memories[:]
        shuffler.shuffle(shuffled)
        assert analyse(shuffled, bands=bands, pair_veto=veto, neighbours=4) == expected


def test_blockwise_neighbours_equal_brute_force() -> None:
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((300, DIMENSION)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    full = matrix @ matrix.T
    np.fill_diagonal(full, -np.inf)
    expected_ids = np.argsort(-full, axis=1, kind="stable")[:, :10]
    expected_sims = np.take_along_axis(full, expected_ids, axis=1)

    ids, sims = nearest_neighbours(matrix, 10, block_rows=7)
    assert ids.shape == sims.shape == (300, 10)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(sims, expected_sims, atol=1e-6)
    # Each row by descending similarity.
    assert np.all(np.diff(sims, axis=1) <= 0)


def test_neighbours_are_capped_by_the_scope_size() -> None:
    matrix = np.eye(3, DIMENSION, dtype=np.float32)
    ids, _sims = nearest_neighbours(matrix, 10)
    assert ids.shape == (3, 2)
    assert all(i not in row for i, row in enumerate(ids.tolist()))


def test_the_analysis_does_not_depend_on_the_block_size() -> None:
    memories = random_scope(200, seed=5, clusters=10)
    bands = Bands(duplicate_threshold=0.97, merge_threshold=0.9)
    whole = analyse(memories, bands=bands)
    assert whole.clusters
    assert analyse(memories, bands=bands, block_rows=9) == whole


def test_unembedded_memories_are_counted_and_never_clustered() -> None:
    vectors = gram_vectors(uniform_gram(2, 0.9))
    memories = [memory("a", vectors[0]), memory("b", None), memory("c", vectors[1])]
    analysis = analyse(memories)

    assert (analysis.memories, analysis.unembedded) == (3, 1)
    assert len(analysis.pair_similarities) == 2
    assert groups(analysis) == [{"a", "c"}]


def test_a_scope_with_fewer_than_two_vectors_has_nothing_to_compare() -> None:
    analysis = analyse([memory("a", [1.0] + [0.0] * 15), memory("b", None)])
    assert (analysis.memories, analysis.unembedded, analysis.candidate_pairs) == (2, 1, 0)
    assert analysis.pair_similarities == []
    assert analysis.clusters == []


def test_an_empty_scope_needs_its_name() -> None:
    analysis = analyse([], scope=Scope(TENANT, NAMESPACE))
    assert (analysis.tenant_id, analysis.namespace, analysis.memories) == (TENANT, NAMESPACE, 0)
    with pytest.raises(ValueError, match="scope is required"):
        analyse([])


def test_memories_of_two_scopes_are_refused() -> None:
    vector = [1.0] + [0.0] * 15
    mixed = [memory("a", vector), memory("b", vector, namespace="other")]
    with pytest.raises(ValueError, match="one scope"):
        analyse(mixed)
    with pytest.raises(ValueError, match="one scope"):
        analyse([memory("a", vector)], scope=Scope(TENANT, "other"))


def test_a_memory_given_twice_is_refused() -> None:
    vector = [1.0] + [0.0] * 15
    with pytest.raises(ValueError, match="given twice"):
        analyse([memory("a", vector), memory("a", vector)])


def test_max_cluster_size_is_respected() -> None:
    analysis = analyse(memories_from(uniform_gram(7, 0.93)), max_cluster_size=3)

    assert [cluster.size for cluster in analysis.clusters] == [3, 3]
    assert all(cluster.size <= 3 for cluster in analysis.clusters)
    assert analysis.removed == 4


def test_clusters_are_listed_largest_first() -> None:
    gram = np.eye(5)
    gram[:3, :3] = uniform_gram(3, 0.9)
    gram[3, 4] = gram[4, 3] = 0.9
    analysis = analyse(memories_from(gram.tolist(), ids="edcba"))

    assert [cluster.size for cluster in analysis.clusters] == [3, 2]


@pytest.mark.parametrize(("keyword", "value"), [("neighbours", 0), ("max_cluster_size", 1)])
def test_bad_parameters_are_refused(keyword: str, value: int) -> None:
    with pytest.raises(ValueError, match=keyword):
        analyse([memory("a", [1.0] + [0.0] * 15)], **{keyword: value})


def test_progress_is_reported_per_block_of_embedded_memories() -> None:
    memories = random_scope(50, seed=2)
    memories.append(memory("unembedded", None))
    blocks: list[int] = []
    analyse(memories, block_rows=16, on_progress=blocks.append)

    assert blocks == [16, 16, 16, 2]
