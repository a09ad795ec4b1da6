"""WorldMemBench scores of one model's rollouts of one case, every metric family (Section 4).

Reads the case's rollouts of one model (its rollouts.json, videos, trajectory JSON and, for
reference models, truth.npz) and writes, for each metric family (FAMILIES: General Video Quality,
Static Memory, Dynamic Memory, Camera Following), a tidy long CSV: a row per (model, case,
family, trajectory, metric, target, revisit) holding the raw per-revisit or per-rollout score,
whether a valid observation existed and, where the value is NaN, why. One job per (model, case),
as the rollouts and perception; ``gather`` joins a model's cases into one file per family
(rule worldmembench_scores), text for text, which is what the tables read. Every aggregate of
``tables.py`` (Eq. 1, means over rollouts, the Table 5 decomposition) can be recomputed from
these rows, which the tables read back in one canonical order (tables.canonical_order), so
splitting the rows into files changes no number.

Target masks, depth, camera poses, quality and event judgements come from a
``perception.Perception``: for a reference model the ORACLE (the truth channels it wrote), for any
other model the estimates its perception jobs cached (perceive.py), where a capability configured
as ``none`` makes every metric that needs it NaN with the reason naming the config key. Changing
a metric therefore never reruns an estimator. Appearance features are computed from pixels by a
patch feature backend (the non-learned ColourGradientPatches by default, DINOv2 when configured).

Besides the metrics, rollouts carry the departure/return evidence of Appendix G.1 (read by
qualification.py): per entity target and revisit k, ``departed`` (1 if the target was unobserved
in some frame of D_k) and ``return_frames`` (frames of R_k with a valid observation); per
environment rotation revisit, ``departure_deg`` (largest angle of the estimated orientation from
the initial one over D_k) and ``return_error_deg`` (smallest over R_k).

``valid`` says whether a valid observation existed. An invalid revisit (value NaN, valid False)
scores 0 under Eq. 1; a valid row with a NaN value is a score no backend could compute (Human
Identity without a face backend, Video Quality without a predictor) and keeps every aggregate over
it NaN.

Choices the paper leaves open (documented where they are made):
  * a target is validly observed in a frame when its instance mask covers >= ``min_pixels`` pixels
    and touches no image border its conditioning mask does not touch (static_memory.whole_in_view:
    a target cut by the image edge is only partly seen); V and R_k of Eq. 4-5 are the frames of
    phase V / R_k where it is; for Human Identity, the
    frames of those where a detected face's nose tip lies inside the person's mask (the face of
    the highest detection score if several do);
  * Environment Memory is scored on rotational returns only (Section 4.4: "within each prescribed
    rotational return window"; Appendix G.1 counts 490 environment slots per model, the 70 cases
    x 7 returns of LRLR, LRLRLR and LRUD), so translation rollouts carry no environment rows;
  * the Reconstruction Score's spherical grid is 72 x 36 bins (5 degrees); the paper gives none;
  * RPE_trans is scored on the translation trajectory, RPE_rot on every rotation trajectory
    (per rollout, revisit 0, and per cycle k), each with one pose estimator (the truth poses, or
    the configured one); Camera Following and General Video Quality read the static-memory
    rollouts only (the paper's 85 trajectory cases), not the dynamic cases' LR-Hold.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pandas as pd

from worldmemory.common.geometry import rotation_angle
from worldmemory.common.progress import report
from worldmemory.common.provenance import write_job_info
from worldmemory.common.rollout_index import read_unit_manifest
from worldmemory.common.video import read_video_at, video_shape
from worldmemory.perception import registry
from worldmemory.perception.base import Unavailable
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.perception.features import cosine, feature_backend, global_feature, patch_features_of, pool_under_mask
from worldmemory.worldmembench.cases import load_case, load_cases
from worldmemory.worldmembench.gather import INFO
from worldmemory.worldmembench.metrics import camera, static_memory, video_quality
from worldmemory.worldmembench.metrics.dynamic_memory import (
    ASPECTS,
    ITEM,
    dynamic_case,
    judge_rollout,
    score_case,
)
from worldmemory.worldmembench.perception import (
    FAMILIES,
    MIN_PIXELS,
    NEEDS,
    EstimatedPerception,
    OraclePerception,
    estimated_sources,
)
from worldmemory.worldmembench.tables import canonical_order
from worldmemory.worldmembench.trajectories import Trajectory, load_trajectory

COLUMNS = ["model", "case", "family", "trajectory", "metric", "target", "revisit", "value",
           "valid", "reason"]
SPHERE_GRID = (72, 36)  # (n_az, n_el) of static_memory.spherical_field: 5 degree bins
BATCH = 8  # frames per feature-backend call
FLOAT_FORMAT = "%.10g"


def score_model(cases_dir, rollouts_dir, family: str, backend, estimates=None,
                min_pixels: int = MIN_PIXELS, grid: tuple[int, int] = SPHERE_GRID) -> pd.DataFrame:
    """Score rows (COLUMNS) of one metric ``family`` over every rollout of one model (its
    manifest.json), sorted by case then trajectory. A reference model is perceived by the oracle;
    any other by ``estimates`` (capability -> cached Estimates or the reason it has none; see
    perception.estimated_sources)."""
    root = Path(rollouts_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    cases = {case["id"]: case for case in load_cases(cases_dir)}
    return score_rollouts(root, manifest, cases, family, backend, estimates, min_pixels, grid)


def score_case_rollouts(case: dict, case_rollouts, backend, backends: dict | None = None, estimates_dir=None,
                        min_pixels: int = MIN_PIXELS, families=FAMILIES) -> dict[str, pd.DataFrame]:
    """Family -> score rows of one case's rollouts of one model (``case_rollouts``, the case's
    rollout directory with its rollouts.json), for each of ``families`` (the others: no rows); a
    model without truth channels is perceived through ``backends`` (capability -> name) and the
    case's estimates in ``estimates_dir``."""
    case_rollouts = Path(case_rollouts)
    manifest = read_unit_manifest(case_rollouts)
    return {family: score_rollouts(case_rollouts.parent, manifest, {case["id"]: case}, family, backend,
                                   None if manifest["ground_truth"] else
                                   estimated_sources(family, backends or {}, estimates_dir), min_pixels)
            if family in families else pd.DataFrame(columns=COLUMNS) for family in FAMILIES}


