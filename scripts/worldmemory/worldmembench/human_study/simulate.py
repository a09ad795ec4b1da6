"""Simulated annotators of WorldMemBench's human study (Appendix F), so that Tables 6 and 7 run end
to end without people: each answer is drawn from the automatic score in the hidden key plus
Gaussian noise of a set level (standard deviation ``noise``, in score units), seeded per study,
annotator and seed; the noise draws do not depend on the level, so raising it only moves answers
further from the key.

- static: the annotator perceives the difference score_a - score_b + noise * sqrt(2) * e (each
  side read with noise); a perceived difference within TIE_BAND * noise of 0 is a Tie, else the
  side it favours. Noise 0 gives the automatic preference (pairwise agreement 100%).
- dynamic: the start decision and each of the eight gated items (0/1 in the key: whether the
  question's expected answer holds) is read as value + noise * e and held above 0.5; a held item
  is answered with the key's expected answer, another with the other one (Yes = 1, No = 0). An
  annotator who sees no start answers every item 0 (the event gate). Noise 0 gives the judge's
  answers.
Our choices (the paper's annotators are people): the Gaussian reading and the tie band.

    python -m worldmemory.worldmembench.human_study.simulate --study static --key static/key.json \\
        --annotators 3 --noise 0.1 --seed 0 --out static/exports
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from worldmemory.common.seeds import stable_rng
from worldmemory.worldmembench.human_study.exports import (
    N_ITEMS,
    NAMESPACE,
    STUDIES,
    UNIT,
    export_name,
    preference,
    write_json,
)

TIE_BAND = 0.5  # a perceived difference within half the noise level reads as a Tie


def annotator_names(n: int) -> list[str]:
    return [f"sim{i}" for i in range(1, n + 1)]


def simulate(study: str, key: dict, annotator: str, noise: float, seed: int) -> dict:
    """One simulated annotator's export of ``study`` (exports.py's contract) from its key."""
    rng = stable_rng(annotator, f"{NAMESPACE}/{seed}/{study}")
    unit = UNIT[study]
    rows = key[f"{unit}s"]
    if study == "static":
        draws = rng.standard_normal(len(rows))
        answers = [{"pair": row["pair"], "choice": _choice(row["score_a"], row["score_b"], noise, e)}
                   for row, e in zip(rows, draws)]
    else:
        draws = rng.standard_normal((len(rows), 1 + N_ITEMS))
        answers = []
        for row, e in zip(rows, draws):
            judge = row["judge"]
            started = bool(float(judge["started"]) + noise * e[0] > 0.5)
            held = [item + noise * x > 0.5 for item, x in zip(judge["items"], e[1:])]
            items = [int(started and (expected if h else 1 - expected)) for h, expected in zip(held, row["expected"])]
            answers.append({"instance": row["instance"], "started": started, "items": items})
    return {"study": study, "study_set": key["study_set"], "annotator": annotator, "answers": answers}


def _choice(score_a: float, score_b: float, noise: float, e: float) -> str:
    if noise == 0:
        return preference(score_a, score_b)
    perceived = score_a - score_b + noise * math.sqrt(2) * e
    return "tie" if abs(perceived) <= TIE_BAND * noise else "A" if perceived > 0 else "B"


def simulated_exports(study: str, key: dict, annotators: int, noise: float, seed: int) -> list[dict]:
    return [simulate(study, key, name, noise, seed) for name in annotator_names(annotators)]


def check_noise(noise: float, where: str) -> float:
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"{where} is {noise!r}, expected a noise level >= 0 (score units); fix it")
    return float(noise)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", choices=STUDIES, required=True)
    ap.add_argument("--key", required=True, type=Path, help="the study's key.json")
    ap.add_argument("--annotators", type=int, default=3)
    ap.add_argument("--noise", type=float, required=True, help="standard deviation of the reading, score units")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, type=Path, help="the study's exports/ directory")
    args = ap.parse_args(argv)
    noise = check_noise(args.noise, "--noise (worldmembench.human_study.noise)")
    key = json.loads(args.key.read_text())
    for export in simulated_exports(args.study, key, args.annotators, noise, args.seed):
        write_json(export, args.out / export_name(export["annotator"], args.study))
    print(f"{args.out}: {args.annotators} simulated annotators of the {args.study} study at noise {noise}")


if __name__ == "__main__":
    main()
