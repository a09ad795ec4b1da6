"""Write one model's WorldMemBench rollouts: a video per case and trajectory, plus ground truth.

Every case is rolled out along each of its departure-and-revisit trajectories (Section 3.3).
OUT/{case}/{trajectory}/ gets the video, trajectory.json (the target camera path and its phases)
and, for a reference model, truth.npz (the ground truth of what it drew: instance, depth, poses,
K and, for an event, its started flag and progress; see reference_models.run_reference). An
external model (``--kind external``) is a command template run once per rollout on the request
files of external.py; it writes OUT/{case}/{trajectory}/video.mp4 and has no truth channels. Its
output goes to OUT/{case}/{trajectory}/command.log and, with ``--log-dir DIR``, is copied to
DIR/{case}/{trajectory}.log, which outlives a failed job (Snakemake deletes OUT); with
``--timeout-minutes M`` the job's commands together get M minutes (the model's ``runtime``: see
worldmemory.external.TimeLimit) and the one running when they are up is killed with its
process group.
OUT/manifest.json lists the rollouts, sorted, without timestamps, so equal inputs give equal
bytes:

    {"model": NAME, "kind": "reference" | "external", "ground_truth": true | false,
     "params": {resolved parameters, or {"command": template}},
     "rollouts": [{"case", "family", "trajectory", "video", "truth" (null if none),
                   "trajectory_file", "instances": {target id: instance id}}, ...]}

with file paths relative to OUT.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from worldmemory.common.npz import save_npz
from worldmemory.common.video import write_video
from worldmemory.external import TimeLimit, check_template, check_video, run_model
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import load_cases
from worldmemory.worldmembench.external import PLACEHOLDERS, write_request
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
                   reference: str | None = None, command: str | None = None,
                   timeout_minutes: float | None = None, log_dir=None) -> dict:
    """Roll out ``model`` on every case and trajectory under ``cases_dir`` and write the videos,
    ground truth (reference models) and manifest under ``out_dir``.

    kind "reference": reference model ``reference`` (default: ``model``) with ``params``;
    kind "external": the shell ``command`` template (external.py's contract), its commands
    together limited to ``timeout_minutes`` (None: no limit), each one's log copied to
    ``log_dir``/{case}/{trajectory}.log if ``log_dir`` is given.
    Trajectories are ``trajectories.build(name, case's trajectory_params, **trajectory_params)``
    with the case camera's horizontal FoV and the frame size ``width`` x ``height`` (default: the
    case camera's).
    Prints one progress line per rollout and returns the manifest.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    if kind == "external":
        if not command:
            raise ValueError("--kind external needs --command (a command template)")
        check_template(command, PLACEHOLDERS)
        params = {"command": command}
    else:
        reference = reference or model
        params = resolve_params(reference, params)
    time_limit = TimeLimit(timeout_minutes)
    blocks = [trajectory_params, *(v for k, v in trajectory_params.items() if k in tj.TRAJECTORIES)]
    clash = sorted({k for block in blocks for k in CAMERA_KEYS if k in block})
    if clash:
        raise ValueError(f"trajectory parameters {', '.join(clash)} are set from the case camera "
                         f"and --width/--height; remove them")
    out_dir = Path(out_dir)
    rollouts = []
    for case in load_cases(cases_dir):
        camera = case["camera"]
        w, h = width or camera["width"], height or camera["height"]
        fov = np.degrees(horizontal_fov(np.asarray(camera["intrinsics"]), camera["width"]))
        for name in case["trajectories"]:
            start = time.perf_counter()
            trajectory = tj.build(name, case.get("trajectory_params"), **trajectory_params, width=w, height=h,
                                  fov_deg=fov)
            rel = f"{case['id']}/{name}"
            (out_dir / rel).mkdir(parents=True, exist_ok=True)
            if kind == "external":
                log_copy = Path(log_dir) / f"{rel}.log" if log_dir else None
                entry, summary = _external_rollout(command, case, trajectory, w, h, out_dir, rel,
                                                   time_limit, log_copy)
            else:
                entry, summary = _reference_rollout(reference, params, case, trajectory, w, h,
                                                    out_dir, rel)
            (out_dir / rel / "trajectory.json").write_text(json.dumps(trajectory.to_json()) + "\n")
            rollouts.append({"case": case["id"], "family": case["family"], "trajectory": name,
                             "trajectory_file": f"{rel}/trajectory.json", **entry})
            print(f"{model} {rel}: {summary} in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
    manifest = {"model": model, "kind": kind, "ground_truth": kind == "reference",
                "params": params,
                "rollouts": sorted(rollouts, key=lambda r: (r["case"], r["trajectory"]))}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _reference_rollout(reference: str, params: dict, case: dict, trajectory, width: int,
                       height: int, out_dir: Path, rel: str) -> tuple[dict, str]:
    """Render one reference rollout; (its manifest fields, a summary for the log)."""
    frames, truth = run_reference(reference, params, case, trajectory, width, height)
    write_video(out_dir / rel / "video.mkv", frames, trajectory.fps)
    save_npz(out_dir / rel / "truth.npz", truth)
    targets = {e.target: e.instance for e in case_world(case).entities()}
    return ({"video": f"{rel}/video.mkv", "truth": f"{rel}/truth.npz",
             "instances": {t["id"]: targets[t["id"]] for t in case["targets"]}},
            f"{len(frames)} frames {width}x{height}")


def _external_rollout(command: str, case: dict, trajectory, width: int, height: int,
                      out_dir: Path, rel: str, time_limit: TimeLimit,
                      log_copy: Path | None) -> tuple[dict, str]:
    """Run the external model on one rollout's request; (its manifest fields, a summary)."""
    request = write_request(case, trajectory, width, height, out_dir / rel)
    video = run_model(command, request, out_dir / rel / "command.log", PLACEHOLDERS, time_limit,
                      log_copy)
    h, w = check_video(video, trajectory.n_frames, f"external model on {rel}",
                       f"give the model its native length of this trajectory with trajectory_params: "
                       f"{{{{{trajectory.name}: {{{{n_frames: {{length}}}}}}}}}} in its config entry")
    return ({"video": f"{rel}/{video.name}", "truth": None, "instances": {}},
            f"{trajectory.n_frames} frames {w}x{h} (external)")


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
    parser.add_argument("--command", default=None,
                        help="--kind external: shell command template (see external.py)")
    parser.add_argument("--trajectory-params", default="{}",
                        help="trajectories.build keyword arguments (JSON object)")
    parser.add_argument("--width", type=int, default=None, help="default: the case camera's")
    parser.add_argument("--height", type=int, default=None, help="default: the case camera's")
    parser.add_argument("--timeout-minutes", type=float, default=None,
                        help="--kind external: minutes for all the job's commands together (the "
                             "model's runtime); the command running when they are up is killed")
    parser.add_argument("--log-dir", default=None,
                        help="--kind external: copy each command's log to "
                             "DIR/<case>/<trajectory>.log, outside --out, which Snakemake "
                             "deletes when the job fails")
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    try:
        params = _json_object(args.params, "--params")
        trajectory_params = _json_object(args.trajectory_params, "--trajectory-params")
        if args.kind == "reference":
            resolve_params(args.reference or args.model, params)
        elif args.command is None:
            raise ValueError("--kind external needs --command")
        else:
            check_template(args.command, PLACEHOLDERS)
        TimeLimit(args.timeout_minutes)
    except ValueError as e:
        parser.error(str(e))
    write_rollouts(args.cases, args.model, args.kind, params, trajectory_params, args.out,
                   args.width, args.height, args.reference, args.command, args.timeout_minutes,
                   args.log_dir)


if __name__ == "__main__":
    main()
