"""One estimator over every generated video of a model: the cached perception scoring reads.

    python -m worldmemory.persistbench.perceive --sequences DIR --rollouts DIR \
        --capability tracking --backend optical-flow --out results/persistbench/perception/M/tracking.npz

``tracking`` (Method 2): the reference target is found in the generated video's first frame by
matching its appearance in the reference camera's first frame (the paper matches DINO features;
perception.tracking.locate), then tracked through the video; field ``masks`` (T, H, W) per
sequence. A reference model needs none of this: its scoring reads the masks it wrote (the oracle).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from worldmemory.common.video import read_video
from worldmemory.perception import registry
from worldmemory.perception.store import save_estimates
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.persistbench.prepare import load_sequences

CAPABILITIES = ("tracking",)


def perceive(sequences_dir, rollouts_dir, capability: str, backend_name: str,
             options: dict | None = None) -> dict[str, dict]:
    """Estimates (sequence -> fields) of ``capability`` by ``backend_name`` (built with ``options``)
    over every rollout."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}; valid: {', '.join(CAPABILITIES)}")
    from worldmemory.perception.tracking import locate

    tracker = registry.create(capability, backend_name, **{"min_pixels": MIN_PIXELS, **(options or {})})
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
            reference_mask = views["reference_instance"][0] == seq["target_instance"]
        first = locate(generated[0], reference[0], reference_mask, min_pixels=MIN_PIXELS)
        estimates[seq["id"]] = {"masks": tracker.track(generated, first).astype(bool)}
        print(f"[perceive {capability}] {manifest['model']} {seq['id']}: {time.perf_counter() - start:.1f} s",
              flush=True)
    return estimates


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", required=True)
    ap.add_argument("--rollouts", required=True, help="one model's rollout directory")
    ap.add_argument("--capability", required=True, choices=CAPABILITIES)
    ap.add_argument("--backend", required=True, help="the backend's registry name (perception.registry)")
    ap.add_argument("--options", type=json.loads, default={},
                    help="the backend's keyword arguments (JSON; perception.estimators)")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    estimates = perceive(args.sequences, args.rollouts, args.capability, args.backend, args.options)
    save_estimates(args.out, args.backend, estimates)


if __name__ == "__main__":
    main()
