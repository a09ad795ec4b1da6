"""Write one model's WorldMemBench rollouts: a video per case and trajectory, plus ground truth.

Every case is rolled out along each of its departure-and-revisit trajectories (Section 3.3).
OUT/{case}/{trajectory}/ gets video.mkv (lossless, at the trajectory's fps), truth.npz (the
reference model's ground truth of what it drew: instance, depth, poses, K and, for an event, its
started flag and progress; see reference_models.run_reference) and trajectory.json (the target
camera path and its phases). OUT/manifest.json lists the rollouts, sorted, without timestamps, so
equal inputs give equal bytes:

    {"model": NAME, "kind": "reference", "ground_truth": true, "params": {resolved parameters},
     "rollouts": [{"case", "family", "trajectory", "video", "truth", "trajectory_file",
                   "instances": {target id: instance id}}, ...]}

with file paths relative to OUT. Only the reference models of the embedded default are
implemented; external world models (a command template from the config) come later.
"""

from __future__ import annotations

import argparse
import json
import time
import zipfile
from pathlib import Path

import numpy as np

from worldmemory.common.video import write_video
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import load_cases
from worldmemory.worldmembench.reference_models import (
    case_world,
    horizontal_fov,
    resolve_params,
    run_reference,
)

KINDS = ("reference", "external")
CAMERA_KEYS = ("width", "height", "fov_deg")  # trajectory parameters that follow the case camera


def write_rollouts(cases_dir, model: str, kind: str, params: dict, trajectory_params: dict,
                   out_dir, width: int | None = None, height: int | None = None,
                   reference: str | None = None) -> dict:
    """Roll out reference model ``reference`` (default: ``model``) on every case and trajectory
    under ``cases_dir`` and write the videos, ground truth and manifest under ``out_dir``.

    Trajectories are ``trajectories.build(name, **trajectory_params)`` with the case camera's
    horizontal FoV and the frame size ``width`` x ``height`` (default: the case camera's).
    Prints one progress line per rollout and returns the manifest.
    """
    if kind == "external":
        raise NotImplementedError("--kind external (a world model run from a command template) "
                                  "is not implemented yet; only --kind reference is")
    if kind != "reference":
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    reference = reference or model
    params = resolve_params(reference, params)
    clash = [k for k in CAMERA_KEYS if k in trajectory_params]
    if clash:
        raise ValueError(f"trajectory parameters {', '.join(clash)} are set from the case camera "
                         f"and --width/--height; remove them")
    out_dir = Path(out_dir)
    rollouts = []
    for case in load_cases(cases_dir):
        camera = case["camera"]
        w, h = width or camera["width"], height or camera["height"]
        fov = np.degrees(horizontal_fov(np.asarray(camera["intrinsics"]), camera["width"]))
        targets = {e.target: e.instance for e in case_world(case).entities()}
        for name in case["trajectories"]:
            start = time.perf_counter()
            trajectory = tj.build(name, **trajectory_params, width=w, height=h, fov_deg=fov)
            frames, truth = run_reference(reference, params, case, trajectory, w, h)
            rel = f"{case['id']}/{name}"
            write_video(out_dir / rel / "video.mkv", frames, trajectory.fps)
            save_npz(out_dir / rel / "truth.npz", truth)
            (out_dir / rel / "trajectory.json").write_text(json.dumps(trajectory.to_json()) + "\n")
            rollouts.append({
                "case": case["id"],
                "family": case["family"],
                "trajectory": name,
                "video": f"{rel}/video.mkv",
                "truth": f"{rel}/truth.npz",
                "trajectory_file": f"{rel}/trajectory.json",
                "instances": {t["id"]: targets[t["id"]] for t in case["targets"]},
            })
            print(f"{model} {rel}: {len(frames)} frames {w}x{h} in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
    manifest = {"model": model, "kind": kind, "ground_truth": True, "params": params,
                "rollouts": sorted(rollouts, key=lambda r: (r["case"], r["trajectory"]))}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def save_npz(path, arrays: dict) -> None:
    """np.savez_compressed with fixed zip entry dates, so equal arrays give equal bytes (numpy
    stamps each entry with the current time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            entry = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(entry, "w") as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)


def _json_object(text: str, flag: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{flag}: invalid JSON {text!r}: {e}") from e
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object, got {text!r}")
    return value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", required=True, help="directory of case directories")
    parser.add_argument("--model", required=True, help="model name, recorded in the manifest")
    parser.add_argument("--kind", choices=KINDS, default="reference")
    parser.add_argument("--reference", default=None,
                        help="reference model to run (default: --model)")
    parser.add_argument("--params", default="{}", help="model parameters (JSON object)")
    parser.add_argument("--trajectory-params", default="{}",
                        help="trajectories.build keyword arguments (JSON object)")
    parser.add_argument("--width", type=int, default=None, help="default: the case camera's")
    parser.add_argument("--height", type=int, default=None, help="default: the case camera's")
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    try:
        params = _json_object(args.params, "--params")
        trajectory_params = _json_object(args.trajectory_params, "--trajectory-params")
        if args.kind == "reference":
            resolve_params(args.reference or args.model, params)
    except ValueError as e:
        parser.error(str(e))
    write_rollouts(args.cases, args.model, args.kind, params, trajectory_params, args.out,
                   args.width, args.height, args.reference)


if __name__ == "__main__":
    main()
