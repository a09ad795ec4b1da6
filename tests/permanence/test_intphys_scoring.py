"""IntPhys-2019 scoring under the two protocols (permanence.intphys_scoring), without torch.

The known answers are computed by hand below from fixed window surprises, following the reductions
of Garrido et al.'s evaluation code (facebookresearch/jepa-intuitive-physics): eval.py's
``compute_metrics`` (mean over windows, ``loss_real.mean(1) < loss_fake.mean(1)``, the min over
context lengths per window as the "Filtered" row), utils.py's ``get_matches`` and the notebook's
``get_average_acc`` (per block the best row, then the mean over blocks) and ``bootstrap``.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from worldmemory.common.seeds import stable_rng
from worldmemory.permanence import intphys_scoring as scoring
from worldmemory.permanence.intphys_scoring import PAPER_TEXT, REFERENCE

# Window surprises at C = 2 and C = 4, two windows each (start frames 0 and 2, which the reference's
# 16-frame windows share at every C): {(block, video): (is_possible, match, {C: [w0, w1]})}.
# Per video: the mean over windows at each C, and min = the mean over windows of the min over C.
WINDOWS = {
    # O1: the reference pairs 1 with 3 and 2 with 4
    ("O1", "1"): (True, 1, {2: [1, 3], 4: [2, 2]}),  # C2 2, C4 2, min mean(1, 2) = 1.5
    ("O1", "2"): (True, 2, {2: [4, 4], 4: [1, 5]}),  # C2 4, C4 3, min mean(1, 4) = 2.5
    ("O1", "3"): (False, 1, {2: [2, 2], 4: [3, 3]}),  # C2 2, C4 3, min mean(2, 2) = 2
    ("O1", "4"): (False, 2, {2: [5, 1], 4: [2, 6]}),  # C2 3, C4 4, min mean(2, 1) = 1.5
    # O2: the reference pairs 1 with 2 and 3 with 4
    ("O2", "1"): (True, 1, {2: [1, 1], 4: [4, 0]}),  # C2 1, C4 2, min mean(1, 0) = 0.5
    ("O2", "2"): (False, 1, {2: [2, 2], 4: [1, 1]}),  # C2 2, C4 1, min mean(1, 1) = 1
    ("O2", "3"): (True, 2, {2: [3, 3], 4: [1, 1]}),  # C2 3, C4 1, min mean(1, 1) = 1
    ("O2", "4"): (False, 2, {2: [2, 2], 4: [2, 2]}),  # C2 2, C4 2, min mean(2, 2) = 2
}
# Reference: a pair is correct when possible < impossible, strictly.
#   O1 (1, 3): C2 2 = 2 -> 0 (a tie), C4 2 < 3 -> 1, min 1.5 < 2 -> 1
#   O1 (2, 4): C2 4 > 3 -> 0,          C4 3 < 4 -> 1, min 2.5 > 1.5 -> 0
#   O2 (1, 2): C2 1 < 2 -> 1,          C4 2 > 1 -> 0, min 0.5 < 1 -> 1
#   O2 (3, 4): C2 3 > 2 -> 0,          C4 1 < 2 -> 1, min 1 < 2 -> 1
#   per block: O1 C2 0, C4 100, min 50; O2 C2 50, C4 50, min 100; the mean over blocks:
#   fixed (C2) 25, min 75, by context C4 75; best per block among C2, C4, min: O1 C4 (100),
#   O2 min (100) -> 100.
REFERENCE_BY_CONTEXT = {"2": 25.0, "4": 75.0, "min": 75.0}
REFERENCE_RULES = {"fixed": ("2", 25.0, 4, 0.0, 50.0), "best": ("O1:4 O2:min", 100.0, 4, 100.0, 100.0),
                   "min": ("min", 75.0, 4, 50.0, 100.0)}  # context, accuracy, pairs, O1, O2
# Paper text: every possible video against every impossible one, a tie counting 0.5, pooled.
#   O1 pairs (1,3) (1,4) (2,3) (2,4): C2 0.5 1 0 0 = 1.5/4; C4 1 1 0.5 1 = 3.5/4; min 1 0.5 0 0 = 1.5/4
#   O2 pairs (1,2) (1,4) (3,2) (3,4): C2 1 1 0 0 = 2/4;     C4 0 0.5 0.5 1 = 2/4; min 1 1 0.5 1 = 3.5/4
#   pooled over 8 pairs: C2 3.5/8 = 43.75, C4 5.5/8 = 68.75, min 5/8 = 62.5; best per model among
#   C2 and C4 only: C4 (68.75; O1 87.5, O2 50).
PAPER_TEXT_BY_CONTEXT = {"2": 43.75, "4": 68.75, "min": 62.5}
PAPER_TEXT_RULES = {"fixed": ("2", 43.75, 8, 37.5, 50.0), "best": ("4", 68.75, 8, 87.5, 50.0),
                    "min": ("min", 62.5, 8, 37.5, 87.5)}


def window_table() -> pd.DataFrame:
    rows = [{"block": block, "scene": "01", "video": video, "is_possible": possible, "match": match,
             "context": context, "start": 2 * i, "surprise": float(v)}
            for (block, video), (possible, match, by_context) in WINDOWS.items()
            for context, values in by_context.items() for i, v in enumerate(values)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("protocol, by_context, rules", [(REFERENCE, REFERENCE_BY_CONTEXT, REFERENCE_RULES),
                                                         (PAPER_TEXT, PAPER_TEXT_BY_CONTEXT, PAPER_TEXT_RULES)],
                         ids=["reference", "paper-text"])
def test_both_protocols_match_the_hand_computation(protocol, by_context, rules):
    videos = scoring.video_surprises(window_table())
    assert scoring.context_accuracies(videos, protocol) == by_context
    table = scoring.rule_table(videos, "hand", protocol, resamples=200).set_index("rule")
    found = {rule: (row.context, row.accuracy, row.pairs, row.accuracy_O1, row.accuracy_O2)
             for rule, row in table.iterrows()}
    assert found == rules


def test_the_reference_pairs_the_videos_that_share_their_opening_frames():
    """get_matches: video 1 with the video that differs from it latest, the first on a tie."""
    def clip(first_difference, n=6):
        frames = np.zeros((n, 2, 2, 3), np.uint8)
        frames[first_difference:] = 9
        return frames

    same = clip(6)  # never differs from video 1
    assert scoring.opening_matches([same, clip(0), clip(4), clip(1)]) == [1, 2, 1, 2]
    assert scoring.opening_matches([same, clip(3), clip(0), clip(3)]) == [1, 1, 2, 2]  # a tie: the first
    assert scoring.opening_matches([same, clip(0), clip(1), same]) == [1, 2, 2, 1]  # identical: longest
    with pytest.raises(ValueError, match="4 videos, got 3"):
        scoring.opening_matches([same, same, same])


def test_a_reference_pair_of_two_possible_videos_is_refused_naming_the_scene():
    videos = scoring.video_surprises(window_table())
    videos.loc[(videos["block"] == "O2") & (videos["video"] == "2"), "match"] = 2
    with pytest.raises(ValueError, match=r"scene O2/01: videos 1 share .* permanence.intphys.protocol: paper-text"):
        scoring.pairs(scoring.readout(videos, "2"), REFERENCE)
    assert len(scoring.pairs(scoring.readout(videos, "2"), PAPER_TEXT)) == 8  # the text's pairs ignore it


def test_the_reference_interval_is_scipys_bca_over_the_notebooks_pair_outcomes():
    """The notebook's bootstrap((syn_preds,), np.mean) on int(acc / 100 * n) ones then zeros, here
    126 of 180 pairs (70%: its float product gives 125.99999999999999, one short, which the exact
    count avoids); the outcomes' order does not matter, and a seed is the key's."""
    outcomes = np.zeros(180)
    outcomes[stable_rng("order", "tests.intphys_scoring").permutation(180)[:126]] = 1
    found = scoring.pair_interval([outcomes], "k", resamples=999)
    synthetic = np.zeros(180)
    synthetic[:126] = 1
    expected = stats.bootstrap((synthetic,), np.mean, n_resamples=999, method="BCa",
                               rng=stable_rng("k", scoring.BOOTSTRAP_NAMESPACE)).confidence_interval
    assert int(70.0 / 100 * 180) == 125
    assert found["estimate"] == pytest.approx(70.0)
    assert (found["low"], found["high"]) == pytest.approx((100 * expected.low, 100 * expected.high))
    assert found["low"] < 70.0 < found["high"] and found == scoring.pair_interval([outcomes[::-1]], "k", 999)
    degenerate = scoring.pair_interval([np.ones(8)], "k", 999)  # BCa returns NaN: the interval is the point
    assert (degenerate["estimate"], degenerate["low"], degenerate["high"]) == (100.0, 100.0, 100.0)


def test_the_reference_interval_contains_its_accuracy_on_unequal_blocks():
    """Blocks of 20 and 4 pairs, 18 and 1 correct: the reported accuracy is the mean over blocks,
    (90 + 25) / 2 = 57.5%, and its interval bootstraps that statistic (pairs resampled within each
    block); a bootstrap of the pooled pairs (19 / 24) gives [58.33, 91.67], missing it."""
    table = pd.DataFrame({"block": ["O1"] * 20 + ["O2"] * 4, "scene": range(24),
                          "correct": [1.0] * 18 + [0.0] * 2 + [1.0] + [0.0] * 3})
    assert scoring.accuracy(table, REFERENCE) == pytest.approx(57.5)
    found = scoring.interval(table, "k", REFERENCE, resamples=9_999)
    assert found["estimate"] == pytest.approx(57.5) and found["pairs"] == 24
    assert found["low"] < 57.5 < found["high"]
    assert (found["low"], found["high"]) == pytest.approx((42.5, 87.5), abs=2.5)
    pooled = scoring.pair_interval([table["correct"].to_numpy()], "k", 9_999)
    assert pooled["low"] > 57.5  # the statistic the notebook bootstraps is another one here
    point = scoring.pair_interval([np.ones(3), np.zeros(1)], "k", 999)  # every block agrees: the point
    assert (point["estimate"], point["low"], point["high"]) == (50.0, 50.0, 50.0)


def test_the_protocols_windows_and_names():
    assert [REFERENCE.horizon(c) for c in scoring.CONTEXTS] == [14, 12, 10, 8, 6]  # 16 - C
    assert [PAPER_TEXT.horizon(c) for c in scoring.CONTEXTS] == [14] * 5
    assert REFERENCE.resamples == 9_999 and PAPER_TEXT.resamples == 10_000  # scipy's default, Appendix I's
    assert scoring.protocol_named("paper-text") is PAPER_TEXT
    with pytest.raises(ValueError, match=r"unknown IntPhys protocol 'garrido'; expected one of \['paper-text', "
                                         r"'reference'\] \(permanence.intphys.protocol\)"):
        scoring.protocol_named("garrido")
