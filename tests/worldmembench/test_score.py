"""Known answers for per-model scoring with oracle perception (worldmembench/score.py).

Rollout directories are built here in the rollout format (manifest.json, lossless video,
trajectory JSON, truth.npz) by rendering the cases' procedural worlds along the trajectories.
The rotation trajectories turn 180 degrees in two-frame moves, so the only return frame in which
a target or the conditioning view is seen again is the last one of R_k, which is exactly frame 0's
view: an omniscient rollout then scores exactly 1 on every revisit.
"""

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from worldmemory.common.geometry import pose, rot_y
from worldmemory.common.rollout_index import write_unit_manifest
from worldmemory.common.video import read_video, write_video
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.perception.features import feature_backend
from worldmemory.perception.registry import no_oracle, not_configured
from worldmemory.perception.store import save_estimates
from worldmemory.worldmembench import score as sc
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import load_case, write_embedded_cases
from worldmemory.worldmembench.gather import gather
from worldmemory.worldmembench.reference_models import scale_rotation
from worldmemory.worldmembench.tables import read_scores
from worldmemory.worlds import raycaster as wd

REPO = Path(__file__).resolve().parents[2]
W, H = 128, 96
SHORT = {"n_frames": 14, "hold_frames": 4, "final_hold_frames": 2, "move_frames": 2}  # 4 moves
PARAMS = {
    "LRLR": {**SHORT, "amplitude_deg": 180.0},
    "translation": SHORT,
    "LR-Hold": {"n_frames": 241, "hold_frames": 32, "final_hold_frames": 9},
}


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cases")
    write_embedded_cases(out, 1, W, H, {"human": ["LRLR"], "object": ["LRLR", "translation"],
                                        "environment": ["LRLR"], "dynamic": ["LR-Hold"]},
                         PARAMS["LR-Hold"])
    return out


def omniscient(world, traj, frame):
    return world


def write_rollouts(root: Path, cases_dir: Path, specs, model="test-model", ground_truth=True):
    """Write a model's rollout directory (its manifest.json and each case's rollouts.json); specs
    are (case id, trajectory, world_at(world, traj, frame))."""
    root.mkdir(parents=True)
    rollouts = []
    for case_id, name, world_at in specs:
        case = load_case(cases_dir / case_id)
        world = wd.World.from_dict(case["world"])
        traj = tj.build(name, width=W, height=H, **PARAMS[name])
        K = np.asarray(case["camera"]["intrinsics"])
        views = [wd.render(world_at(world, traj, t), traj.poses[t], K, W, H, frame=t)
                 for t in range(traj.n_frames)]
        stem = f"{case_id}_{name}"
        write_video(root / f"{stem}.mkv", np.stack([v["rgb"] for v in views]), traj.fps)
        truth = {"instance": np.stack([v["instance"] for v in views]).astype(np.int16),
                 "depth": np.stack([v["depth"] for v in views]), "poses": traj.poses, "K": K}
        if world.events:
            states = [world_at(world, traj, t).events[0].state(t) for t in range(traj.n_frames)]
            truth["event_started"] = np.array([s["started"] for s in states])
            truth["event_progress"] = np.array([s["progress"] for s in states], np.float32)
        np.savez_compressed(root / f"{stem}.npz", **truth)
        (root / f"{stem}.json").write_text(json.dumps(traj.to_json()))
        targets = {t["id"] for t in case["targets"]}
        rollouts.append({
            "case": case_id, "family": case["family"], "trajectory": name,
            "video": f"{stem}.mkv", "truth": f"{stem}.npz", "trajectory_file": f"{stem}.json",
            "instances": {e.target: e.instance for e in world.entities() if e.target in targets}})
    manifest = {"model": model, "kind": "reference", "ground_truth": ground_truth, "params": {},
                "rollouts": rollouts}
    (root / "manifest.json").write_text(json.dumps(manifest))
    for case_id in {r["case"] for r in rollouts}:  # each case's own manifest, as its rollout job writes it
        write_unit_manifest(root / case_id, {**manifest, "rollouts": [r for r in rollouts if r["case"] == case_id]})
    return root


def score(tmp_path, cases_dir, specs, **kwargs):
    root = write_rollouts(tmp_path / "rollouts", cases_dir, specs, **kwargs)
    return sc.score_families(cases_dir, root, ColourGradientPatches())


