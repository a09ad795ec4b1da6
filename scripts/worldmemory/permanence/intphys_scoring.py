"""IntPhys-2019 scoring without torch: the two protocols, pairs, rules and intervals of Tables 1 and 10.

The scoring job (permanence.intphys) writes per-video surprises; everything after that lives here,
so the table job runs in the core environment. Two protocols (``permanence.intphys.protocol``):

* ``reference`` (the default): the evaluation of Garrido et al. (2025), whose fixed-context variant
  *Tracking Is Not Permanence* says it follows (Section 3.5), as its public code reduces the
  surprises (facebookresearch/jepa-intuitive-physics: ``evals/intuitive_physics/eval.py``,
  ``utils.py`` and ``figures.ipynb``):

  - frames: every second frame of the dev set's 15 fps PNGs, 99 // 2 = 49 of them (0, 2, ..., 96),
    one fewer than fit; generalised here as every source_fps / 7.5-th frame less the last;
  - windows: 16 frames at every second start; C context frames visible, the other 16 - C predicted
    (``WINDOW``);
  - pairs: per scene the two pairs whose videos share their opening frames (``get_matches``:
    video 1 with the video that differs from it latest, the other two together; opening_matches);
  - ties: a pair is correct only when the impossible video's surprise is strictly larger
    (``loss_real.mean(1) < loss_fake.mean(1)``), so a tie counts 0;
  - accuracy: per block, then the mean over blocks (the notebook's ``np.mean(perfs)``);
  - best: per block the most accurate row among the context lengths and the min ("Filtered") row
    (``df[df["Block"] == prop][key_metric].max()``); ties go to the first row, the smallest C;
  - interval: scipy's BCa bootstrap (its 9,999 resamples) on the 0/1 outcomes of the scored pairs,
    of the accuracy that is reported (Section 3.5, Appendix I "Protocol": Table 10's accuracy and
    its 95% interval): pairs resampled within each block, then the mean over blocks. The notebook
    bootstraps the mean over pooled pairs (``bootstrap((syn_preds,), np.mean)``), the same
    statistic when the blocks are equal, as the dev set's three; with unequal blocks it is another
    statistic, whose interval can miss the reported accuracy (57.5% with [58.3, 91.7] on blocks of
    18/20 and 1/4 correct pairs).

* ``paper-text``: the seed's own wording (Section 3.5, Appendix I): every frame at 7.5 fps, windows
  of C + 14 frames, all 2 x 2 = 4 possible/impossible pairs per scene ("the 360 pairs"), a tie
  counting 0.5 (a predictor that cannot tell the videos apart reads 50%), accuracy pooled over pairs,
  the best context length chosen per model among C = 2..10, and the scene bootstrap (percentile
  interval, 10,000 resamples).

Both share the readouts: ``fixed`` (C = 2), ``min`` (per start frame the minimum over C, then the
mean over start frames where every C's window fits) and the surprise averaged over windows; and
the differences between checkpoints keep the seed's scene bootstrap (Appendix I), which the
reference has no counterpart of.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from worldmemory.common.seeds import stable_rng

FPS = 7.5  # the protocol's frame rate (Section 3.5)
HORIZON = 14  # paper-text: frames predicted after C context frames (Section 3.5)
WINDOW = 16  # reference: frames per window, whatever C (eval.py's frames_per_clip)
FIXED_CONTEXT = 2  # the main text's setting (Appendix I, "Protocol")
CONTEXTS = (2, 4, 6, 8, 10)  # "context lengths 2-10" (Table 10)
MIN_READOUT = "min"
RULES = ("fixed", "best", "min")
RESAMPLES = 10_000  # Appendix I: "10,000 resamples"
LEVEL = 0.95
BOOTSTRAP_NAMESPACE = "worldmemory.permanence.intphys.bootstrap.v1"
VIDEO_COLUMNS = ["block", "scene", "video", "is_possible", "match"]  # match: the reference's pair (1 or 2)
SURPRISE_L1 = "surprise_l1"  # the L1 readout beside a scale head's negative log-likelihood (Table 1)
READOUTS = ("surprise", SURPRISE_L1)  # the value columns of the window and per-video tables, when present


@dataclass(frozen=True)
class Protocol:
    """How one protocol reads frames and reduces surprises (module docstring)."""

    name: str
    window: int | None  # frames per window; None: C + HORIZON
    drop_last_frame: bool  # the reference's 49 of 50 frames
    matched_pairs: bool  # the two pairs sharing opening frames, else all four per scene
    tie: float  # credit of a pair whose two surprises are equal
    per_block: bool  # accuracy as the mean over blocks and the best readout chosen per block (min included)
    resamples: int  # of the rule intervals
    pair_bca: bool  # BCa over pairs, else percentile over scenes

    def horizon(self, context: int) -> int:
        """Frames predicted after ``context`` visible ones."""
        if self.window is None:
            return HORIZON
        if not 0 < context < self.window:
            raise ValueError(f"context {context} leaves nothing to predict in the {self.name} protocol's "
                             f"{self.window}-frame windows: use context lengths below {self.window}")
        return self.window - context


REFERENCE = Protocol("reference", window=WINDOW, drop_last_frame=True, matched_pairs=True, tie=0.0, per_block=True,
                     resamples=9_999, pair_bca=True)
PAPER_TEXT = Protocol("paper-text", window=None, drop_last_frame=False, matched_pairs=False, tie=0.5,
                      per_block=False, resamples=RESAMPLES, pair_bca=False)
PROTOCOLS = {p.name: p for p in (REFERENCE, PAPER_TEXT)}


def protocol_named(name: str) -> Protocol:
    """The protocol of that name; ValueError naming the two otherwise."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown IntPhys protocol {name!r}; expected one of {sorted(PROTOCOLS)} "
                         "(permanence.intphys.protocol)")
    return PROTOCOLS[name]


