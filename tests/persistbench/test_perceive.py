"""The same-entity judge's frame sampling (persistbench/perceive.adaptive_judgements): known
change points, the frames it asks about, and the frames it leaves alone."""

import numpy as np
import pytest
from worldmemory.persistbench.perceive import adaptive_judgements


class Judge:
    """Answers from a known per-frame truth and records the frames it was asked about."""

    def __init__(self, truth):
        self.truth, self.asked = np.asarray(truth, bool), []

    def __call__(self, t):
        self.asked.append(t)
        return bool(self.truth[t])


def test_a_change_between_samples_is_located_exactly_with_few_questions():
    truth = np.arange(40) < 13  # the same entity until frame 12, another one after
    judge = Judge(truth)
    answer, judged = adaptive_judgements(judge, np.ones(40, bool), stride=8)
    np.testing.assert_array_equal(answer, truth)
    assert len(judge.asked) == len(set(judge.asked)) == judged.sum() < 12  # each frame asked once
    assert {0, 8, 16, 24, 32, 39} <= set(judge.asked) and {12, 13} <= set(judge.asked)


def test_frames_without_a_valid_mask_are_never_asked_and_read_false():
    valid = np.ones(30, bool)
    valid[10:20] = False  # the tracker lost the target: two runs, each sampled on its own
    judge = Judge(np.ones(30, bool))
    answer, judged = adaptive_judgements(judge, valid, stride=8)
    np.testing.assert_array_equal(answer, valid)
    assert sorted(judge.asked) == [0, 8, 9, 20, 28, 29] and not judged[10:20].any()


def test_stride_one_asks_every_valid_frame_and_two_changes_between_samples_can_hide():
    truth = np.ones(17, bool)
    truth[5:7] = False  # gone for two frames between the samples 0 and 8
    judge = Judge(truth)
    exact, _ = adaptive_judgements(judge, np.ones(17, bool), stride=1)
    np.testing.assert_array_equal(exact, truth)
    assert sorted(judge.asked) == list(range(17))
    coarse, _ = adaptive_judgements(Judge(truth), np.ones(17, bool), stride=8)
    assert coarse.all()  # the documented limit of sampling: both samples agree, the gap is filled
    with pytest.raises(ValueError, match="stride must be >= 1"):
        adaptive_judgements(judge, np.ones(3, bool), stride=0)