def values(scores, metric, target=None):
    rows = scores[scores["metric"] == metric]
    if target is not None:
        rows = rows[rows["target"] == target]
    return rows.sort_values(["target", "revisit"])


def first_object(cases_dir):
    return wd.World.from_dict(load_case(cases_dir / "object_000")["world"]).objects[0]


def test_omniscient_object_scores_one_at_every_revisit_and_rpe_zero(tmp_path, cases_dir):
    scores = score(tmp_path, cases_dir, [("object_000", "LRLR", omniscient),
                                         ("object_000", "translation", omniscient)])
    assert list(scores.columns) == sc.COLUMNS
    lrlr = scores[scores["trajectory"] == "LRLR"]
    n_objects = len(wd.World.from_dict(load_case(cases_dir / "object_000")["world"]).objects)
    for metric in ("object_appearance", "object_geometry"):
        rows = values(lrlr, metric)
        assert len(rows) == 2 * n_objects and sorted(set(rows["revisit"])) == [1, 2]
        assert rows["valid"].all()
        np.testing.assert_allclose(rows["value"], 1.0, atol=1e-9)
    rpe_rot = values(lrlr, "rpe_rot")
    assert list(rpe_rot["revisit"]) == [0, 1, 2]  # the rollout (Table 2), then each cycle
    np.testing.assert_allclose(rpe_rot["value"], 0.0, atol=1e-9)
    translation = scores[scores["trajectory"] == "translation"]
    assert values(translation, "rpe_trans")["value"].item() == pytest.approx(0.0, abs=1e-9)
    assert "rpe_rot" not in set(translation["metric"])
    quality = scores[scores["metric"].isin(["imaging_quality", "aesthetic_quality"])]
    assert len(quality) == 4 and quality["value"].isna().all() and (quality["reason"] != "").all()


def test_changed_texture_lowers_appearance_but_not_geometry(tmp_path, cases_dir):
    target = first_object(cases_dir)

    def repainted(world, traj, frame):
        if frame < traj.return_windows()[0].start:
            return world
        return wd.perturb(world, [target.instance], 1.0, np.random.default_rng(0), reshape=False)

    scores = score(tmp_path, cases_dir, [("object_000", "LRLR", repainted)])
    appearance = values(scores, "object_appearance", target.target)
    assert appearance["valid"].all() and (appearance["value"] < 0.99).all()
    np.testing.assert_allclose(values(scores, "object_geometry", target.target)["value"], 1.0)


def test_target_absent_at_first_return_is_an_invalid_revisit(tmp_path, cases_dir):
    target = first_object(cases_dir)

    def vanished(world, traj, frame):
        r1 = traj.return_windows()[0]
        if not r1.start <= frame < r1.end:
            return world
        out = copy.deepcopy(world)
        out.objects = [o for o in out.objects if o.instance != target.instance]
        return out

    scores = score(tmp_path, cases_dir, [("object_000", "LRLR", vanished)])
    for metric in ("object_appearance", "object_geometry"):
        r1, r2 = values(scores, metric, target.target).itertuples()
        assert (r1.revisit, r1.valid) == (1, False) and math.isnan(r1.value) and "R1" in r1.reason
        assert (r2.revisit, r2.valid, r2.value) == (2, True, pytest.approx(1.0))


def test_environment_return_equal_to_frame_zero_scores_one(tmp_path, cases_dir):
    scores = score(tmp_path, cases_dir, [("environment_000", "LRLR", omniscient)])
    for metric in ("env_visible", "env_depth", "env_recon"):
        rows = values(scores, metric)
        assert list(rows["revisit"]) == [1, 2] and set(rows["target"]) == {"room"}
        np.testing.assert_allclose(rows["value"], 1.0, atol=1e-9)


def rewrite_videos(root: Path, change) -> None:
    """Replace every rollout video under ``root`` by ``change(frames)``."""
    for video in root.glob("*.mkv"):
        write_video(video, change(read_video(video)), fps=16)