def score_rollouts(root: Path, manifest: dict, cases: dict, family: str, backend, estimates=None,
                   min_pixels: int = MIN_PIXELS, grid: tuple[int, int] = SPHERE_GRID) -> pd.DataFrame:
    """Score rows of one metric ``family`` over the rollouts of ``manifest`` (files under ``root``,
    cases by id in ``cases``), sorted by case then trajectory."""
    if family not in FAMILIES:
        raise ValueError(f"unknown score family {family!r}; valid: {', '.join(FAMILIES)}")
    model = manifest["model"]
    rows = []
    for entry in sorted(manifest["rollouts"], key=lambda e: (e["case"], e["trajectory"])):
        if entry["case"] not in cases:
            raise ValueError(f"rollout {entry['case']}/{entry['trajectory']}: unknown case")
        case = cases[entry["case"]]
        if entry["family"] != case["family"]:
            raise ValueError(f"rollout {entry['case']}/{entry['trajectory']}: family "
                             f"{entry['family']!r}, but the case is {case['family']!r}")
        scored = score_rollout(root, entry, case, family, backend, min_pixels, grid,
                               manifest["ground_truth"], estimates)
        keys = {"model": model, "case": case["id"], "family": case["family"],
                "trajectory": entry["trajectory"]}
        rows += [{**keys, **row} for row in scored]
        print(f"[score {family}] {model} {case['id']} {entry['trajectory']}: {len(scored)} rows", flush=True)
    return pd.DataFrame(rows, columns=COLUMNS)


def score_families(cases_dir, rollouts_dir, backend, backends: dict | None = None, estimates_dir=None,
                   min_pixels: int = MIN_PIXELS) -> pd.DataFrame:
    """Every family's rows of one model in the order tables read them (tables.canonical_order);
    a model without truth channels is perceived through ``backends`` (capability -> name) and
    the estimates in ``estimates_dir``."""
    ground_truth = json.loads((Path(rollouts_dir) / "manifest.json").read_text())["ground_truth"]
    parts = [score_model(cases_dir, rollouts_dir, family, backend,
                         None if ground_truth else estimated_sources(family, backends or {}, estimates_dir),
                         min_pixels) for family in FAMILIES]
    return canonical_order(pd.concat([p for p in parts if len(p)], ignore_index=True))


