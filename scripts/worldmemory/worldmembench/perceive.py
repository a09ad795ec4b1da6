"""The configured estimators over one case's rollouts of a model: the cached perception scoring reads (Section 4).

    python -m worldmemory.worldmembench.perceive --case CASE_DIR --rollouts results/worldmembench/rollouts/M/CASE \
        --estimators '{"tracking": {"backend": "optical-flow"}, ...}' --out results/worldmembench/perception/M/CASE

One job per (model, case), like the rollouts: at the papers' size an estimator reads minutes of
video per case. It writes ``<capability>.npz`` (perception.store) for every configured capability,
with no entry where the capability reads nothing of the case's family (APPLIES): tracking reads
human and object cases, depth environment cases, faces human cases, the event judge dynamic cases,
camera and quality every static-memory case. Every estimator reads a rollout's video at the case
camera's size (common.video.read_video_at: a model may write any resolution, 2x or 832x480, and
its numbers must not depend on it), so the masks, depth maps and poses are at the case's size and
the trajectory's intrinsics apply unchanged. What each capability estimates per rollout
(``case/trajectory``):

  * ``tracking``: the masks of every person and object target of a human or object case,
    started from the target's mask in the conditioning frame, the requested camera path
    predicting where a target that changed while out of view is after a departure
    (perception.tracking); fields ``targets`` (ids, in case order) and ``masks`` (n, T, H, W);
  * ``camera``: camera-to-world poses of every static-memory rollout (not the dynamic cases'
    LR-Hold, which no camera metric reads, nor the translation loops of a backend whose
    translations are too coarse for Eq. 2, the only reader of those) from its pixels and the
    case camera's intrinsics; fields ``poses`` (T, 4, 4) and ``K``;
    ``second_camera`` the same from a second estimator, whose translations Eq. 2 averages with
    camera's (ViPE beside DA3);
  * ``depth``: every frame's depth map of an environment case (the only family that reads depth),
    fields ``depth`` (T, H, W) and ``relative_inverse`` (whether the backend gave relative inverse
    depth rather than metric z-depth: perception.depth);
  * ``faces``: every face of every frame of a human case's rollouts with its identity
    embedding (perception.faces: YuNet, ArcFace); fields ``frame``, ``box``, ``landmarks``,
    ``score``, ``embedding`` (one row per face); scoring assigns faces to targets;
  * ``imaging_quality`` and ``aesthetic_quality``: the backend's raw score of the frames
    Section 4.2 samples (every fourth) of every static-memory rollout; fields ``frames``
    (indices) and ``raw``;
  * ``judge``: the event checklist of a dynamic case (Appendix D.1: the frames sampled every 8th
    with the planned phases, dynamic_memory.VlmEventJudge); fields ``started``, ``questions``
    (ids), ``answers`` (bool per id) and ``reply`` (the judge's raw text, for the record).

A reference model needs none of this: its scoring reads the truth channels it wrote (the oracle).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.progress import PERCEIVED, report
from worldmemory.common.rollout_index import read_unit_manifest
from worldmemory.common.video import read_video_at
from worldmemory.perception import registry
from worldmemory.perception.base import shown_frames
from worldmemory.perception.judge import EVENT_CHECKLIST, event_prompt, parse_event_answer
from worldmemory.perception.store import save_estimates
from worldmemory.perception.tracking import find_target
from worldmemory.worldmembench.cases import load_case, load_cases
from worldmemory.worldmembench.metrics.dynamic_memory import (
    DynamicCase,
    JudgeAnswer,
    dynamic_case,
    judge_rollout,
)
from worldmemory.worldmembench.metrics.video_quality import sampled_frames
from worldmemory.worldmembench.trajectories import load_trajectory

CAPABILITIES = ("tracking", "camera", "second_camera", "depth", "faces", "imaging_quality", "aesthetic_quality",
                "judge")
ENTITY_KINDS = {"human": "person", "object": "object"}
STATIC = ("human", "object", "environment")
# capability -> the case families whose rollouts it estimates anything of (the readers in score.py)
APPLIES = {"tracking": ("human", "object"), "camera": STATIC, "second_camera": STATIC, "depth": ("environment",),
           "faces": ("human",), "imaging_quality": STATIC, "aesthetic_quality": STATIC, "judge": ("dynamic",)}
INITIAL_EVERY = 8  # a target not found in V's first frame is looked for in every 8th after it


def perceive(cases_dir, rollouts_dir, capability: str, backend_name: str,
             options: dict | None = None) -> dict[str, dict]:
    """Estimates (``case/trajectory`` -> fields) of ``capability`` by ``backend_name`` (built with
    ``options``) over every rollout of the model in ``rollouts_dir`` (its manifest.json)."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}; valid: {', '.join(CAPABILITIES)}")
    backend = registry.create(capability, backend_name, **(options or {}))
    root = Path(rollouts_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    cases = {case["id"]: case for case in load_cases(cases_dir)}
    return _estimate(capability, backend, root, manifest, cases)


def perceive_case(case: dict, case_rollouts, estimators: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """Capability -> estimates of every configured estimator (capability -> {"backend", "options"})
    over the rollouts in ``case_rollouts`` (a case's rollout directory, with its rollouts.json);
    a capability that reads nothing of the case's family, or marked ``"skip": true`` (no metric
    the run scores reads it), gets none and builds no backend."""
    unknown = sorted(set(estimators) - set(CAPABILITIES))
    if unknown:
        raise ValueError(f"unknown capabilities {', '.join(unknown)}; valid: {', '.join(CAPABILITIES)}")
    case_rollouts = Path(case_rollouts)
    manifest = read_unit_manifest(case_rollouts)
    estimates = {}
    for capability, spec in estimators.items():
        if spec.get("skip") or case["family"] not in APPLIES[capability]:
            estimates[capability] = {}
            continue
        backend = registry.create(capability, spec["backend"], **spec.get("options", {}))
        estimates[capability] = _estimate(capability, backend, case_rollouts.parent, manifest, {case["id"]: case})
    return estimates


def _estimate(capability: str, backend, root: Path, manifest: dict, cases: dict) -> dict[str, dict]:
    """Estimates of ``capability`` by ``backend`` over the rollouts of ``manifest`` (files under ``root``)."""
    estimates = {}
    for entry in manifest["rollouts"]:
        key = f"{entry['case']}/{entry['trajectory']}"
        start = time.perf_counter()
        fields = ESTIMATORS[capability](backend, root, entry, cases[entry["case"]])
        if fields is not None:
            estimates[key] = fields
            print(f"[perceive {capability}] {manifest['model']} {key}: {time.perf_counter() - start:.1f} s",
                  flush=True)
    return estimates


def _tracking(tracker, root: Path, entry: dict, case: dict) -> dict | None:
    kind = ENTITY_KINDS.get(case["family"])
    targets = [t for t in case["targets"] if t["kind"] == kind]
    if not targets:
        return None  # environment and dynamic cases are scored without target masks
    frames = case_frames(root, entry, case)
    trajectory = load_trajectory(root / entry["trajectory_file"])
    camera = _requested_path(trajectory, frames)
    conditioning = np.asarray(Image.open(case["conditioning_frame"]).convert("RGB"))
    initial = _initial_frames(trajectory, len(frames))
    masks = [track_target(tracker, frames, conditioning, _mask(t["mask"]), initial, camera) for t in targets]
    return {"targets": np.array([t["id"] for t in targets]), "masks": np.stack(masks).astype(bool)}


def track_target(tracker, frames: np.ndarray, conditioning: np.ndarray, mask: np.ndarray, initial,
                 camera=None) -> np.ndarray:
    """One target's masks (T, H, W) bool in a model's ``frames``: the target the ``conditioning``
    frame's ``mask`` shows, found in the model's own ``initial`` frames (V's, in order;
    perception.tracking.find_target) and tracked from there; all empty when it is found in none
    (no valid observation: Eq. 4 scores the revisits 0), never the conditioning mask's place."""
    start, first = find_target(frames, initial, conditioning, mask, tracker)
    if not first.any():
        return np.zeros(frames.shape[:3], dtype=bool)
    return tracker.track(frames, first, start=start, camera=camera)


def _initial_frames(trajectory, n_frames: int, every: int = INITIAL_EVERY) -> list[int]:
    """The frames of V (the initial phase) where the target is looked for: every ``every``-th from
    frame 0, within the video."""
    phase = trajectory.phases[0]
    return list(range(phase.start, min(phase.end, n_frames), every)) or [0]


def _camera(estimator, root: Path, entry: dict, case: dict) -> dict | None:
    if case["family"] == "dynamic":
        return None  # Camera Following and Environment Memory read the static-memory rollouts
    if entry["trajectory"] == "translation" and getattr(estimator, "unreliable_translation", ""):
        return None  # only RPE_trans reads a translation rollout's poses, and not this backend's
    frames = case_frames(root, entry, case)
    K = np.asarray(json.loads((root / entry["trajectory_file"]).read_text())["intrinsics"], dtype=float)
    return {"poses": estimator.estimate(frames, K), "K": K, "shown": shown_frames(frames)}


def _depth(estimator, root: Path, entry: dict, case: dict) -> dict | None:
    if case["family"] != "environment":
        return None
    frames = case_frames(root, entry, case)
    return {"depth": estimator.estimate(frames), "relative_inverse": np.array(not estimator.metric)}


def _faces(embedder, root: Path, entry: dict, case: dict) -> dict | None:
    if case["family"] != "human":
        return None  # only Human Identity reads faces
    return embedder.faces(case_frames(root, entry, case)).fields()


def _quality(scorer, root: Path, entry: dict, case: dict) -> dict | None:
    if case["family"] == "dynamic":
        return None  # General Video Quality reads the static-memory rollouts (Section 4.2)
    frames = case_frames(root, entry, case)
    picked = np.array(sampled_frames(len(frames)))
    return {"frames": picked, "raw": scorer.score(frames[picked])}


def event_judge_problem(name: str) -> str | None:
    """Why judge backend ``name`` cannot answer Dynamic Memory's event checklist (a
    same-entity-only judge such as structure-match), or None when it can."""
    valid = registry.judges_of(EVENT_CHECKLIST)
    if name in valid or name == registry.NONE:
        return None
    return (f"worldmembench.perception.judge = {name!r}: that judge does not answer the Dynamic Memory event "
            f"checklist (Appendix D.1), which needs a vision-language model; expected one of "
            f"{', '.join(valid + [registry.NONE])}. Fix: use one of those")


class VlmEventJudge:
    """The EventJudge of Appendix D.1 asked of a vision-language backend (perception.judge):
    one prompt per rollout, greedy decoding; ``last_reply`` keeps the raw reply for the record."""

    def __init__(self, backend):
        problem = event_judge_problem(backend.name)
        if problem:
            raise ValueError(problem)
        self.backend = backend
        self.last_reply = ""

    def judge(self, frames: list[np.ndarray], frame_indices: list[int],
              phases: list[dict], case: DynamicCase) -> JudgeAnswer:
        content = event_prompt(frames, frame_indices, phases, case.initial_state, case.action,
                               [(q.id, q.text) for q in case.questions])
        self.last_reply = self.backend.ask(content)
        started, answers = parse_event_answer(self.last_reply, [q.id for q in case.questions])
        return JudgeAnswer(started=started, answers=answers)


def _judge(backend, root: Path, entry: dict, case: dict) -> dict | None:
    if case["family"] != "dynamic":
        return None  # only Dynamic Memory asks the event judge
    frames = case_frames(root, entry, case)
    event, judge = dynamic_case(case), VlmEventJudge(backend)
    answer = judge_rollout(judge, frames, load_trajectory(root / entry["trajectory_file"]), event)
    ids = [q.id for q in event.questions]
    return {"started": np.array(answer.started), "questions": np.array(ids),
            "answers": np.array([answer.answers[q] for q in ids]), "reply": np.array(judge.last_reply)}


ESTIMATORS = {"tracking": _tracking, "camera": _camera, "second_camera": _camera, "depth": _depth, "faces": _faces,
              "imaging_quality": _quality, "aesthetic_quality": _quality, "judge": _judge}


def case_frames(root: Path, entry: dict, case: dict) -> np.ndarray:
    """The frames of rollout ``entry`` at the case camera's size, whatever size the model wrote."""
    return read_video_at(root / entry["video"], case["camera"]["width"], case["camera"]["height"])


def _requested_path(trajectory, frames: np.ndarray):
    """The camera path the model was asked to follow (poses, K), where the
    tracker predicts a changed target's place after a departure; None when the video's frame
    count differs from the path's (the tracker then relies on the images alone)."""
    if len(trajectory.poses) != len(frames):
        return None
    return trajectory.poses, trajectory.intrinsics


def _mask(path: str) -> np.ndarray:
    """A target's conditioning-frame mask (the case camera's size)."""
    return np.asarray(Image.open(path).convert("L")) > 0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True, help="the case's directory (with case.json)")
    ap.add_argument("--rollouts", required=True, type=Path,
                    help="the case's rollout directory of one model (<model's rollouts>/<case>)")
    ap.add_argument("--estimators", required=True, type=json.loads,
                    help='capability -> {"backend": registry name, "options": keyword arguments, "skip": '
                         "true to write no estimates} (JSON; perception.estimators)")
    ap.add_argument("--out", required=True, type=Path, help="the case's perception directory")
    args = ap.parse_args(argv)
    estimates = perceive_case(load_case(args.case), args.rollouts, args.estimators)
    for capability, spec in args.estimators.items():
        save_estimates(args.out / f"{capability}.npz", spec["backend"], estimates[capability])
    (args.out / PERCEIVED).write_text(json.dumps(sorted(args.estimators)) + "\n")
    model = read_unit_manifest(args.rollouts)["model"]
    report("worldmembench", "perception", model, args.out.parent, PERCEIVED)


if __name__ == "__main__":
    main()