def test_visible_memory_reads_returns_against_the_conditioning_frame(tmp_path, cases_dir):
    """Section 4.4: "global DINOv2 features between the conditioning frame and each return". A
    model whose every frame is inverted returns exactly to its own frame 0, but not to the frame
    it was given: Visible Memory must read below 1 (it read 1.0 against frame 0)."""
    root = write_rollouts(tmp_path / "rollouts", cases_dir, [("environment_000", "LRLR", omniscient)])
    rewrite_videos(root, lambda frames: 255 - frames)
    scores = sc.score_families(cases_dir, root, ColourGradientPatches())
    visible = values(scores, "env_visible")["value"]
    assert (visible < 0.95).all()
    assert values(scores, "env_depth")["value"].tolist() == pytest.approx([1.0, 1.0])  # depth: frame 0 (truth)


@pytest.mark.parametrize("size", [(256, 192), (320, 160)])
def test_a_video_at_another_size_scores_as_at_the_case_size(tmp_path, cases_dir, size):
    """Every score reads a model's video at the case's size (common.video.read_video_at): the
    omniscient upscaled 2x, or stretched to another aspect, reads as itself (issue: 2x and
    832x480 within 0.02 on every column)."""
    import cv2

    specs = [("object_000", "LRLR", omniscient), ("environment_000", "LRLR", omniscient)]
    same = score(tmp_path / "same", cases_dir, specs)
    root = write_rollouts(tmp_path / "big" / "rollouts", cases_dir, specs)
    rewrite_videos(root, lambda frames: np.stack([cv2.resize(f, size, interpolation=cv2.INTER_CUBIC)
                                                  for f in frames]))
    big = sc.score_families(cases_dir, root, ColourGradientPatches())
    assert list(big["metric"]) == list(same["metric"]) and list(big["valid"]) == list(same["valid"])
    np.testing.assert_allclose(big["value"], same["value"], atol=0.02)


def test_human_identity_is_nan_with_a_reason_and_appearance_is_scored(tmp_path, cases_dir):
    scores = score(tmp_path, cases_dir, [("human_000", "LRLR", omniscient)])
    people = {t["id"] for t in load_case(cases_dir / "human_000")["targets"]}
    identity = values(scores, "human_identity")
    assert set(identity["target"]) == people and len(identity) == 2 * len(people)
    assert identity["value"].isna().all() and identity["valid"].all()
    assert (identity["reason"] == no_oracle("faces")).all()
    np.testing.assert_allclose(values(scores, "human_appearance")["value"], 1.0, atol=1e-9)


def test_dynamic_rows_follow_the_oracle_judge(tmp_path, cases_dir):
    def frozen(world, traj, frame):  # the event never starts: every gated score is 0
        out = copy.deepcopy(world)
        out.events[0].start = traj.n_frames
        return out

    metrics = {"dyn_return_progress", "dyn_persistence_reset", "dyn_final_state",
               "dyn_causal_physical", "dyn_overall", "dyn_started", "dyn_item"}
    for world_at, expected in ((omniscient, 1.0), (frozen, 0.0)):
        scores = score(tmp_path / world_at.__name__, cases_dir,
                       [("dynamic_000", "LR-Hold", world_at)])
        dyn = scores[scores["metric"].str.startswith("dyn_")]
        assert set(dyn["metric"]) == metrics and (dyn["revisit"] == 0).all()
        np.testing.assert_allclose(dyn["value"], expected)
        # each checklist item's gated answer, in the checklist's order (the human study's Table 7)
        assert list(dyn.loc[dyn["metric"] == "dyn_item", "target"]) == [f"q{i}" for i in range(1, 9)]
        # Camera Following and Video Quality read the static-memory rollouts, not LR-Hold
        assert not set(scores["metric"]) & {"rpe_rot", "imaging_quality", "aesthetic_quality"}