def score_rollout(root: Path, entry: dict, case: dict, family: str, backend, min_pixels: int,
                  grid: tuple[int, int], ground_truth: bool = True, estimates=None) -> list[dict]:
    """Rows (metric, target, revisit, value, valid, reason) of one metric ``family`` of one
    rollout.

    With ``ground_truth`` the rollout's truth channels are the perception (OraclePerception);
    without, the cached ``estimates`` (EstimatedPerception), where a capability without a backend
    makes its metrics NaN with the reason.
    """
    name = f"{entry['case']}/{entry['trajectory']}"
    traj = load_trajectory(root / entry["trajectory_file"])
    lengths = {"video": video_shape(root / entry["video"])[0], "trajectory": traj.n_frames}
    if ground_truth:
        if entry["truth"] is None:
            raise ValueError(f"rollout {name}: no truth channels, but the manifest says "
                             "ground_truth")
        with np.load(root / entry["truth"], allow_pickle=False) as npz:
            truth = {key: npz[key] for key in npz.files}
        lengths |= {key: len(truth[key]) for key in ("instance", "depth", "poses")}
        perception = OraclePerception(truth, entry["instances"])
    else:
        perception = EstimatedPerception(estimates or {}, name)
    if len(set(lengths.values())) != 1:
        raise ValueError(f"rollout {name}: frame counts differ: {lengths}")
    if traj.name != entry["trajectory"]:
        raise ValueError(f"rollout {name}: its trajectory file holds {traj.name!r}")
    # Pixels are decoded only for the families that read them (appearance features, the judge).
    # (at the case camera's size, as the estimators read them: perceive.py)
    frames = (read_video_at(root / entry["video"], case["camera"]["width"], case["camera"]["height"])
              if family in ("static", "dynamic") else None)
    case_family = case["family"]
    if family in ("quality", "camera"):  # over the static-memory rollouts (the paper's 85 cases)
        if case_family == "dynamic":
            return []
        return _quality(perception) if family == "quality" else _camera_rows(traj, perception)
    by_kind = {kind: [t["id"] for t in case["targets"] if t["kind"] == kind]
               for kind in ("person", "object", "environment")}
    if family == "dynamic":
        return _dynamic_rows(frames, perception, traj, case) if case_family == "dynamic" else []
    if case_family in ("human", "object"):
        targets = by_kind["person" if case_family == "human" else "object"]
        conditioning = {t["id"]: iio.imread(t["mask"]) > 0 for t in case["targets"]}
        return _entity_rows(case_family, frames, perception, traj, targets, conditioning, backend, min_pixels)
    if case_family == "environment" and traj.name != "translation":
        conditioning = iio.imread(case["conditioning_frame"], mode="RGB")
        return _environment_rows(frames, conditioning, perception, traj, by_kind["environment"], backend, grid)
    return []


def _row(metric: str, target: str, revisit: int, value, reason: str = "",
         valid: bool | None = None) -> dict:
    """A score row; value None is NaN and, unless ``valid`` says otherwise, an invalid revisit."""
    if valid is None:
        valid = value is not None
    return {"metric": metric, "target": target, "revisit": revisit,
            "value": math.nan if value is None else float(value), "valid": valid,
            "reason": reason}


def _unknown(metrics, targets, n_revisits: int, reason: str) -> list[dict]:
    """Valid NaN rows (an estimate no backend made) of every metric, target and revisit 1..K."""
    return [_row(m, t, k, None, reason, valid=True)
            for t in targets for k in range(1, n_revisits + 1) for m in metrics]


def _quality(perception) -> list[dict]:
    """General Video Quality (Section 4.2): each metric's normalised video score, or NaN with the
    reason where no predictor ran."""
    rows = []
    for metric in video_quality.NORMALISATION:
        try:
            value, reason = perception.quality(metric), ""
        except Unavailable as e:
            value, reason = None, str(e)
        if value is not None and math.isnan(value):
            value, reason = None, "no sampled frame has a quality score (frames without texture)"
        rows.append(_row(metric, "", 0, value, reason, valid=True))
    return rows


