"""Write one 4D model's PersistBench rollouts: the reference camera's view of every sequence.

A reference model (reference_models.py) writes OUT/<sequence>/video.mkv and truth.npz (what it
drew: 'instance', 'same_entity'). An external model is a command template, run once per
sequence under the studies' shared command contract (worldmemory.external: placeholders only in
plain unquoted words, values shell-quoted) with PersistBench's own request: the directory holds
``input.mkv`` (the input camera's video), ``cameras.json`` (input and target yaw/pitch paths in
degrees, fov_deg, width, height, and per-frame camera-to-world rotations of both paths, OpenCV
axes, the camera at the origin) and ``request.json`` with every placeholder's value.
Placeholders: {request} {video} {input_video} {cameras} {width} {height} {n_frames} {fps}
{sequence}. The command must write ``{video}`` (OUT/<sequence>/video.mp4, any container decord
reads) with n_frames frames of the target (reference) camera's view. Its output goes to
OUT/<sequence>/command.log and, with ``--log-dir DIR``, is copied to DIR/<sequence>.log, which
outlives a failed job (Snakemake deletes OUT); with ``--timeout-minutes M`` the job's commands
together get M minutes (the model's ``runtime``: see worldmemory.external.TimeLimit).
OUT/manifest.json lists the rollouts (sorted, no timestamps):

    {"model", "kind", "ground_truth", "params", "rollouts": [{"sequence", "video", "truth"}]}
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.npz import save_npz
from worldmemory.common.video import read_video, write_video
from worldmemory.external import VIDEO_NAME, TimeLimit, check_template, check_video, run_model
from worldmemory.persistbench.equirect import view_rotation
from worldmemory.persistbench.reference_models import resolve_params, run_reference
from worldmemory.persistbench.sequences import load_sequences

KINDS = ("reference", "external")
PLACEHOLDERS = ("request", "video", "input_video", "cameras", "width", "height", "n_frames", "fps",
                "sequence")


def write_rollouts(sequences_dir, model: str, kind: str, out_dir, params: dict | None = None,
                   reference: str | None = None, command: str | None = None,
                   timeout_minutes: float | None = None, log_dir=None) -> dict:
    """Roll out ``model`` on every prepared sequence; write videos and the manifest. An external
    ``command``'s runs together get ``timeout_minutes`` (None: no limit); each one's log is
    copied to ``log_dir``/<sequence>.log if ``log_dir`` is given."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    if kind == "external":
        if not command:
            raise ValueError("--kind external needs --command (a command template)")
        check_template(command, PLACEHOLDERS)
        params = {"command": command}
    else:
        reference = reference or model
        params = resolve_params(reference, params or {})
    time_limit = TimeLimit(timeout_minutes)
    sequences, root = load_sequences(sequences_dir)
    out_dir = Path(out_dir)
    rollouts = []
    for seq in sequences:
        start = time.perf_counter()
        seq_dir, own = root / seq["id"], out_dir / seq["id"]
        own.mkdir(parents=True, exist_ok=True)
        if kind == "external":
            log_copy = Path(log_dir) / f"{seq['id']}.log" if log_dir else None
            video = run_model(command, write_request(seq, seq_dir, own), own / "command.log",
                              PLACEHOLDERS, time_limit, log_copy)
            check_video(video, seq["n_frames"], f"external model on {seq['id']}",
                        "the model must write one frame per frame of the input video (request.json)")
            entry = {"video": f"{seq['id']}/{video.name}", "truth": None}
        else:
            with np.load(seq_dir / "panorama.npz") as pano, np.load(seq_dir / "views.npz") as views:
                instance, visible = pano["instance"], views["visible_in_input"]
            background = seq_dir / "background.png"
            frames, truth = run_reference(
                reference, params, read_video(seq_dir / "panorama.mkv"), instance,
                np.asarray(Image.open(background).convert("RGB")) if background.is_file() else None,
                seq["cameras"], seq["target_instance"], visible)
            write_video(own / "video.mkv", frames, seq["fps"])
            save_npz(own / "truth.npz", truth)
            entry = {"video": f"{seq['id']}/video.mkv", "truth": f"{seq['id']}/truth.npz"}
        rollouts.append({"sequence": seq["id"], **entry})
        print(f"{model} {seq['id']}: {seq['n_frames']} frames in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    manifest = {"model": model, "kind": kind, "ground_truth": kind == "reference",
                "params": params, "rollouts": sorted(rollouts, key=lambda r: r["sequence"])}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def write_request(seq: dict, seq_dir: Path, out_dir: Path) -> dict:
    """The request files of one sequence for an external model; returns the placeholder values."""
    request_dir = out_dir / "request"
    request_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(seq_dir / "input.mkv", request_dir / "input.mkv")
    cams = seq["cameras"]
    cameras = {key: cams[key] for key in ("input_yaw", "input_pitch", "reference_yaw",
                                          "reference_pitch", "fov_deg", "width", "height")}
    for name in ("input", "reference"):
        cameras[f"{name}_rotations"] = [view_rotation(y, p).round(9).tolist() for y, p in
                                        zip(cams[f"{name}_yaw"], cams[f"{name}_pitch"])]
    (request_dir / "cameras.json").write_text(json.dumps(cameras) + "\n")
    request = {"sequence": seq["id"], "label": seq["id"],
               "input_video": str((request_dir / "input.mkv").resolve()),
               "cameras": str((request_dir / "cameras.json").resolve()),
               "width": cams["width"], "height": cams["height"], "n_frames": seq["n_frames"],
               "fps": seq["fps"], "video": str((out_dir / VIDEO_NAME).resolve())}
    (request_dir / "request.json").write_text(json.dumps(request, indent=2) + "\n")
    return {**request, "request": str((request_dir / "request.json").resolve())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", required=True, help="prepared sequences (prepare.py)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--kind", choices=KINDS, default="reference")
    parser.add_argument("--reference", help="reference model to run (default: --model)")
    parser.add_argument("--params", default="{}", help="reference model parameters (JSON)")
    parser.add_argument("--command", help="--kind external: command template")
    parser.add_argument("--timeout-minutes", type=float, default=None,
                        help="--kind external: minutes for all the job's commands together (the "
                             "model's runtime); the command running when they are up is killed")
    parser.add_argument("--log-dir", default=None,
                        help="--kind external: copy each command's log to DIR/<sequence>.log, "
                             "outside --out, which Snakemake deletes when the job fails")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.kind == "external":
            if args.command is None:
                raise ValueError("--kind external needs --command")
            check_template(args.command, PLACEHOLDERS)
        TimeLimit(args.timeout_minutes)
    except ValueError as e:
        parser.error(str(e))
    write_rollouts(args.sequences, args.model, args.kind, args.out, json.loads(args.params),
                   args.reference, args.command, args.timeout_minutes, args.log_dir)


if __name__ == "__main__":
    main()
