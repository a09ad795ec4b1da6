"""The configured estimators over one generated video of a model: the cached perception scoring reads.

    python -m worldmemory.persistbench.perceive --sequence results/persistbench/sequences/S \
        --rollouts results/persistbench/rollouts/M/S --estimators '{"tracking": {"backend": "optical-flow"}}' \
        --out results/persistbench/perception/M/S

One job per (model, sequence), as the rollouts; it writes ``<capability>.npz`` for every
configured capability (perception.store), the tracker first, since the judge reads its masks.

``tracking`` (Method 2): the reference target is found in the generated video's first frame by
matching its appearance in the reference camera's first frame (the paper matches DINO features;
perception.tracking.locate), then tracked through the video; a first frame without the target
starts nothing, and the first later frame that shows it (matched to the reference's frame of the
same time) starts the track (``track_sequence``); field ``masks`` (T, H, W) per sequence. The
model's video is read at the reference camera's size (sequences.read_generated).

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

from worldmemory.common.progress import PERCEIVED, report
from worldmemory.common.rollout_index import read_unit_manifest
from worldmemory.common.video import read_video
from worldmemory.perception import registry
from worldmemory.perception.judge import mask_crop, parse_yes_no, same_entity_prompt
from worldmemory.perception.store import load_estimates, save_estimates
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.persistbench.sequences import load_sequences, read_generated

CAPABILITIES = ("tracking", "judge")
JUDGE_STRIDE = 8  # tracked frames between two judged ones before bisection (adaptive_judgements)


def perceive(sequences_dir, rollouts_dir, capability: str, backend_name: str,
             options: dict | None = None, estimates_dir=None) -> dict[str, dict]:
    """Estimates (sequence -> fields) of ``capability`` by ``backend_name`` (built with ``options``)
    over every rollout of a model (its manifest.json); the judge reads the tracker's masks in
    ``estimates_dir``."""
    tracked = None
    if capability == "judge":
        if estimates_dir is None:
            raise ValueError("the same-entity judge reads the tracker's masks: give --estimates DIR")
        tracked = load_estimates(Path(estimates_dir) / "tracking.npz")
    root = Path(rollouts_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    sequences, seq_root = load_sequences(sequences_dir)
    return _estimate(capability, backend_name, options, root, manifest, [seq_root / seq["id"] for seq in sequences],
                     tracked.of if tracked else None)


def perceive_sequence(seq_dir, sequence_rollouts, estimators: dict[str, dict]) -> dict[str, dict]:
    """Capability -> estimates of every configured estimator (capability -> {"backend",
    "options"}) over one sequence's rollout (``sequence_rollouts``, with its rollouts.json); the
    judge reads the tracker's masks of the same job. A sequence preparation dropped gets none."""
    unknown = sorted(set(estimators) - set(CAPABILITIES))
    if unknown:
        raise ValueError(f"unknown capabilities {', '.join(unknown)}; valid: {', '.join(CAPABILITIES)}")
    if "judge" in estimators and "tracking" not in estimators:
        raise ValueError("the same-entity judge reads the tracker's masks: configure a tracking estimator too")
    sequence_rollouts = Path(sequence_rollouts)
    manifest = read_unit_manifest(sequence_rollouts)
    estimates = {}
    for capability in CAPABILITIES:  # the tracker first
        if capability in estimators:
            spec = estimators[capability]
            if spec.get("skip"):
                estimates[capability] = {}
                continue
            estimates[capability] = _estimate(capability, spec["backend"], spec.get("options"),
                                              sequence_rollouts.parent, manifest, [Path(seq_dir)],
                                              estimates.get("tracking", {}).__getitem__)
    return estimates


