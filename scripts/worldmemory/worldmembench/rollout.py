"""Write a model's WorldMemBench rollouts of one case: a video per trajectory, plus ground truth.

Every case is rolled out along each of its departure-and-revisit trajectories (Section 3.3), one
job per (model, case): at the papers' size a model's 260 cases are ~860 videos of minutes of GPU
each, which a cluster runs in parallel and a failure must not throw away. The job writes
MODEL_DIR/{case}/{trajectory}/ with the video, trajectory.json (the target camera path and its
phases; its one copy: an external model's request.json points at it), cost.json (wall time, peak
memory, peak GPU memory: common.usage) and, for a reference model, truth.npz (the ground truth of
what it drew: instance, depth, poses, K and, for an event, its started flag and progress; see
reference_models.run_reference), then MODEL_DIR/{case}/rollouts.json, the case's manifest
(common.rollout_index), last. ``collect`` (rule worldmembench_rollouts) joins the cases'
manifests into MODEL_DIR/manifest.json:

    {"model": NAME, "kind": "reference" | "external", "ground_truth": true | false,
     "params": {resolved parameters, or {"command": template}},
     "rollouts": [{"case", "family", "trajectory", "video", "truth" (null if none),
                   "trajectory_file", "cost", "instances": {target id: instance id}}, ...]}

sorted, without timestamps (equal inputs give equal bytes), file paths relative to MODEL_DIR.

An external model (``--kind external``) is a command template run once per rollout on the request
files of external.py; it writes {video} and has no truth channels. Its output goes to the
log, kept once and capped (worldmemory.external.command): DIR/{case}/{trajectory}.log with
``--log-dir DIR``, which outlives a failed job (the rules pass results/logs/...), else the
rollout's command.log; with ``--timeout-minutes M`` the job's commands together get M
minutes (the model's ``runtime``: see worldmemory.external.TimeLimit) and the one running when
they are up is killed with its process group. With ``--store DIR`` each external rollout is made
in the store and linked into the output once finished (common.rollout_store): a rerun of the case
redoes only the rollouts that did not finish; ``--model-digest`` (the model entry's version and
files, rollout_store.model_digest) is part of each rollout's identity, so a changed model is made
again.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from worldmemory.common.npz import save_npz
from worldmemory.common.progress import report
from worldmemory.common.rollout_index import COST, UNIT_MANIFEST, collect, write_cost, write_unit_manifest
from worldmemory.common.rollout_store import RolloutStore, add_store_arguments, identity_digest, with_model
from worldmemory.common.usage import own_usage
from worldmemory.common.video import write_video
from worldmemory.external import KINDS, TimeLimit, check_video, run_model, run_params
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import load_case, load_cases
from worldmemory.worldmembench.external import PLACEHOLDERS, write_request
from worldmemory.worldmembench.reference_models import (
    case_world,
    horizontal_fov,
    resolve_params,
    run_reference,
)


def model_params(model: str, kind: str, params: dict | None, reference: str | None, command: str | None) -> dict:
    """The manifest's ``params`` (worldmemory.external.run_params)."""
    return run_params(kind, command, PLACEHOLDERS, lambda: resolve_params(reference or model, params))


def write_rollouts(cases_dir, model: str, kind: str, params: dict, trajectory_params: dict,
                   out_dir, width: int | None = None, height: int | None = None,
                   reference: str | None = None, command: str | None = None,
                   timeout_minutes: float | None = None, log_dir=None) -> dict:
    """Roll out ``model`` on every case under ``cases_dir`` (roll_out_case, sharing one time
    limit) and write the model's manifest (collect); returns it."""
    time_limit = TimeLimit(timeout_minutes)
    cases = load_cases(cases_dir)
    for case in cases:
        roll_out_case(case, model, kind, params, trajectory_params, out_dir, width, height, reference, command,
                      time_limit, log_dir)
    return collect(out_dir, [case["id"] for case in cases])