def _entity_rows(family: str, frames, perception, traj: Trajectory, targets: list[str],
                 conditioning: dict, backend, min_pixels: int) -> list[dict]:
    """Human (identity, appearance; Eq. 4) or Object (appearance, Eq. 4; geometry, Eq. 5) rows,
    one per target and prescribed revisit, and the departure/return evidence of Appendix G.1.

    V and R_k hold the frames of their phase where the target is whole in view as in its
    ``conditioning`` mask (static_memory.whole_in_view). A revisit with an empty R_k, or a target
    with an empty V, has no valid observation: NaN, valid False, which Eq. 1 later scores 0. A
    target departed in D_k when it covers < min_pixels pixels in some frame of D_k.
    """
    appearance = "human_appearance" if family == "human" else "object_appearance"
    metrics = ({"human": ["human_identity"], "object": ["object_geometry"]}[family]
               + [appearance, "departed", "return_frames"])
    revisits = traj.revisits()
    try:
        target_masks = {t: perception.target_masks(t) for t in targets}
    except Unavailable as e:
        return _unknown(metrics, targets, len(revisits), str(e))

    faces, no_faces = None, ""
    if family == "human":
        try:
            faces = perception.faces()
        except Unavailable as e:
            no_faces = str(e)
    windows = [traj.phases[0]] + [r for _, r in revisits]
    observed, seen_in = {}, {}
    for target, mask in target_masks.items():
        seen_in[target] = mask.sum(axis=(1, 2)) >= min_pixels
        whole = static_memory.whole_in_view(mask, conditioning[target], min_pixels)
        observed[target] = [[f for f in range(w.start, w.end) if whole[f]] for w in windows]
    needed = sorted({f for sets in observed.values() for s in sets for f in s})
    patches, patch_grid = patch_features_of(backend, frames, needed, BATCH)

    def pooled(target: str, frame_set: list[int]) -> np.ndarray:
        return np.stack([pool_under_mask(patches[f], target_masks[target][f], patch_grid)
                         for f in frame_set])

    rows = []
    for target, (reference, *returns) in observed.items():
        face_at = faces.on_target(target_masks[target]) if faces is not None else {}
        for k, (revisit, (departure, _)) in enumerate(zip(returns, revisits), start=1):
            seen = seen_in[target][departure.start:departure.end]
            rows += [_row("departed", target, k, float(not seen.all()), valid=True),
                     _row("return_frames", target, k, len(revisit), valid=True)]
            missing = _missing(reference, revisit, min_pixels, k)
            if family == "human":
                rows.append(_identity_row(target, k, reference, revisit, face_at, missing or no_faces,
                                          valid=not missing))
            if missing:
                rows.append(_row(appearance, target, k, None, missing))
                if family == "object":
                    rows.append(_row("object_geometry", target, k, None, missing))
                continue
            rows.append(_row(appearance, target, k, static_memory.revisit_similarity(
                pooled(target, reference), pooled(target, revisit))))
            if family == "object":
                masks = target_masks[target]
                rows.append(_row("object_geometry", target, k, static_memory.revisit_geometry(
                    masks[reference], masks[revisit])))
    return rows


def _identity_row(target: str, k: int, reference: list[int], revisit: list[int], face_at: dict,
                  reason: str, valid: bool) -> dict:
    """Human Identity (Eq. 4 with ArcFace) of revisit k: the observations of V and R_k are their
    frames where a face lies on the target (``face_at``: frame -> embedding, from
    FaceDetections.on_target: its nose tip inside the mask). No such face in V or in R_k is no
    valid observation: NaN, valid False (Eq. 1 scores 0), as for appearance."""
    if reason:
        return _row("human_identity", target, k, None, reason, valid=valid)
    with_face = [[f for f in frames if f in face_at] for frames in (reference, revisit)]
    for frames, where in zip(with_face, ("V", f"R{k}")):
        if not frames:
            return _row("human_identity", target, k, None, f"no face found on the target in any frame of {where}")
    value = static_memory.revisit_similarity(*(np.stack([face_at[f] for f in frames]) for frames in with_face))
    return _row("human_identity", target, k, value)


