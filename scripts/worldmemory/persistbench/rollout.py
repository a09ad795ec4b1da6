"""Write one 4D model's PersistBench rollout of one sequence: the reference camera's view.

One job per (model, sequence), as WorldMemBench's per case. A reference model
(reference_models.py) writes OUT/<sequence>/video.mkv and truth.npz (what it drew: 'instance',
'same_entity'). An external model is a command template, run once per sequence under the
studies' shared command contract (worldmemory.external: placeholders stand only for
workflow-made values, each checked to be a safe word) with PersistBench's own request: the directory holds
``input.mkv`` (the input camera's video), ``cameras.json`` (input and target yaw/pitch paths in
degrees, fov_deg, width, height, and per-frame camera-to-world rotations of both paths, OpenCV
axes, the camera at the origin) and ``request.json`` with every placeholder's value.
Placeholders: {request} {video} {input_video} {cameras} {width} {height} {n_frames} {fps}
{sequence}. The command must write ``{video}`` (OUT/<sequence>/video.mp4, any container decord
reads) with n_frames frames of the target (reference) camera's view. Its output goes to one
log, capped (worldmemory.external.command): DIR/<sequence>.log with ``--log-dir DIR``, which
outlives a failed job (Snakemake deletes OUT), else OUT/<sequence>/command.log; with
``--timeout-minutes M`` the job's commands together get M minutes (the model's ``runtime``:
see worldmemory.external.TimeLimit); with ``--store DIR`` the rollout is made in the store and
linked into OUT once finished (common.rollout_store), ``--model-digest`` (the model entry's
version and files) part of its identity. Every rollout records its cost (cost.json: common.usage). OUT/<sequence>/
rollouts.json lists the sequence's rollout (none for a sequence preparation dropped), and the
model's OUT/manifest.json (common.rollout_index.collect) all of them, sorted, no timestamps:

    {"model", "kind", "ground_truth", "params", "rollouts": [{"sequence", "video", "truth", "cost"}]}
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.equirect import view_rotation
from worldmemory.common.npz import save_npz
from worldmemory.common.progress import report
from worldmemory.common.rollout_index import COST, UNIT_MANIFEST, collect, write_cost, write_unit_manifest
from worldmemory.common.rollout_store import RolloutStore, add_store_arguments, identity_digest, with_model
from worldmemory.common.usage import own_usage
from worldmemory.common.video import read_video, write_video
from worldmemory.external import KINDS, VIDEO_NAME, TimeLimit, check_video, run_model, run_params
from worldmemory.persistbench.reference_models import resolve_params, run_reference
from worldmemory.persistbench.sequences import load_sequences

PLACEHOLDERS = ("request", "video", "input_video", "cameras", "width", "height", "n_frames", "fps",
                "sequence")


def model_params(model: str, kind: str, params: dict | None, reference: str | None, command: str | None) -> dict:
    """The manifest's ``params`` (worldmemory.external.run_params)."""
    return run_params(kind, command, PLACEHOLDERS, lambda: resolve_params(reference or model, params or {}))


def write_rollouts(sequences_dir, model: str, kind: str, out_dir, params: dict | None = None,
                   reference: str | None = None, command: str | None = None,
                   timeout_minutes: float | None = None, log_dir=None) -> dict:
    """Roll out ``model`` on every prepared sequence (roll_out_sequence, sharing one time
    limit) and write the model's manifest (collect); returns it."""
    time_limit = TimeLimit(timeout_minutes)
    sequences, root = load_sequences(sequences_dir)
    for seq in sequences:
        roll_out_sequence(root / seq["id"], model, kind, out_dir, params, reference, command, time_limit, log_dir)
    return collect(out_dir, sorted(seq["id"] for seq in sequences))