def roll_out_case(case: dict, model: str, kind: str, params: dict, trajectory_params: dict, out_dir,
                  width: int | None = None, height: int | None = None, reference: str | None = None,
                  command: str | None = None, time_limit: TimeLimit | None = None, log_dir=None,
                  store: Path | None = None, replayed: tuple[Path, ...] = (), model_digest: str | None = None) -> dict:
    """Roll out ``model`` on every trajectory of ``case`` into ``out_dir``/<case>/ and write the
    case's manifest; returns it.

    kind "reference": reference model ``reference`` (default: ``model``) with ``params``;
    kind "external": the shell ``command`` template (external.py's contract), its commands
    limited by ``time_limit``, each one's log at ``log_dir``/{case}/{trajectory}.log if
    ``log_dir`` is given (else beside its request), each rollout made in the ``store``
    directory (common.rollout_store) if given; ``replayed``: the case's rollout directories of
    the models whose videos the command replays, and ``model_digest``
    (rollout_store.model_digest: the entry's version and files), part of each rollout's identity.
    Trajectories are ``trajectories.build(name, case's trajectory_params, **trajectory_params)``
    with the case camera's horizontal FoV and the frame size ``width`` x ``height`` (default: the
    case camera's). Prints one progress line per rollout.
    """
    params = model_params(model, kind, params, reference, command)
    reference = reference or model
    time_limit = time_limit or TimeLimit(None)
    blocks = [trajectory_params, *(v for k, v in trajectory_params.items() if k in tj.TRAJECTORIES)]
    clash = sorted({k for block in blocks for k in tj.CAMERA_KEYS if k in block})
    if clash:
        raise ValueError(f"trajectory parameters {', '.join(clash)} are set from the case camera "
                         f"and --width/--height; remove them")
    out_dir = Path(out_dir)
    rollouts_store = RolloutStore(store if kind == "external" else None)
    camera = case["camera"]
    w, h = width or camera["width"], height or camera["height"]
    fov = np.degrees(horizontal_fov(np.asarray(camera["intrinsics"]), camera["width"]))
    rollouts = []
    for name in case["trajectories"]:
        start = time.perf_counter()
        trajectory = tj.build(name, case.get("trajectory_params"), **trajectory_params, width=w, height=h,
                              fov_deg=fov)
        rel = f"{case['id']}/{name}"
        dest = out_dir / rel
        if kind == "external":
            log = Path(log_dir) / f"{rel}.log" if log_dir else None
            identity = identity_digest(
                with_model({"command": command, "case": case["id"], "prompt": case["prompt"], "width": w,
                            "height": h, "trajectory": trajectory.to_json()}, model_digest),
                [case["conditioning_frame"], *(v for r in replayed for v in sorted((Path(r) / name).glob("video.*")))])
            entry, summary = _external_rollout(command, case, trajectory, w, h, rel, dest, time_limit, log,
                                               rollouts_store, name, identity)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            entry, summary = _reference_rollout(reference, params, case, trajectory, w, h, out_dir, rel, start)
        rollouts.append({"case": case["id"], "family": case["family"], "trajectory": name,
                         "trajectory_file": f"{rel}/trajectory.json", "cost": f"{rel}/{COST}", **entry})
        print(f"{model} {rel}: {summary} in {time.perf_counter() - start:.1f} s", flush=True)
    manifest = {"model": model, "kind": kind, "ground_truth": kind == "reference", "params": params,
                "rollouts": sorted(rollouts, key=lambda r: r["trajectory"])}
    write_unit_manifest(out_dir / case["id"], manifest)
    return manifest


def _reference_rollout(reference: str, params: dict, case: dict, trajectory, width: int,
                       height: int, out_dir: Path, rel: str, started: float) -> tuple[dict, str]:
    """Render one reference rollout; (its manifest fields, a summary for the log)."""
    frames, truth = run_reference(reference, params, case, trajectory, width, height)
    write_video(out_dir / rel / "video.mkv", frames, trajectory.fps)
    save_npz(out_dir / rel / "truth.npz", truth)
    tj.save_trajectory(trajectory, out_dir / rel)
    write_cost(out_dir / rel, own_usage(started).to_json(), len(frames))
    targets = {e.target: e.instance for e in case_world(case).entities()}
    return ({"video": f"{rel}/video.mkv", "truth": f"{rel}/truth.npz",
             "instances": {t["id"]: targets[t["id"]] for t in case["targets"]}},
            f"{len(frames)} frames {width}x{height}")


def _external_rollout(command: str, case: dict, trajectory, width: int, height: int, rel: str, dest: Path,
                      time_limit: TimeLimit, log: Path | None, store: RolloutStore, key: str,
                      identity: str) -> tuple[dict, str]:
    """Run the external model on one rollout's request (or link it from the store, finished
    with the same identity), its output logged at ``log`` (default: command.log beside the
    request); (its manifest fields, a summary)."""
    entry = {"video": None, "truth": None, "instances": {}}
    if store.fetch(key, identity, dest):
        video = next(dest.glob("video.*"))
        return {**entry, "video": f"{rel}/{video.name}"}, f"{trajectory.n_frames} frames (external, finished earlier)"
    work = store.workdir(key, dest)
    request = write_request(case, trajectory, width, height, work)
    usage = {}
    video = run_model(command, request, log or work / "command.log", PLACEHOLDERS, time_limit, usage=usage)
    h, w = check_video(video, trajectory.n_frames, f"external model on {rel}",
                       f"give the model its native length of this trajectory with trajectory_params: "
                       f"{{{{{trajectory.name}: {{{{n_frames: {{length}}}}}}}}}} in its config entry")
    write_cost(work, usage, trajectory.n_frames)
    store.finish(key, identity, dest)
    return {**entry, "video": f"{rel}/{video.name}"}, f"{trajectory.n_frames} frames {w}x{h} (external)"


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
    parser.add_argument("--case", required=True, help="the case's directory (with case.json)")
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
                        help="--kind external: keep each command's log at "
                             "DIR/<case>/<trajectory>.log, outside --out, which Snakemake "
                             "deletes when the job fails")
    add_store_arguments(parser, "case")
    parser.add_argument("--out", required=True, type=Path,
                        help="the case's rollout directory, <the model's rollout directory>/<case id>")
    args = parser.parse_args(argv)
    try:
        params = _json_object(args.params, "--params")
        trajectory_params = _json_object(args.trajectory_params, "--trajectory-params")
        model_params(args.model, args.kind, params, args.reference, args.command)
        time_limit = TimeLimit(args.timeout_minutes)
    except ValueError as e:
        parser.error(str(e))
    case = load_case(args.case)
    if args.out.name != case["id"]:
        parser.error(f"--out {args.out} must end with the case's id {case['id']!r}")
    roll_out_case(case, args.model, args.kind, params, trajectory_params, args.out.parent, args.width,
                  args.height, args.reference, args.command, time_limit, args.log_dir, args.store, args.replayed,
                  args.model_digest)
    report("worldmembench", "rollouts", args.model, args.out.parent, UNIT_MANIFEST)


if __name__ == "__main__":
    main()