def test_a_judge_behind_an_endpoint_is_asked_once_per_rollout_and_scored_from_its_cache(
        tmp_path, cases_dir, chat_server):
    """The event judge through the real perception path (perceive.py -> judge.npz -> scoring):
    a judge that answers every reference scores 1 on every aspect, one that sees no start 0."""
    from worldmemory.worldmembench.perceive import perceive

    root = write_rollouts(tmp_path / "rollouts", cases_dir, [("dynamic_000", "LR-Hold", omniscient)],
                          ground_truth=False)
    references = {q["id"]: q["reference_answer"] for q in load_case(cases_dir / "dynamic_000")["questions"]}
    options = {"url": chat_server.url, "served_model": "judge"}
    metrics = ["dyn_return_progress", "dyn_persistence_reset", "dyn_final_state", "dyn_causal_physical",
               "dyn_overall", "dyn_started"]
    for started, expected in (("yes", 1.0), ("no", 0.0)):
        answers = json.dumps({"event_started": started,
                              "answers": {q: "yes" if a else "no" for q, a in references.items()}})
        chat_server.reply = lambda request, answers=answers: f"The box moves from frame 8 on. {answers}"
        estimates = perceive(cases_dir, root, "judge", "openai-compatible", options)
        assert list(estimates) == ["dynamic_000/LR-Hold"]  # only dynamic cases ask the judge
        directory = tmp_path / f"perception_{started}"
        save_estimates(directory / "judge.npz", "openai-compatible", estimates)
        scores = sc.score_families(cases_dir, root, ColourGradientPatches(), {"judge": "openai-compatible"},
                                   directory)
        dyn = scores[scores["metric"].str.startswith("dyn_")]
        assert list(dyn["metric"]) == metrics + ["dyn_item"] * 8
        np.testing.assert_allclose(dyn["value"], expected)
    parts = chat_server.requests[0]["messages"][0]["content"]
    shown = list(range(0, 241, 8))
    assert [p["text"] for p in parts[:-1:2]] == [f"Frame {i}:" for i in shown]  # stride 8, the last included
    assert [p["type"] for p in parts[1:-1:2]] == ["image_url"] * len(shown)
    assert "- initial hold (V): frames 0-31" in parts[-1]["text"]


def test_an_external_pose_estimator_calibrates_rpe_trans(tmp_path, cases_dir):
    """Camera poses from an external command (the DA3 / ViPE contract): poses equal to the drawn
    path, in another gauge and scale, read RPE_trans 0 (Eq. 2 aligns by Sim(3)); the same path
    walked backwards reads far from 0, and as a second estimator it counts half (Eq. 2's mean).
    The weight-free estimator leaves this column NaN."""
    from worldmemory.worldmembench.perceive import perceive

    root = write_rollouts(tmp_path / "rollouts", cases_dir, [("object_000", "translation", omniscient)],
                          ground_truth=False)
    drawn = tj.build("translation", width=W, height=H, **PARAMS["translation"]).poses
    gauge = np.diag([3.0, 3.0, 3.0, 1.0]) @ pose(rot_y(0.5), [1.0, 0.0, -2.0])
    backwards = drawn.copy()
    backwards[:, :3, 3] *= -1
    script = tmp_path / "poses.py"
    script.write_text("import sys, numpy as np\nnp.savez(sys.argv[2], poses=np.load(sys.argv[1]))\n")
    for name, poses in (("exact", gauge @ drawn), ("backwards", backwards)):
        np.save(tmp_path / f"{name}.npy", poses)
        command = f"{sys.executable} {script} {tmp_path / name}.npy {{out}}"
        estimates = perceive(cases_dir, root, "camera", "external-command", {"command": command})
        for capability in ("camera", "second_camera"):
            save_estimates(tmp_path / name / f"{capability}.npz", "external-command", estimates)

    def rpe(first, second=None):
        directory = tmp_path / "estimates"
        directory.mkdir(exist_ok=True)
        backends = {"camera": "external-command", "second_camera": "external-command" if second else "none"}
        for capability, name in (("camera", first), ("second_camera", second)):
            if name:
                (directory / f"{capability}.npz").write_bytes((tmp_path / name / f"{capability}.npz").read_bytes())
        scores = sc.score_model(cases_dir, root, "camera", ColourGradientPatches(),
                                sc.estimated_sources("camera", backends, directory))
        return values(scores, "rpe_trans")["value"].item()

    assert rpe("exact") == pytest.approx(0.0, abs=1e-6) and rpe("backwards") > 0.5
    # Eq. 2 with a second estimator (ViPE beside DA3): the mean of the two
    assert rpe("exact", "backwards") == pytest.approx(rpe("backwards") / 2, rel=1e-9)