def _missing(reference: list[int], revisit: list[int], min_pixels: int, k: int) -> str:
    """Why revisit k has no valid observation ('' when it has one)."""
    if not reference:
        return (f"target covers < {min_pixels} pixels or is cut by the image border in every frame "
                "of V: no reference")
    if not revisit:
        return f"target covers < {min_pixels} pixels or is cut by the image border in every frame of R{k}"
    return ""


def _environment_rows(frames, conditioning, perception, traj: Trajectory, targets: list[str], backend,
                      grid: tuple[int, int]) -> list[dict]:
    """Environment Memory (Section 4.4, Eq. 6) per rotational return window R_k, and the
    departure / return angles of Appendix G.1.

    The frame of R_k whose estimated orientation is closest to frame 0's (the rollout's view of
    the conditioning camera), by the SO(3) angle of R_0^T R_t (ties to the earliest frame), is
    selected. Visible Memory compares it with ``conditioning``, the case's conditioning frame, as
    Section 4.4 says ("global DINOv2 features between the conditioning frame and each return"):
    the clipped cosine of global features (static_memory.return_similarity's rule, applied to the
    one selected frame). Depth Spearman and the Reconstruction similarity compare it with frame
    0 ("the initial and revisit views"): the depth estimator reads the model's video, and frame 0
    is its initial view; the spherical grid is centred at frame 0's camera. The rows are the same
    for every environment target of the case.
    """
    metrics = ["env_visible", "env_depth", "env_recon"]
    revisits = traj.revisits()
    try:
        poses, K = perception.camera()
    except Unavailable as e:
        return (_unknown(metrics, targets, len(revisits), str(e))
                + _unknown(["departure_deg", "return_error_deg"], [""], len(revisits), str(e)))
    try:
        depth, no_depth = perception.depth(), ""
    except Unavailable as e:
        depth, no_depth = None, str(e)
    try:
        metric_depth, no_metric = perception.metric_depth(), ""
    except Unavailable as e:
        metric_depth, no_metric = None, str(e)
    angles = np.degrees(rotation_angle(poses[0, :3, :3].T @ poses[:, :3, :3]))
    rows = []
    for k, (departure, window) in enumerate(revisits, start=1):
        rows += [_row("departure_deg", "", k, angles[departure.start:departure.end].max(),
                      valid=True),
                 _row("return_error_deg", "", k, angles[window.start:window.end].min(),
                      valid=True)]
    selected = [w.start + int(np.argmin(angles[w.start:w.end])) for _, w in revisits]
    patches, _ = backend.patch_grid(np.concatenate([conditioning[None], frames[selected]]))
    initial, *returns = global_feature(patches)
    origin = poses[0, :3, 3]
    if metric_depth is not None:
        reference = static_memory.spherical_field(metric_depth[0], K, poses[0], grid, origin)
    for k, (frame, feature) in enumerate(zip(selected, returns), start=1):
        visible = float(np.clip(cosine(initial, feature), 0.0, 1.0))
        if depth is None:
            rho, undefined = None, no_depth
        else:
            rho = static_memory.depth_spearman(depth[0], depth[frame])
            undefined = "" if rho is not None else "Spearman undefined: constant depth or < 2 pixels"
        recon = None
        if metric_depth is not None:
            field = static_memory.spherical_field(metric_depth[frame], K, poses[frame], grid, origin)
            recon = static_memory.reconstruction_similarity(reference, field)
        for target in targets:
            rows += [_row("env_visible", target, k, visible),
                     _row("env_depth", target, k, rho, undefined,
                          valid=depth is None or rho is not None),
                     _row("env_recon", target, k, recon, no_metric, valid=True)]
    return rows


def _dynamic_rows(frames, perception, traj: Trajectory, case: dict) -> list[dict]:
    """Dynamic Memory (Section 4.5) answered by the perception's event judge: the gated scores
    per aspect, Overall and the start decision, and each checklist item's gated 0/1 (``dyn_item``,
    the question's id as the target, in the checklist's order), which the human study compares
    item by item with the annotators' (Appendix F, Table 7)."""
    metrics = [f"dyn_{aspect}" for aspect in ASPECTS] + ["dyn_overall", "dyn_started"]
    event = dynamic_case(case)
    try:
        judge = perception.event_judge()
    except Unavailable as e:
        return ([_row(m, "", 0, None, str(e), valid=True) for m in metrics]
                + [_row(ITEM, q.id, 0, None, str(e), valid=True) for q in event.questions])
    answer = judge_rollout(judge, frames, traj, event)
    scores = score_case(answer, event.questions)
    values = [scores[aspect] for aspect in ASPECTS] + [scores["overall"], float(scores["started"])]
    return ([_row(m, "", 0, v) for m, v in zip(metrics, values)]
            + [_row(ITEM, q.id, 0, scores["questions"][q.id]) for q in event.questions])