# -- the reference's pairs -----------------------------------------------------------------------------
def opening_matches(clips: list[np.ndarray]) -> list[int]:
    """The reference's pair of each video of a scene (1 or 2), from its frames (T, H, W, 3) in video order.

    Video 1 is paired with the video whose frames stay equal to its own the longest (the first on a
    tie, as np.argmax), the other two with each other (utils.get_matches). The reference compares the
    preprocessed clips by the sum of their signed differences; any differing pixel is used here.
    """
    if len(clips) != 4:
        raise ValueError(f"an IntPhys scene has 4 videos, got {len(clips)}")
    first, breaks = clips[0], []
    for other in clips[1:]:
        n = min(len(first), len(other))
        differ = [t for t in range(n) if not np.array_equal(first[t], other[t])]
        breaks.append(differ[0] if differ else n)
    partner = 1 + int(np.argmax(breaks))
    return [1 if i in (0, partner) else 2 for i in range(4)]


# -- aggregation rules ---------------------------------------------------------------------------------
def _readout_order(label: str) -> tuple:
    """Sort key of the per-video table's ``context`` values: "2", "4", ..., "10", then "min"."""
    return (label == MIN_READOUT, int(label) if label != MIN_READOUT else 0)


def value_columns(table: pd.DataFrame) -> list[str]:
    """The surprise columns a window or per-video table carries: surprise, and surprise_l1 if there."""
    return [c for c in READOUTS if c in table.columns]