def test_dinov2_backend_plugs_in(tmp_path, cases_dir):
    """Any backend with the PatchFeatures contract: identical views give identical features."""
    from worldmemory.perception.dinov2 import Dinov2Features

    tiny = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, patch_size=14,
                image_size=28)
    root = write_rollouts(tmp_path / "rollouts", cases_dir, [("object_000", "LRLR", omniscient)])
    scores = sc.score_families(cases_dir, root, Dinov2Features.from_config(tiny, seed=0))
    np.testing.assert_allclose(values(scores, "object_appearance")["value"], 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="checkpoint"):
        feature_backend("dinov2")


def test_without_ground_truth_estimator_metrics_are_nan_with_the_reason(tmp_path, cases_dir):
    """An external model (no truth channels) is never scored by the oracle: with no estimator
    configured every metric that needs a tracker, depth, poses or the judge is a valid NaN
    carrying the config key that would select one."""
    specs = [("object_000", "LRLR", omniscient), ("environment_000", "LRLR", omniscient),
             ("dynamic_000", "LR-Hold", omniscient)]
    scores = score(tmp_path, cases_dir, specs, ground_truth=False)
    assert scores["value"].isna().all() and scores["valid"].all()
    reasons = dict(zip(scores["metric"], scores["reason"]))
    missing = {c: not_configured(f"worldmembench.perception.{c}", c) for c in ("tracking", "camera", "judge")}
    for metric in ("object_appearance", "object_geometry", "departed", "return_frames"):
        assert reasons[metric] == missing["tracking"]
    for metric in ("env_visible", "env_recon", "departure_deg", "rpe_rot"):
        assert reasons[metric] == missing["camera"]
    assert reasons["dyn_overall"] == missing["judge"]
    objects = {t["id"] for t in load_case(cases_dir / "object_000")["targets"]}
    rows = values(scores, "object_appearance")
    assert set(rows["target"]) == objects and sorted(set(rows["revisit"])) == [1, 2]


def test_departure_and_return_evidence_of_appendix_g1(tmp_path, cases_dir):
    """LRLR turns 180 degrees and comes back exactly: the environment departs by 180 and returns
    within 0 degrees; an object in view at frame 0 leaves the view during each departure and is
    seen again in R_k (the last frame of each return window)."""
    target = first_object(cases_dir)
    scores = score(tmp_path, cases_dir, [("environment_000", "LRLR", omniscient),
                                         ("object_000", "LRLR", omniscient)])
    np.testing.assert_allclose(values(scores, "departure_deg")["value"], [180.0, 180.0])
    np.testing.assert_allclose(values(scores, "return_error_deg")["value"], [0.0, 0.0], atol=1e-6)
    departed = values(scores, "departed", target.target)
    assert list(departed["value"]) == [1.0, 1.0]
    assert (values(scores, "return_frames", target.target)["value"] >= 1).all()


def test_a_target_that_never_leaves_view_has_no_departure_evidence(tmp_path, cases_dir):
    target = first_object(cases_dir)

    def following(world, traj, frame):
        """The object, pulled to 40% of its distance so it clears the walls, turns with the
        camera: the same camera-frame position in every frame."""
        out = copy.deepcopy(world)
        shape = next(o for o in out.objects if o.instance == target.instance).shape
        assert isinstance(shape, wd.Sphere)
        eye = traj.poses[0, :3, 3]
        near = eye + 0.4 * (np.asarray(shape.center) - eye)
        move = traj.poses[frame] @ np.linalg.inv(traj.poses[0])
        shape.center = (move[:3, :3] @ near + move[:3, 3]).tolist()
        shape.radius *= 0.4
        return out

    scores = score(tmp_path, cases_dir, [("object_000", "LRLR", following)])
    assert list(values(scores, "departed", target.target)["value"]) == [0.0, 0.0]


