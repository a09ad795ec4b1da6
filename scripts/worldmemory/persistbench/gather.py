"""Join one model's per-sequence score files into the files the tables read.

    python -m worldmemory.persistbench.gather --scores results/persistbench/scores/M --sequences s1 s2 ...

Each sequence's score job (score.py) wrote ``<scores>/sequences/<sequence>/persistence.csv``,
``persistence_frames.csv`` and ``info.json``; this writes ``<scores>/persistence.csv`` and
``persistence_frames.csv`` (the sequences' rows, text for text, in the order given: the sequences'
preparation order, as one job over every sequence would write them) and ``persistence.json`` (the
model's job sidecar: estimators, features, device, packages of the sequence jobs' environment).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from worldmemory.common.progress import SCORED
from worldmemory.persistbench.perception import FAMILY
from worldmemory.report.tables import concat_csv

SCORES, FRAMES, INFO = f"{FAMILY}.csv", f"{FAMILY}_frames.csv", SCORED  # a sequence's files, INFO last


def gather(scores_dir, sequences: list[str]) -> int:
    """Write the model's files from its sequences' (in this order); the number of score rows."""
    scores_dir = Path(scores_dir)
    dirs = [scores_dir / "sequences" / sequence for sequence in sequences]
    infos = [json.loads((d / INFO).read_text()) for d in dirs]
    rows = concat_csv([d / SCORES for d in dirs], scores_dir / SCORES)
    concat_csv([d / FRAMES for d in dirs], scores_dir / FRAMES)
    info = {**infos[0], "features": next((i["features"] for i in infos if i["features"]), None)}
    (scores_dir / f"{FAMILY}.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scores", required=True, type=Path, help="the model's score directory")
    ap.add_argument("--sequences", nargs="+", required=True, help="the model's sequence ids, in preparation order")
    args = ap.parse_args(argv)
    rows = gather(args.scores, args.sequences)
    print(f"[scores] {args.scores.name}: {len(args.sequences)} sequences, {rows} score rows")


if __name__ == "__main__":
    main()