def video_surprises(windows: pd.DataFrame) -> pd.DataFrame:
    """Per video and readout: the mean window surprise at each context length, and the min rule's
    mean over start frames of the minimum over context lengths (start frames where every context
    length's window fits), for each surprise column alike. Columns VIDEO_COLUMNS + context (str),
    surprise (and surprise_l1 when the windows carry it)."""
    values = value_columns(windows)
    per_c = windows.groupby([*VIDEO_COLUMNS, "context"])[values].mean().reset_index()
    per_c = per_c.sort_values(["context", "block", "scene", "video"], kind="stable")
    wide = windows.set_index([*VIDEO_COLUMNS, "start", "context"])[values].unstack("context").dropna()
    minimum = pd.concat({v: wide[v].min(axis=1) for v in values}, axis=1)
    minimum = minimum.groupby(level=VIDEO_COLUMNS).mean().reset_index()
    out = pd.concat([per_c.assign(context=per_c["context"].map(str)), minimum.assign(context=MIN_READOUT)],
                    ignore_index=True)
    return out[[*VIDEO_COLUMNS, "context", *values]]


def l1_readout(videos: pd.DataFrame) -> pd.DataFrame | None:
    """The per-video table scored by its L1 readout (surprise_l1 as surprise, for pairs and the rules),
    or None when it has no surprise_l1 (its surprise already is the L1 readout)."""
    if SURPRISE_L1 not in videos.columns:
        return None
    return videos.drop(columns="surprise").rename(columns={SURPRISE_L1: "surprise"})


def _pair(block, scene, p, i, tie: float) -> dict:
    """One pair's row: possible video ``p`` against impossible video ``i`` (per-video rows)."""
    correct = 1.0 if i.surprise > p.surprise else tie if i.surprise == p.surprise else 0.0
    return {"block": block, "scene": scene, "possible": p.video, "impossible": i.video, "correct": correct}


def pairs(videos: pd.DataFrame, protocol: Protocol) -> pd.DataFrame:
    """The possible/impossible pairs of one readout's per-video surprises: block, scene, possible,
    impossible, correct (1 if the impossible video is the more surprising, the protocol's tie credit
    on a tie, else 0); all four per scene, or the reference's two (column ``match``)."""
    rows = []
    for (block, scene), group in videos.groupby(["block", "scene"], sort=True):
        possible, impossible = group[group["is_possible"]], group[~group["is_possible"]]
        if len(possible) != 2 or len(impossible) != 2:
            raise ValueError(f"scene {block}/{scene}: expected 2 possible and 2 impossible videos in one readout, "
                             f"found {len(possible)} and {len(impossible)}; filter the table to one context first")
        if not protocol.matched_pairs:
            rows += [_pair(block, scene, p, i, protocol.tie) for p in possible.itertuples()
                     for i in impossible.itertuples()]
            continue
        for match, members in group.groupby("match", sort=True):
            p, i = members[members["is_possible"]], members[~members["is_possible"]]
            if len(p) != 1 or len(i) != 1:
                raise ValueError(f"scene {block}/{scene}: videos {', '.join(map(str, members['video']))} share "
                                 f"their opening frames (the reference's pair {match}) but are not one possible and "
                                 "one impossible video; score this dev set with permanence.intphys.protocol: "
                                 "paper-text (every possible video against every impossible one)")
            rows.append(_pair(block, scene, next(p.itertuples()), next(i.itertuples()), protocol.tie))
    return pd.DataFrame(rows)


def accuracy(pair_table: pd.DataFrame, protocol: Protocol) -> float:
    """Pairwise accuracy in %: over all pairs, or (reference) per block and then the mean over blocks."""
    if protocol.per_block:
        return 100.0 * float(pair_table.groupby("block")["correct"].mean().mean())
    return 100.0 * float(pair_table["correct"].mean())


def readout(videos: pd.DataFrame, label: str) -> pd.DataFrame:
    """The per-video rows of one readout; ValueError naming the readouts there are otherwise."""
    rows = videos[videos["context"].astype(str) == label]
    if rows.empty:
        raise ValueError(f"no per-video surprises for context {label!r}; the table has "
                         f"{sorted(videos['context'].astype(str).unique(), key=_readout_order)}")
    return rows


def labels(videos: pd.DataFrame) -> list[str]:
    """The readouts of a per-video table: its context lengths in order, then min."""
    return sorted(videos["context"].astype(str).unique(), key=_readout_order)


