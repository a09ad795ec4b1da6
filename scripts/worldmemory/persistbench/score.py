"""PersistBench scores of one model's rollout of one sequence: Perm, Cont, App per sequence and per frame (Method 2-3).

Reads a model's rollout of one prepared sequence (rollout.py, prepare.py) and writes the tidy
per-sequence rows and the per-frame rows of ``metrics``; one job per (model, sequence), as the
rollouts, and gather.py joins a model's sequences into the files the tables read. Perception (persistbench.perception)
has two needs, the tracker and the same-entity judge. For a reference model it is the ORACLE: the
tracker's mask in the generated frame is the instance map the model wrote (standing in for SAM2
initialised by DINO matching on the first frame) and the judge is the model's own record of
whether it drew the reference target (standing in for the VLM). Any other model is perceived by
the estimates its perception jobs cached (perceive.py); a capability configured as ``none`` makes
every metric NaN with the reason naming its config key (Perm needs both the tracker and the
judge, and Cont and App average the frames where Perm holds). The reference masks are the
ground-truth crops of the panorama. App pools the patch features of the full generated and
reference frames under their masks (the non-learned descriptor by default, DINOv2 when
configured).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from worldmemory.common.progress import report
from worldmemory.common.provenance import write_job_info
from worldmemory.common.rollout_index import read_unit_manifest
from worldmemory.common.video import read_video
from worldmemory.perception import registry
from worldmemory.perception.base import Unavailable
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.perception.features import feature_backend
from worldmemory.persistbench import metrics
from worldmemory.persistbench.gather import FRAMES, INFO, SCORES
from worldmemory.persistbench.perception import (
    CAPABILITIES,
    MIN_PIXELS,
    EstimatedPerception,
    OraclePerception,
    estimated_sources,
)
from worldmemory.persistbench.sequences import load_sequences, read_generated


def score_model(sequences_dir, rollouts_dir, backend, alpha: float = metrics.ALPHA,
                min_pixels: int = MIN_PIXELS, estimates: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-sequence rows, per-frame rows) of one model (its manifest.json), in the sequences'
    manifest order. A reference model is perceived by the oracle, any other by ``estimates``
    (perception.estimated_sources)."""
    root = Path(rollouts_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    sequences, seq_root = load_sequences(sequences_dir)
    rollouts = {r["sequence"]: r for r in manifest["rollouts"]}
    parts = []
    for seq in sequences:
        if seq["id"] not in rollouts:
            raise ValueError(f"model {manifest['model']!r} has no rollout of sequence {seq['id']}")
        parts.append(score_rollout(seq, seq_root / seq["id"], root, manifest, rollouts[seq["id"]], backend, alpha,
                                   min_pixels, estimates))
    return (pd.concat([p[0] for p in parts], ignore_index=True), pd.concat([p[1] for p in parts], ignore_index=True))


def score_sequence(seq_dir, sequence_rollouts, backend, alpha: float = metrics.ALPHA, min_pixels: int = MIN_PIXELS,
                   backends: dict | None = None, estimates_dir=None) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(per-sequence rows, per-frame rows) of one model's rollout of the prepared sequence in
    ``seq_dir`` (``sequence_rollouts``, with its rollouts.json); a model without truth channels
    is perceived through ``backends`` (capability -> name) and the estimates in ``estimates_dir``.
    None for a sequence preparation dropped."""
    seq_dir, sequence_rollouts = Path(seq_dir), Path(sequence_rollouts)
    seq = json.loads((seq_dir / "sequence.json").read_text())
    manifest = read_unit_manifest(sequence_rollouts)
    if "dropped" in seq:
        return None
    if not manifest["rollouts"]:
        raise ValueError(f"{sequence_rollouts}: no rollout of sequence {seq['id']}; rerun its rollout job")
    estimates = None if manifest["ground_truth"] else estimated_sources(backends or {}, estimates_dir)
    return score_rollout(seq, seq_dir, sequence_rollouts.parent, manifest, manifest["rollouts"][0], backend, alpha,
                         min_pixels, estimates)


def score_rollout(seq: dict, seq_dir: Path, root: Path, manifest: dict, entry: dict, backend, alpha: float,
                  min_pixels: int, estimates: dict | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-sequence rows, per-frame rows) of the rollout ``entry`` of ``manifest`` (files under
    ``root``) of the prepared sequence ``seq``."""
    model = manifest["model"]
    with np.load(seq_dir / "views.npz", allow_pickle=False) as views:
        ref_masks = views["reference_instance"] == seq["target_instance"]
        visible = views["visible_in_input"]
    if manifest["ground_truth"]:
        with np.load(root / entry["truth"], allow_pickle=False) as truth:
            perception = OraclePerception(truth["instance"] == seq["target_instance"], truth["same_entity"])
    else:
        perception = EstimatedPerception(estimates or estimated_sources({}, None), seq["id"])
    try:
        per_frame = frame_scores(read_generated(root / entry["video"], seq), seq, seq_dir.parent, ref_masks,
                                 perception, backend, alpha, min_pixels)
        rows = metrics.sequence_rows(per_frame, visible)
    except Unavailable as e:
        per_frame = {k: np.full(seq["n_frames"], np.nan) for k in ("perm", "cont", "app")}
        rows = [{**r, "value": np.nan, "n_tracked": 0, "reason": str(e)}
                for r in metrics.sequence_rows(per_frame, visible)]
    perm = [r["value"] for r in rows if r["metric"] == "perm" and r["aggregation"] == "tracked"]
    print(f"[score] {model} {seq['id']}: Perm invisible {perm[0]:.3f}, visible {perm[1]:.3f}", flush=True)
    return (metrics.scores_frame(rows, model, seq["id"], seq["kind"], seq["category"]),
            metrics.frames_frame(metrics.frame_rows(per_frame, visible), model, seq["id"], seq["kind"]))


def frame_scores(generated, seq: dict, seq_root: Path, ref_masks, perception, backend,
                 alpha: float, min_pixels: int) -> dict:
    """Per-frame Perm/Cont/App of one rollout: the tracker, initialised on the generated first
    frame with the reference target's first mask (the paper matches it by DINO features), and
    the judge come from ``perception``; App pools ``backend``'s features under each mask. The
    tracker is asked first, so a model without one is Unavailable whatever its frame size.
    ``min_pixels`` is the bar for a valid tracker mask and for the reference showing the target
    (frames below it in the reference leave every metric, metrics module doc)."""
    pred_masks = perception.track(generated, ref_masks[0])
    reference = read_video(seq_root / seq["id"] / "reference.mkv")
    if generated.shape != reference.shape:
        raise ValueError(f"{seq['id']}: generated video {generated.shape} != reference "
                         f"{reference.shape}; read it with read_generated (the reference's size) and "
                         "give it one frame per reference frame")
    same_entity = perception.same_entity(generated, reference, pred_masks, ref_masks)
    tracked = pred_masks.sum(axis=(1, 2)) >= min_pixels
    return metrics.frame_scores(tracked, same_entity, pred_masks, ref_masks,
                                metrics.pooled_features(backend, generated, pred_masks),
                                metrics.pooled_features(backend, reference, ref_masks), alpha,
                                min_pixels)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequence", required=True, type=Path, help="the prepared sequence's directory")
    parser.add_argument("--rollouts", required=True, type=Path,
                        help="the sequence's rollout directory of one model (<model's rollouts>/<sequence>)")
    parser.add_argument("--perception", default="{}",
                        help="capability -> backend (JSON) of a model without truth channels")
    parser.add_argument("--estimates", help="the sequence's perception directory (perceive.py's files)")
    parser.add_argument("--features", default=ColourGradientPatches.name, choices=registry.names("features")[:-1])
    parser.add_argument("--features-model", help="the learned features' checkpoint (directory or Hugging Face id)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--alpha", type=float, default=metrics.ALPHA, help="Cont's decay rate")
    parser.add_argument("--out", required=True, type=Path,
                        help=f"the sequence's score directory: {SCORES}, {FRAMES} and {INFO}")
    args = parser.parse_args(argv)
    manifest = read_unit_manifest(args.rollouts)
    backends = {} if manifest["ground_truth"] else json.loads(args.perception)
    dropped = "dropped" in json.loads((args.sequence / "sequence.json").read_text())
    backend = None if dropped else feature_backend(args.features, args.features_model, args.device)
    scored = score_sequence(args.sequence, args.rollouts, backend, args.alpha, backends=backends,
                            estimates_dir=args.estimates)
    scores, frames = scored or (pd.DataFrame(columns=metrics.COLUMNS), pd.DataFrame(columns=metrics.FRAME_COLUMNS))
    metrics.write_scores(scores, args.out / SCORES)
    metrics.write_frames(frames, args.out / FRAMES)
    perceived = {c: "oracle" if manifest["ground_truth"] else backends.get(c, registry.NONE) for c in CAPABILITIES}
    write_job_info(args.out / INFO, model=manifest["model"], perception=perceived,
                   features=backend.name if backend else None, device=args.device)
    report("persistbench", "scores", manifest["model"], args.out.parent, INFO)


if __name__ == "__main__":
    main()
