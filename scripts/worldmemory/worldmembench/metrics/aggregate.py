"""Multi-revisit aggregation of WorldMemBench (Section 4.1, Eq. 1).

Every static metric scores each prescribed revisit k of each target u separately; a rollout's
score averages over revisits first and then over targets, so every target weighs the same however
many revisits it was seen at.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence


def _score_or_zero(score: float | None) -> float:
    """A revisit without a valid observation scores 0 (Section 4.1, last sentence)."""
    if score is None or math.isnan(score):
        return 0.0
    return float(score)


def revisit_mean(scores: Sequence[float | None], n_revisits: int) -> float:
    """S_u of Eq. 1: (1/K) sum_k s_{u,k} with K the number of PRESCRIBED revisits.

    Eq. 1 counts every prescribed revisit in K, "including those without valid observations", so
    a missing entry (scores shorter than K), None or NaN contributes 0 to the sum and 1 to K.
    The per-rollout Environment means of Eq. 6 (S_depth, S_rec) and Visible Memory have the same
    1/K form and use this function too. More scores than prescribed revisits is an error.
    """
    if n_revisits < 1:
        raise ValueError(f"n_revisits must be at least 1, got {n_revisits}")
    if len(scores) > n_revisits:
        raise ValueError(f"{len(scores)} scores for {n_revisits} prescribed revisits")
    return sum(_score_or_zero(s) for s in scores) / n_revisits


def rollout_score(scores: Mapping[Hashable, Sequence[float | None]], n_revisits: int) -> float:
    """S_rollout of Eq. 1: mean over targets u of S_u (revisits first, then targets).

    scores maps each target id to its per-revisit scores s_{u,1..K}. With no targets the mean is
    undefined and NaN is returned, so an empty rollout cannot pass for a zero score.
    """
    if not scores:
        return math.nan
    return sum(revisit_mean(s, n_revisits) for s in scores.values()) / len(scores)