def context_accuracies(videos: pd.DataFrame, protocol: Protocol) -> dict[str, float]:
    """Accuracy (%) per readout: each context length and the min rule."""
    return {label: accuracy(pairs(readout(videos, label), protocol), protocol) for label in labels(videos)}


def _most_accurate(videos: pd.DataFrame, candidates: list[str], protocol: Protocol) -> str:
    scores = {k: accuracy(pairs(readout(videos, k), protocol), protocol) for k in candidates}
    return max(candidates, key=lambda k: (scores[k], -candidates.index(k)))


def rule_readouts(videos: pd.DataFrame, rule: str, protocol: Protocol) -> dict[str, str]:
    """{block: readout} a rule scores (Table 10): C = 2, min, or the best readout, chosen over the
    context lengths for the whole model (paper-text) or over them and min per block (reference);
    ties to the first in readout order (the smallest C)."""
    blocks = sorted(videos["block"].unique())
    if rule in ("fixed", "min"):
        label = str(FIXED_CONTEXT) if rule == "fixed" else MIN_READOUT
        return dict.fromkeys(blocks, label)
    if rule != "best":
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
    if protocol.per_block:
        return {b: _most_accurate(videos[videos["block"] == b], labels(videos), protocol) for b in blocks}
    contexts = [k for k in labels(videos) if k != MIN_READOUT]
    return dict.fromkeys(blocks, _most_accurate(videos, contexts, protocol))


def rule_label(readouts: dict[str, str]) -> str:
    """The ``context`` cell of a rule's row: its readout, or "O1:4 O2:min ..." when blocks differ."""
    if len(set(readouts.values())) == 1:
        return next(iter(readouts.values()))
    return " ".join(f"{block}:{label}" for block, label in readouts.items())


def rule_pairs(videos: pd.DataFrame, rule: str, protocol: Protocol) -> pd.DataFrame:
    """The pairs a rule scores: each block's at the readout the rule chooses for it."""
    return pd.concat([pairs(readout(videos[videos["block"] == b], label), protocol)
                      for b, label in rule_readouts(videos, rule, protocol).items()], ignore_index=True)


def scene_accuracy(pair_table: pd.DataFrame) -> pd.Series:
    """Fraction of correct pairs per scene, indexed by (block, scene): the scene bootstrap's unit."""
    return pair_table.groupby(["block", "scene"])["correct"].mean()


def interval(pair_table: pd.DataFrame, key: str, protocol: Protocol, resamples: int | None = None) -> dict:
    """The 95% interval (%) of a rule's accuracy: BCa over pairs (reference) or percentile over scenes."""
    resamples = resamples or protocol.resamples
    if protocol.pair_bca:
        blocks = [g.to_numpy(dtype=float) for _, g in pair_table.groupby("block", sort=True)["correct"]]
        return pair_interval(blocks, key, resamples)
    return bootstrap([scene_accuracy(pair_table)], key=key, resamples=resamples)


def rule_table(videos: pd.DataFrame, key: str, protocol: Protocol, resamples: int | None = None) -> pd.DataFrame:
    """One row per rule: the readout it scores, accuracy (%), per-block accuracy and the 95% interval of
    the accuracy (seeded by ``key``, e.g. the model name)."""
    rows = []
    for rule in RULES:
        table = rule_pairs(videos, rule, protocol)
        bounds = interval(table, f"{key}/{rule}", protocol, resamples)
        by_block = {f"accuracy_{b}": accuracy(t, protocol) for b, t in table.groupby("block")}
        rows.append({"rule": rule, "context": rule_label(rule_readouts(videos, rule, protocol)),
                     "accuracy": accuracy(table, protocol), "pairs": len(table), "low": bounds["low"],
                     "high": bounds["high"], **by_block})
    return pd.DataFrame(rows)