def test_the_case_cli_writes_byte_stable_csvs_that_join_into_the_models_scores(tmp_path, cases_dir):
    """A case's score job (the CLI, run twice) writes byte-identical files for every family, and
    its files joined per family (gather.py, as rule worldmembench_scores does) read back as the
    library's scores of the whole model."""
    root = write_rollouts(tmp_path / "rollouts", cases_dir, [("object_000", "LRLR", omniscient),
                                                              ("human_000", "LRLR", omniscient)])
    runs = {run: tmp_path / run for run in ("a", "b")}
    for out in runs.values():
        for case in ("human_000", "object_000"):
            subprocess.run([sys.executable, "-m", "worldmemory.worldmembench.score", "--case", str(cases_dir / case),
                            "--rollouts", str(root / case), "--out", str(out / "cases" / case)],
                           check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
    for case in ("human_000", "object_000"):
        for family in sc.FAMILIES:
            a, b = (out / "cases" / case / f"{family}.csv" for out in runs.values())
            assert a.read_bytes() == b.read_bytes(), (case, family)
    gather(runs["a"], ["human_000", "object_000"])
    back = read_scores([runs["a"] / f"{family}.csv" for family in sc.FAMILIES])  # as the tables read them
    direct = sc.score_families(cases_dir, root, ColourGradientPatches())
    assert len(back) == len(direct) > 0
    pd.testing.assert_frame_equal(back[["case", "metric", "target", "revisit", "valid", "reason"]],
                                  direct[["case", "metric", "target", "revisit", "valid", "reason"]],
                                  check_dtype=False)
    np.testing.assert_allclose(back["value"], direct["value"], rtol=1e-9)
    info = json.loads((runs["a"] / "static.json").read_text())
    assert (info["family"], info["features"]) == ("static", "patch-colour-gradient-descriptor")
    assert info["perception"] == {"tracking": "oracle", "faces": "oracle", "camera": "oracle", "depth": "oracle"}


def test_estimated_depth_reads_as_the_oracle_and_relative_depth_leaves_reconstruction_nan(tmp_path, cases_dir):
    """An external model's cached estimates: the truth poses as its camera estimate, and its depth
    as a relative inverse depth (s_t / z + c_t, per frame) give the oracle's Depth Spearman (rank
    correlation ignores a decreasing map of both maps) and a Reconstruction NaN naming the reason;
    metric z-depth gives both. The room is reshaped at the return, so Depth is below 1."""
    room = wd.World.from_dict(load_case(cases_dir / "environment_000")["world"]).room

    def reshaped(world, traj, frame):
        if frame < traj.return_windows()[0].start:
            return world
        return wd.perturb(world, [room.instance], 1.0, np.random.default_rng(1), reshape=True)

    spec = [("environment_000", "LRLR", reshaped)]
    oracle = score(tmp_path / "oracle", cases_dir, spec)
    root = write_rollouts(tmp_path / "external", cases_dir, spec, ground_truth=False)
    with np.load(root / "environment_000_LRLR.npz") as truth:
        z, poses, K = truth["depth"], truth["poses"], truth["K"]
    key, estimates = "environment_000/LRLR", tmp_path / "estimates"
    estimates.mkdir()
    save_estimates(estimates / "camera.npz", "feature-matching", {key: {"poses": poses, "K": K}})
    backends = {"camera": "feature-matching", "depth": "depth-anything"}
    scale = (1.0 + np.arange(len(z)) / 10.0)[:, None, None]
    inverse = np.where(np.isfinite(z) & (z > 0), scale / z + 0.5, np.nan).astype(np.float32)
    expected = values(oracle, "env_depth")["value"].to_numpy()
    assert (expected < 0.999).all()
    for depth, relative in ((inverse, True), (z, False)):
        save_estimates(estimates / "depth.npz", "depth-anything",
                       {key: {"depth": depth, "relative_inverse": np.array(relative)}})
        scores = sc.score_families(cases_dir, root, ColourGradientPatches(), backends, estimates)
        np.testing.assert_allclose(values(scores, "env_depth")["value"], expected, atol=1e-6)
        recon = values(scores, "env_recon")
        if relative:
            assert recon["value"].isna().all() and recon["valid"].all()
            assert recon["reason"].str.contains("relative inverse depth").all()
        else:
            np.testing.assert_allclose(recon["value"], values(oracle, "env_recon")["value"], atol=1e-9)


def test_estimated_faces_score_human_identity_by_eq4_on_the_faces_inside_each_mask(tmp_path, cases_dir):
    """Human Identity from cached faces (perception.faces): per frame the face whose nose tip lies
    in the person's mask counts, a better-scored face elsewhere does not. The person's face in
    R1 has the reference embedding (Eq. 4: 1); in R2 only an off-target face is found, so R2 has
    no valid observation (NaN, valid False: Eq. 1 scores it 0)."""
    spec = [("human_000", "LRLR", omniscient)]
    root = write_rollouts(tmp_path / "external", cases_dir, spec, ground_truth=False)
    entry = json.loads((root / "manifest.json").read_text())["rollouts"][0]
    with np.load(root / entry["truth"]) as truth:
        tracks = {target: truth["instance"] == i for target, i in entry["instances"].items()}
    person, masks = next(iter(tracks.items()))
    traj = tj.build("LRLR", width=W, height=H, **PARAMS["LRLR"])
    r2 = traj.revisits()[1][1]
    ref, other = np.eye(4, dtype=np.float32)[0], np.eye(4, dtype=np.float32)[1]
    rows = []  # frame, nose (x, y), score, embedding
    for t in np.flatnonzero(masks.sum(axis=(1, 2)) >= sc.MIN_PIXELS):
        ys, xs = np.nonzero(masks[t])
        inside = (xs[len(xs) // 2] + 0.5, ys[len(ys) // 2] + 0.5)
        outside = next((x + 0.5, y + 0.5) for y in range(H) for x in range(W) if not masks[t, y, x])
        rows.append((t, outside, 0.99, other))  # never on the target
        if not r2.start <= t < r2.end:
            rows.append((t, inside, 0.95, ref))
    landmarks = np.zeros((len(rows), 5, 2))
    landmarks[:, 2] = [nose for _, nose, _, _ in rows]
    faces = {"frame": np.array([r[0] for r in rows]), "box": np.zeros((len(rows), 4)), "landmarks": landmarks,
             "score": np.array([r[2] for r in rows]), "embedding": np.stack([r[3] for r in rows])}
    estimates = tmp_path / "estimates"
    estimates.mkdir()
    save_estimates(estimates / "tracking.npz", "optical-flow",
                   {"human_000/LRLR": {"targets": np.array(list(tracks)), "masks": np.stack(list(tracks.values()))}})
    save_estimates(estimates / "faces.npz", "arcface", {"human_000/LRLR": faces})
    scores = sc.score_families(cases_dir, root, ColourGradientPatches(),
                               {"tracking": "optical-flow", "faces": "arcface"}, estimates)
    identity = values(scores, "human_identity", person)
    assert identity["revisit"].tolist() == [1, 2]
    assert identity["value"].iloc[0] == pytest.approx(1.0) and identity["valid"].iloc[0]
    assert math.isnan(identity["value"].iloc[1]) and not identity["valid"].iloc[1]
    assert "no face found on the target in any frame of R2" in identity["reason"].iloc[1]
    for other_person in list(tracks)[1:]:  # no face of theirs was found at all
        rows = values(scores, "human_identity", other_person)
        assert rows["value"].isna().all() and not rows["valid"].any()
        assert rows["reason"].str.contains("any frame of V").all()


def test_rpe_rot_per_cycle_reads_the_cycle_that_under_turns(tmp_path, cases_dir):
    """Section 5.3's per-revisit RPE_rot: a camera that turns 0.67 of the way in the second cycle
    only reads 0.33 there (Eq. 3 on that cycle's increments), 0 in the first, and half of 0.33 over
    the rollout (both cycles turn equally far)."""
    root = write_rollouts(tmp_path / "rollouts", cases_dir, [("object_000", "LRLR", omniscient)])
    traj = tj.build("LRLR", width=W, height=H, **PARAMS["LRLR"])
    second = np.zeros(traj.n_frames, dtype=bool)
    d2, r2 = traj.revisits()[1]
    second[d2.start:r2.end] = True
    under = scale_rotation(traj.poses, 0.67)
    with np.load(root / "object_000_LRLR.npz") as npz:
        truth = {key: npz[key] for key in npz.files}
    truth["poses"] = np.where(second[:, None, None], under, traj.poses)
    np.savez_compressed(root / "object_000_LRLR.npz", **truth)
    rows = values(sc.score_model(cases_dir, root, "camera", ColourGradientPatches()), "rpe_rot")
    np.testing.assert_allclose(rows["value"], [0.33 / 2, 0.0, 0.33], atol=1e-9)