def _estimate(capability: str, backend_name: str, options: dict | None, root: Path, manifest: dict,
              seq_dirs: list[Path], tracked) -> dict[str, dict]:
    """Estimates of ``capability`` over the prepared sequences ``seq_dirs`` that ``manifest`` has a
    rollout of (files under ``root``); ``tracked(sequence)``: the tracker's fields, for the judge."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}; valid: {', '.join(CAPABILITIES)}")
    rollouts = {r["sequence"]: r for r in manifest["rollouts"]}
    seq_dirs = [d for d in seq_dirs if d.name in rollouts]  # none of a sequence preparation dropped
    if not seq_dirs:
        return {}
    options = dict(options or {})
    if capability == "tracking":
        options.setdefault("min_pixels", MIN_PIXELS)
        stride = None
    else:
        stride = int(options.pop("stride", JUDGE_STRIDE))
    backend = registry.create(capability, backend_name, **options)
    estimates = {}
    for seq_dir in seq_dirs:
        seq = json.loads((seq_dir / "sequence.json").read_text())
        start = time.perf_counter()
        generated = read_generated(root / rollouts[seq["id"]]["video"], seq)
        reference = read_video(seq_dir / "reference.mkv")
        with np.load(seq_dir / "views.npz", allow_pickle=False) as views:
            reference_masks = views["reference_instance"] == seq["target_instance"]
        if capability == "tracking":
            estimates[seq["id"]] = {"masks": track_sequence(backend, generated, reference, reference_masks)}
        else:
            masks = tracked(seq["id"])["masks"]
            valid = (masks.sum((1, 2)) >= MIN_PIXELS) & reference_masks.any((1, 2))
            same = _same_entity_judge(backend, reference, reference_masks, generated, masks)
            same_entity, judged = adaptive_judgements(same, valid, stride)
            estimates[seq["id"]] = {"same_entity": same_entity, "judged": judged}
        print(f"[perceive {capability}] {manifest['model']} {seq['id']}: {time.perf_counter() - start:.1f} s",
              flush=True)
    return estimates


def track_sequence(tracker, generated, reference, reference_masks) -> np.ndarray:
    """Method 2's tracking of a generated video, (T, H, W) bool masks: the reference target found
    in its first frame (perception.tracking.locate, the stand-in for DINO matching to the
    reference camera's target), then followed by ``tracker``. A frame where the target has no
    mask (not found yet, or lost: the model had it out of view, blank, or gone for a while) is a
    new start: the target is looked for there by its look in the reference's frame of the same
    time, and followed from there if found (the frames after it take the new track)."""
    from worldmemory.perception.tracking import locate  # OpenCV: the judge's jobs need none of it

    masks = np.zeros(generated.shape[:3], dtype=bool)
    for t, (frame, ref, ref_mask) in enumerate(zip(generated, reference, reference_masks)):
        if masks[t].sum() >= MIN_PIXELS or ref_mask.sum() < MIN_PIXELS:
            continue
        first = locate(frame, ref, ref_mask, min_pixels=MIN_PIXELS)
        if first.sum() >= MIN_PIXELS:
            masks[t:] = np.asarray(tracker.track(generated, first, start=t), dtype=bool)[t:]
    return masks


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
    ap.add_argument("--sequence", required=True, type=Path, help="the prepared sequence's directory")
    ap.add_argument("--rollouts", required=True, type=Path,
                    help="the sequence's rollout directory of one model (<model's rollouts>/<sequence>)")
    ap.add_argument("--estimators", required=True, type=json.loads,
                    help='capability -> {"backend": registry name, "options": keyword arguments} (JSON)')
    ap.add_argument("--out", required=True, type=Path, help="the sequence's perception directory")
    args = ap.parse_args(argv)
    estimates = perceive_sequence(args.sequence, args.rollouts, args.estimators)
    for capability, spec in args.estimators.items():
        save_estimates(args.out / f"{capability}.npz", spec["backend"], estimates[capability])
    (args.out / PERCEIVED).write_text(json.dumps(sorted(args.estimators)) + "\n")
    model = read_unit_manifest(args.rollouts)["model"]
    report("persistbench", "perception", model, args.out.parent, PERCEIVED)


if __name__ == "__main__":
    main()
