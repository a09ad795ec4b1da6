"""One estimator over every generated video of a model: the cached perception scoring reads.

    python -m worldmemory.persistbench.perceive --sequences DIR --rollouts DIR \
        --capability tracking --backend optical-flow --out results/persistbench/perception/M/tracking.npz

``tracking`` (Method 2): the reference target is found in the generated video's first frame by
matching its appearance in the reference camera's first frame (the paper matches DINO features;
perception.tracking.locate), then tracked through the video; field ``masks`` (T, H, W) per
sequence.

``judge`` (Method 2): in every frame where the tracker (the model's cached ``tracking.npz``, read
from ``--estimates``) has a valid mask, whether the tracked crop shows the same entity as the
reference camera's crop of the target (perception.judge). The paper's judge is "adaptive
recursive"; our reading (:func:`adaptive_judgements`): judge every ``stride``-th tracked frame,
fill the frames between two samples that agree with their answer, and bisect between two that
disagree until the change is located (``stride`` 1 judges every frame). Fields ``same_entity``
and ``judged`` (T,) bool. A reference model needs none of this: its scoring reads the masks it
wrote and its record of what it drew (the oracle).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from worldmemory.common.video import read_video
from worldmemory.perception import registry
from worldmemory.perception.judge import mask_crop, parse_yes_no, same_entity_prompt
from worldmemory.perception.store import load_estimates, save_estimates
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.persistbench.sequences import load_sequences

CAPABILITIES = ("tracking", "judge")
JUDGE_STRIDE = 8  # tracked frames between two judged ones before bisection (adaptive_judgements)


def perceive(sequences_dir, rollouts_dir, capability: str, backend_name: str,
             options: dict | None = None, estimates_dir=None) -> dict[str, dict]:
    """Estimates (sequence -> fields) of ``capability`` by ``backend_name`` (built with ``options``)
    over every rollout; the judge reads the tracker's masks in ``estimates_dir``."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}; valid: {', '.join(CAPABILITIES)}")
    options = dict(options or {})
    if capability == "tracking":
        from worldmemory.perception.tracking import locate  # OpenCV: the judge's jobs need none of it

        options.setdefault("min_pixels", MIN_PIXELS)
        stride = None
    else:
        stride = int(options.pop("stride", JUDGE_STRIDE))
        if estimates_dir is None:
            raise ValueError("the same-entity judge reads the tracker's masks: give --estimates DIR")
        tracked = load_estimates(Path(estimates_dir) / "tracking.npz")
    backend = registry.create(capability, backend_name, **options)
    root = Path(rollouts_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    rollouts = {r["sequence"]: r for r in manifest["rollouts"]}
    sequences, seq_root = load_sequences(sequences_dir)
    estimates = {}
    for seq in sequences:
        start = time.perf_counter()
        generated = read_video(root / rollouts[seq["id"]]["video"])
        reference = read_video(seq_root / seq["id"] / "reference.mkv")
        with np.load(seq_root / seq["id"] / "views.npz") as views:
            reference_masks = views["reference_instance"] == seq["target_instance"]
        if capability == "tracking":
            first = locate(generated[0], reference[0], reference_masks[0], min_pixels=MIN_PIXELS)
            estimates[seq["id"]] = {"masks": backend.track(generated, first).astype(bool)}
        else:
            masks = tracked.of(seq["id"])["masks"]
            valid = (masks.sum((1, 2)) >= MIN_PIXELS) & reference_masks.any((1, 2))
            same = _same_entity_judge(backend, reference, reference_masks, generated, masks)
            same_entity, judged = adaptive_judgements(same, valid, stride)
            estimates[seq["id"]] = {"same_entity": same_entity, "judged": judged}
        print(f"[perceive {capability}] {manifest['model']} {seq['id']}: {time.perf_counter() - start:.1f} s",
              flush=True)
    return estimates


def _same_entity_judge(backend, reference, reference_masks, generated, masks):
    """judge(t): whether ``backend`` sees the reference's target in the tracked crop of frame t."""

    def judge(t: int) -> bool:
        content = same_entity_prompt(mask_crop(reference[t], reference_masks[t]), mask_crop(generated[t], masks[t]))
        return parse_yes_no(backend.ask(content))

    return judge


def adaptive_judgements(judge, valid: np.ndarray, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """(answer, judged) per frame: ``judge(t)`` asked at every ``stride``-th frame of each run of
    ``valid`` frames (and its last); between two samples that agree their answer is filled in,
    between two that disagree the interval is bisected until the change is between neighbours.
    Frames that are not valid are False and not judged."""
    if stride < 1:
        raise ValueError(f"the judge's stride must be >= 1, got {stride}")
    n = len(valid)
    answer, judged = np.zeros(n, bool), np.zeros(n, bool)

    def ask(t):
        if not judged[t]:
            answer[t], judged[t] = judge(t), True
        return answer[t]

    def settle(a, b):  # a <= b: every frame of [a, b] answered
        agree = ask(a) == ask(b)
        if b - a <= 1:
            return
        if agree:
            answer[a + 1:b] = answer[a]
            return
        mid = (a + b) // 2
        settle(a, mid)
        settle(mid, b)

    edges = np.flatnonzero(np.diff(np.concatenate([[0], valid.astype(np.int8), [0]])))
    for first, end in zip(edges[0::2], edges[1::2]):
        samples = sorted(set(range(first, end, stride)) | {end - 1})
        for a, b in zip(samples, samples[1:] or samples):
            settle(a, b)
    return answer, judged


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", required=True)
    ap.add_argument("--rollouts", required=True, help="one model's rollout directory")
    ap.add_argument("--capability", required=True, choices=CAPABILITIES)
    ap.add_argument("--backend", required=True, help="the backend's registry name (perception.registry)")
    ap.add_argument("--options", type=json.loads, default={},
                    help="the backend's keyword arguments (JSON; perception.estimators)")
    ap.add_argument("--estimates", help="the model's perception directory (the judge reads tracking.npz there)")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    estimates = perceive(args.sequences, args.rollouts, args.capability, args.backend, args.options,
                         args.estimates)
    save_estimates(args.out, args.backend, estimates)


if __name__ == "__main__":
    main()