def _camera_rows(traj: Trajectory, perception) -> list[dict]:
    """Camera Following (Section 4.3) with the perceived poses as the single estimator: the
    rollout's row (revisit 0, Table 2) and, for a rotation, RPE_rot of each cycle k (Eq. 3 over
    the increments into the frames of D_k and R_k; Section 5.3's 0.430 -> 0.502 -> 0.530)."""
    metric = "rpe_trans" if traj.name == "translation" else "rpe_rot"
    cycles = [] if metric == "rpe_trans" else [(k, d.start - 1, r.end) for k, (d, r) in enumerate(traj.revisits(), 1)]
    try:
        estimated, _ = perception.camera(translation=metric == "rpe_trans")
    except Unavailable as e:
        return [_row(metric, "", k, None, str(e), valid=True) for k in [0, *(c[0] for c in cycles)]]
    if metric == "rpe_trans":  # Eq. 2: the mean over the pose estimators (DA3 and ViPE in the paper)
        values = [(0, camera.rpe_trans(traj.poses, {"estimated": estimated, **perception.second_camera()}))]
    else:
        values = [(0, camera.rpe_rot(traj.poses, estimated))]
        values += [(k, camera.rpe_rot(traj.poses[a:b], estimated[a:b])) for k, a, b in cycles]
    return [_row(metric, "", k, value, "target path has zero length: RPE undefined" if math.isnan(value) else "",
                 valid=True) for k, value in values]


def write_scores(scores: pd.DataFrame, path) -> None:
    """Write score rows with a fixed float format and line terminator (byte-stable); read them
    back with tables.read_scores."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    scores[COLUMNS].to_csv(path, index=False, lineterminator="\n", float_format=FLOAT_FORMAT)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True, help="the case's directory (with case.json)")
    ap.add_argument("--rollouts", required=True, type=Path,
                    help="the case's rollout directory of one model (<model's rollouts>/<case>)")
    ap.add_argument("--perception", default="{}",
                    help="capability -> backend (JSON) of a model without truth channels")
    ap.add_argument("--estimates", help="the case's perception directory (perceive.py's files)")
    ap.add_argument("--features", default=ColourGradientPatches.name, choices=registry.names("features")[:-1])
    ap.add_argument("--features-model", help="the learned features' checkpoint (directory or Hugging Face id)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-side", type=int, help="DINOv2: shrink frames to this longer side")
    ap.add_argument("--min-pixels", type=int, default=MIN_PIXELS)
    ap.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES),
                    help="the metric families to score (the others' files get no rows)")
    ap.add_argument("--out", required=True, type=Path,
                    help="the case's score directory: <family>.csv for every family and info.json")
    args = ap.parse_args(argv)
    case = load_case(args.case)
    manifest = read_unit_manifest(args.rollouts)
    backends = {} if manifest["ground_truth"] else json.loads(args.perception)
    # appearance features: the static family only, which reads nothing of a dynamic case
    features = None
    if case["family"] != "dynamic" and "static" in args.families:
        features = feature_backend(args.features, args.features_model, args.device, args.max_side)
    scored = score_case_rollouts(case, args.rollouts, features, backends, args.estimates, args.min_pixels,
                                 args.families)
    for family, rows in scored.items():
        write_scores(rows, args.out / f"{family}.csv")
    perceived = {c: "oracle" if manifest["ground_truth"] else backends.get(c, registry.NONE)
                 for family in args.families for c in NEEDS[family]}
    write_job_info(args.out / INFO, model=manifest["model"], perception=perceived,
                   features=features.name if features else None, device=args.device)
    report("worldmembench", "scores", manifest["model"], args.out.parent, INFO)


if __name__ == "__main__":
    main()
