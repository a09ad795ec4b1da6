import math

import pytest
from worldmemory.worldmembench.metrics.aggregate import revisit_mean, rollout_score


def test_all_ones_score_one():
    assert rollout_score({"a": [1.0, 1.0, 1.0], "b": [1.0, 1.0, 1.0]}, n_revisits=3) == 1.0


@pytest.mark.parametrize("scores", [[1.0], [1.0, None], [1.0, math.nan], [None, 1.0]])
def test_missing_revisit_scores_zero_and_counts_in_k(scores):
    # One of two prescribed revisits without a valid observation: S_u = (1 + 0) / 2.
    assert rollout_score({"a": scores}, n_revisits=2) == 0.5


def test_mean_over_targets_not_pooled_revisits():
    # Target a has 1 valid revisit of 2 (scored 1), target b both (scored 0.5 each).
    # Eq. 1: S_a = 0.5, S_b = 0.5 -> 0.5. Pooling the valid revisits would give (1 + 0.5 + 0.5) / 3.
    scores = {"a": [1.0, None], "b": [0.5, 0.5]}
    assert rollout_score(scores, n_revisits=2) == 0.5
    # S_a = 0.45, S_b = 0.3 -> 0.375; pooling valid revisits gives 0.5, averaging each revisit
    # over its valid targets first gives (0.6 + 0.3) / 2 = 0.45.
    assert rollout_score({"a": [0.9, None], "b": [0.3, 0.3]}, n_revisits=2) == pytest.approx(0.375)


def test_every_target_weighs_the_same():
    scores = {"a": [1.0, 1.0, 1.0], "b": [0.0, 0.0, 0.0], "c": [0.0, 0.0, 0.0]}
    assert rollout_score(scores, n_revisits=3) == pytest.approx(1 / 3)


def test_more_scores_than_prescribed_revisits_raise():
    with pytest.raises(ValueError):
        rollout_score({"a": [1.0, 1.0, 1.0]}, n_revisits=2)
    with pytest.raises(ValueError):
        revisit_mean([1.0], n_revisits=0)


def test_no_targets_is_nan():
    assert math.isnan(rollout_score({}, n_revisits=2))


def test_revisit_mean_is_s_u():
    assert revisit_mean([0.2, None, 0.7], n_revisits=3) == pytest.approx(0.3)
    # Negative scores (Depth Spearman) are kept, not clipped.
    assert revisit_mean([-0.5, 1.0], n_revisits=2) == pytest.approx(0.25)
