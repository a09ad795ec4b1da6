"""Tables 1 and 10 of *Tracking Is Not Permanence* from the per-video surprises of each checkpoint.

Each under the protocol ``--protocol`` names (permanence.intphys_scoring: ``reference``, Garrido et
al.'s evaluation code, the default, or ``paper-text``):

* Table 1 (Section 4.6): pairwise accuracy (%) under the main text's rule, two context frames and
  the surprise averaged over windows, with its 95% interval (the protocol's) and the accuracy per
  block (O1-O3); beside ``accuracy``, ``accuracy_l1`` (the caption's "L_1 readout": surprise from
  the L1 loss instead of the trained scale head), the same rule scored on the ``surprise_l1`` of a
  checkpoint with a Laplace scale head, empty for the others (their ``accuracy`` is the L1 readout);
* Table 10 (Appendix I, "Protocol"): the three rules side by side (fixed two-frame context, the
  best single context length in 2-10 (per model; the reference chooses per block, the min row
  included), the minimum over context lengths per start frame);
* the differences between checkpoints (Appendix I: "Resampling the 90 scenes ... 95% intervals of
  +4.5 [0.6, 8.8] points"): every other checkpoint minus the baseline, per rule, scene bootstrap of
  the difference with 10,000 resamples seeded by the pair's names, over the protocol's pairs (the
  reference evaluation compares no checkpoints, so both protocols keep the seed's bootstrap here).

Table 10 and the differences score each checkpoint's main readout (``surprise``).

Input: the per-video CSVs written by ``python -m worldmemory.permanence.intphys --out`` (one per
checkpoint, named on the command line as NAME=PATH), scored under the same protocol (its frames and
windows; the workflow passes one permanence.intphys.protocol to both jobs).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from worldmemory.permanence.intphys_scoring import (
    PROTOCOLS,
    RESAMPLES,
    RULES,
    Protocol,
    accuracy,
    bootstrap,
    l1_readout,
    protocol_named,
    rule_pairs,
    rule_table,
    scene_accuracy,
)


def parse_named(values: list[str]) -> dict[str, Path]:
    """NAME=PATH arguments -> {name: path}, in the order given."""
    named = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--videos {value!r}: expected NAME=PATH (a checkpoint's name and its per-video CSV)")
        named[name] = Path(path)
    return named


def rules_of(videos: dict[str, pd.DataFrame], protocol: Protocol, resamples: int | None = None) -> pd.DataFrame:
    """Table 10's rows: one per checkpoint and rule (rule_table), checkpoints in the order given."""
    return pd.concat([rule_table(v, name, protocol, resamples).assign(model=name) for name, v in videos.items()],
                     ignore_index=True)


def l1_accuracy(videos: pd.DataFrame, protocol: Protocol) -> float:
    """Table 1's L1 readout: the fixed rule's accuracy (%) over surprise_l1, NaN for a checkpoint
    without one (its accuracy already is the L1 readout)."""
    l1 = l1_readout(videos)
    return float("nan") if l1 is None else accuracy(rule_pairs(l1, "fixed", protocol), protocol)


def differences(videos: dict[str, pd.DataFrame], baseline: str, protocol: Protocol,
                resamples: int = RESAMPLES) -> pd.DataFrame:
    """Each checkpoint minus ``baseline`` under each rule (each checkpoint scored at its own readout
    of that rule): the difference in points and its scene-bootstrap 95% interval."""
    if baseline not in videos:
        raise ValueError(f"baseline {baseline!r} is not among the checkpoints {list(videos)}; "
                         "set permanence.intphys.baseline to one of them")
    rows = []
    for rule in RULES:
        base = scene_accuracy(rule_pairs(videos[baseline], rule, protocol))
        for name, v in videos.items():
            if name == baseline:
                continue
            ours = scene_accuracy(rule_pairs(v, rule, protocol))
            d = bootstrap([ours], [base], key=f"{name}-{baseline}/{rule}", resamples=resamples)
            rows.append({"model": name, "baseline": baseline, "rule": rule, "difference": d["estimate"],
                         "low": d["low"], "high": d["high"], "scenes": d["scenes"]})
    return pd.DataFrame(rows, columns=["model", "baseline", "rule", "difference", "low", "high", "scenes"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--videos", nargs="+", required=True, help="NAME=PATH per checkpoint (per-video surprises)")
    ap.add_argument("--baseline", default=None, help="checkpoint the differences are against (default: the first)")
    ap.add_argument("--protocol", default="reference", choices=sorted(PROTOCOLS),
                    help="pairs, ties, rules and intervals of Garrido et al.'s evaluation code or of the seed's text")
    ap.add_argument("--resamples", type=int, default=None,
                    help="bootstrap resamples (default: the protocol's for the rules, 10,000 for the differences)")
    ap.add_argument("--table1", required=True, type=Path)
    ap.add_argument("--table10", required=True, type=Path)
    ap.add_argument("--differences", required=True, type=Path)
    args = ap.parse_args(argv)
    videos = {name: pd.read_csv(path, dtype={"context": str}) for name, path in parse_named(args.videos).items()}
    chosen = protocol_named(args.protocol)
    table10 = rules_of(videos, chosen, args.resamples)
    blocks = sorted(c for c in table10.columns if c.startswith("accuracy_"))
    table10 = table10[["model", "rule", "context", "accuracy", "low", "high", "pairs", *blocks]]
    table1 = table10[table10["rule"] == "fixed"].drop(columns=["rule", "context"])
    table1.insert(table1.columns.get_loc("accuracy") + 1, "accuracy_l1",
                  table1["model"].map({name: l1_accuracy(v, chosen) for name, v in videos.items()}))
    for path in (args.table1, args.table10, args.differences):
        path.parent.mkdir(parents=True, exist_ok=True)
    table1.to_csv(args.table1, index=False, float_format="%.2f")
    table10.to_csv(args.table10, index=False, float_format="%.2f")
    baseline = args.baseline or next(iter(videos))
    table = differences(videos, baseline, chosen, args.resamples or RESAMPLES)
    table.to_csv(args.differences, index=False, float_format="%.2f")
    print(table10.to_string(index=False, float_format=lambda x: f"{x:.1f}"))


if __name__ == "__main__":
    main()