def roll_out_sequence(seq_dir, model: str, kind: str, out_dir, params: dict | None = None,
                      reference: str | None = None, command: str | None = None, time_limit: TimeLimit | None = None,
                      log_dir=None, store: Path | None = None, replayed: tuple[Path, ...] = (),
                      model_digest: str | None = None) -> dict:
    """Roll out ``model`` on the prepared sequence in ``seq_dir`` into ``out_dir``/<sequence>/ and
    write its manifest; returns it. An external ``command``'s run is limited by ``time_limit``,
    its log at ``log_dir``/<sequence>.log if given (else beside its request), the rollout made in the ``store``
    directory if given; ``replayed``: the sequence's rollout directories of the models whose videos
    the command replays, and ``model_digest`` (rollout_store.model_digest: the entry's version
    and files), part of the rollout's identity. A sequence preparation dropped gets no
    rollout."""
    params = model_params(model, kind, params, reference, command)
    seq_dir, out_dir = Path(seq_dir), Path(out_dir)
    seq = json.loads((seq_dir / "sequence.json").read_text())
    own = out_dir / seq["id"]
    manifest = {"model": model, "kind": kind, "ground_truth": kind == "reference", "params": params, "rollouts": []}
    if "dropped" in seq:
        own.mkdir(parents=True, exist_ok=True)
        write_unit_manifest(own, manifest)
        print(f"{model} {seq['id']}: dropped in preparation ({'; '.join(seq['dropped'])}), no rollout", flush=True)
        return manifest
    start = time.perf_counter()
    cost = {"video": None, "truth": None, "cost": f"{seq['id']}/{COST}"}
    if kind == "external":
        store = RolloutStore(store)
        log = Path(log_dir) / f"{seq['id']}.log" if log_dir else None
        replayed_videos = [v for r in replayed for v in sorted(Path(r).glob("video.*"))]
        identity = identity_digest(with_model({"command": command, "sequence": seq["id"], "cameras": seq["cameras"],
                                               "n_frames": seq["n_frames"], "fps": seq["fps"]}, model_digest),
                                   [seq_dir / "input.mkv", *replayed_videos])
        if store.fetch(seq["id"], identity, own):
            video, summary = next(own.glob("video.*")), "finished earlier"
        else:
            work = store.workdir(seq["id"], own)
            usage = {}
            video = run_model(command, write_request(seq, seq_dir, work), log or work / "command.log",
                              PLACEHOLDERS, time_limit or TimeLimit(None), usage=usage)
            check_video(video, seq["n_frames"], f"external model on {seq['id']}",
                        "the model must write one frame per frame of the input video (request.json)")
            write_cost(work, usage, seq["n_frames"])
            store.finish(seq["id"], identity, own)
            summary = "external"
        entry = {**cost, "video": f"{seq['id']}/{video.name}"}
    else:
        own.mkdir(parents=True, exist_ok=True)
        with (np.load(seq_dir / "panorama.npz", allow_pickle=False) as pano,
              np.load(seq_dir / "views.npz", allow_pickle=False) as views):
            instance, visible = pano["instance"], views["visible_in_input"]
        background = seq_dir / "background.png"
        frames, truth = run_reference(
            reference or model, params, read_video(seq_dir / "panorama.mkv"), instance,
            np.asarray(Image.open(background).convert("RGB")) if background.is_file() else None,
            seq["cameras"], seq["target_instance"], visible)
        write_video(own / "video.mkv", frames, seq["fps"])
        save_npz(own / "truth.npz", truth)
        write_cost(own, own_usage(start).to_json(), seq["n_frames"])
        entry, summary = {**cost, "video": f"{seq['id']}/video.mkv", "truth": f"{seq['id']}/truth.npz"}, "reference"
    manifest["rollouts"] = [{"sequence": seq["id"], **entry}]
    write_unit_manifest(own, manifest)
    print(f"{model} {seq['id']}: {seq['n_frames']} frames ({summary}) in {time.perf_counter() - start:.1f} s",
          flush=True)
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
    parser.add_argument("--sequence", required=True, type=Path, help="the prepared sequence's directory (prepare.py)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--kind", choices=KINDS, default="reference")
    parser.add_argument("--reference", help="reference model to run (default: --model)")
    parser.add_argument("--params", default="{}", help="reference model parameters (JSON)")
    parser.add_argument("--command", help="--kind external: command template")
    parser.add_argument("--timeout-minutes", type=float, default=None,
                        help="--kind external: minutes for the job's command (the model's runtime); "
                             "the command is killed when they are up")
    parser.add_argument("--log-dir", default=None,
                        help="--kind external: keep the command's log at DIR/<sequence>.log, "
                             "outside --out, which Snakemake deletes when the job fails")
    add_store_arguments(parser, "sequence")
    parser.add_argument("--out", required=True, type=Path,
                        help="the sequence's rollout directory, <the model's rollout directory>/<sequence id>")
    args = parser.parse_args(argv)
    try:
        model_params(args.model, args.kind, json.loads(args.params), args.reference, args.command)
        time_limit = TimeLimit(args.timeout_minutes)
    except ValueError as e:
        parser.error(str(e))
    if args.out.name != args.sequence.name:
        parser.error(f"--out {args.out} must end with the sequence's id {args.sequence.name!r}")
    roll_out_sequence(args.sequence, args.model, args.kind, args.out.parent, json.loads(args.params),
                      args.reference, args.command, time_limit, args.log_dir, args.store, args.replayed,
                      args.model_digest)
    report("persistbench", "rollouts", args.model, args.out.parent, UNIT_MANIFEST)


if __name__ == "__main__":
    main()