# -- intervals ---------------------------------------------------------------------------------------------
def pair_interval(blocks: list[np.ndarray], key: str, resamples: int, level: float = LEVEL) -> dict:
    """The reference's interval (%): scipy's BCa bootstrap of the reported accuracy, the mean over
    ``blocks`` (each block's 0/1 pair outcomes) of the blocks' means, resampling pairs within each
    block (module docstring; one block: the notebook's bootstrap of the mean over pairs).

    The notebook rebuilds the outcomes from the accuracy as int(acc / 100 * n) ones then zeros; the
    same order is used here per block with the exact count (the notebook's float product can fall
    one short). A block whose pairs all agree resamples to itself: it enters as its constant mean
    (scipy needs two outcomes a sample), and when every block agrees, where BCa is undefined, the
    interval is the point itself. Draws from stable_rng(``key``).
    """
    counts = [(int(round(float(np.sum(b)))), len(b)) for b in blocks]
    outcomes = [np.r_[np.ones(k), np.zeros(n - k)] for k, n in counts]
    varying = tuple(o for (k, n), o in zip(counts, outcomes) if 0 < k < n)
    fixed = sum(k / n for k, n in counts if k in (0, n))

    def mean_over_blocks(*samples, axis=-1):
        return (fixed + sum(s.mean(axis=axis) for s in samples)) / len(blocks)

    estimate = 100.0 * float(mean_over_blocks(*varying))
    n_pairs = sum(n for _, n in counts)
    if not varying:
        return {"estimate": estimate, "low": estimate, "high": estimate, "pairs": n_pairs, "resamples": resamples}
    result = stats.bootstrap(varying, mean_over_blocks, n_resamples=resamples, confidence_level=level,
                             method="BCa", rng=stable_rng(key, BOOTSTRAP_NAMESPACE))
    ci = result.confidence_interval
    return {"estimate": estimate, "low": 100.0 * float(ci.low), "high": 100.0 * float(ci.high),
            "pairs": n_pairs, "resamples": resamples}


def _seed_mean(seeds: list[pd.Series], name: str) -> pd.Series:
    """Per-scene accuracy averaged over a checkpoint's seeds ("seed-averaged per scene")."""
    if not seeds:
        raise ValueError(f"checkpoint {name} has no seed's per-scene accuracies")
    first = seeds[0].index
    for i, s in enumerate(seeds[1:], start=1):
        if set(s.index) != set(first):
            raise ValueError(f"seed {i} of checkpoint {name} covers other scenes than seed 0: "
                             f"{sorted(set(s.index) ^ set(first))[:4]}; score every seed on the same dev set")
    return pd.concat([s.reindex(first) for s in seeds], axis=1).mean(axis=1)


def bootstrap(a: list[pd.Series], b: list[pd.Series] | None = None, key: str = "", resamples: int = RESAMPLES,
              level: float = LEVEL) -> dict:
    """Scene bootstrap (Appendix I): resample scenes with replacement, each with its pairs, and take
    the percentile interval of the accuracy (%) of checkpoint ``a`` or of the difference a - b.

    ``a`` and ``b`` are lists of per-scene accuracies (scene_accuracy), one per training seed,
    averaged over seeds per scene first. The draws come from stable_rng(``key``): the same key gives
    the same interval in every process.
    """
    values = _seed_mean(a, "a")
    if b is not None:
        other = _seed_mean(b, "b")
        differ = sorted(set(other.index) ^ set(values.index))
        if differ:
            raise ValueError(f"checkpoints a and b cover different scenes: {differ[:4]}; compare them on the same "
                             "dev set")
        values = values - other.reindex(values.index)
    points = 100.0 * values.to_numpy(dtype=float)
    rng = stable_rng(key, BOOTSTRAP_NAMESPACE)
    means = points[rng.integers(0, len(points), size=(resamples, len(points)))].mean(axis=1)
    low, high = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return {"estimate": float(points.mean()), "low": float(low), "high": float(high), "scenes": len(points),
            "resamples": resamples}
