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
from pathlib import Path

from worldmemory.common.progress import SCORED
from worldmemory.common.provenance import joined_job_info, write_info
from worldmemory.persistbench.perception import FAMILY
from worldmemory.report.tables import concat_csv

SCORES, FRAMES, INFO = f"{FAMILY}.csv", f"{FAMILY}_frames.csv", SCORED  # a sequence's files, INFO last


def gather(scores_dir, sequences: list[str]) -> int:
    """Write the model's files from its sequences' (in this order); the number of score rows."""
    scores_dir = Path(scores_dir)
    dirs = [scores_dir / "sequences" / sequence for sequence in sequences]
    rows = concat_csv([d / SCORES for d in dirs], scores_dir / SCORES)
    concat_csv([d / FRAMES for d in dirs], scores_dir / FRAMES)
    write_info(scores_dir / f"{FAMILY}.json", joined_job_info([d / INFO for d in dirs]))
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
