"""Known answers for the reference world models and the rollout writer of WorldMemBench."""

import json

import numpy as np
import pytest
from worldmemory.common import rollout_index
from worldmemory.common.geometry import rotation_angle
from worldmemory.common.video import read_video
from worldmemory.worldmembench import cases, rollout
from worldmemory.worldmembench import reference_models as rm
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.metrics.camera import rpe_rot, rpe_trans
from worldmemory.worlds.raycaster import World, generate_world, render

W, H = 64, 48
SHORT = {"n_frames": 97, "hold_frames": 8, "final_hold_frames": 5}


def case(case_id):
    family = case_id.split("_")[0]
    return {"id": case_id, "family": family, "world": generate_world(case_id, family).to_dict()}


def traj(name="LR", **params):
    return tj.build(name, **{**SHORT, **params}, width=W, height=H)


def run(model, case_id="object_000", name="LR", **params):
    trajectory = traj(name)
    frames, truth = rm.run_reference(model, params, case(case_id), trajectory, W, H)
    return frames, truth, trajectory


def end_of_first_return(trajectory):
    return trajectory.return_windows()[0].end - 1


def target_difference(frames, truth, t, instance):
    """Mean absolute RGB difference between frame t and frame 0 under the target's mask."""
    mask = truth["instance"][0] == instance
    assert mask.any()
    return np.abs(frames[t].astype(float) - frames[0])[mask].mean()


def test_omniscient_renders_the_world_at_the_target_poses():
    frames, truth, trajectory = run("omniscient")
    world = World.from_dict(case("object_000")["world"])
    n = trajectory.n_frames
    assert frames.shape == (n, H, W, 3) and frames.dtype == np.uint8
    for t in range(0, n, 8):
        out = render(world, trajectory.poses[t], trajectory.intrinsics, W, H, frame=t)
        assert np.array_equal(frames[t], out["rgb"])
        assert np.array_equal(truth["instance"][t], out["instance"])
        assert np.array_equal(truth["depth"][t], out["depth"])
    assert np.array_equal(truth["poses"], trajectory.poses)
    assert np.array_equal(truth["K"], trajectory.intrinsics)
    assert np.array_equal(frames[-1], frames[0])  # back at the start view after the LR return


def test_truth_channels_and_event_state():
    _, truth, trajectory = run("omniscient")
    n = trajectory.n_frames
    assert set(truth) == {"instance", "depth", "poses", "K"}
    assert truth["instance"].dtype == np.int16 and truth["instance"].shape == (n, H, W)
    assert truth["depth"].dtype == np.float32 and truth["depth"].shape == (n, H, W)
    assert truth["poses"].dtype == np.float64 and truth["poses"].shape == (n, 4, 4)
    assert truth["K"].shape == (3, 3)
    _, truth, _ = run("omniscient", "dynamic_000")
    event = World.from_dict(case("dynamic_000")["world"]).events[0]
    assert truth["event_started"].dtype == bool and truth["event_progress"].dtype == np.float32
    expected = [event.state(t)["progress"] for t in range(n)]
    np.testing.assert_allclose(truth["event_progress"], expected, rtol=1e-6)
    assert np.array_equal(truth["event_started"], np.arange(n) >= event.start)


@pytest.mark.parametrize("case_id, name", [("human_000", "LRLR"), ("dynamic_000", "LR"),
                                           ("environment_000", "LRUD")])
def test_drifting_at_rate_zero_is_omniscient(case_id, name):
    frames, truth, _ = run("omniscient", case_id, name)
    drift_frames, drift_truth, _ = run("drifting", case_id, name, rate=0.0)
    assert np.array_equal(drift_frames, frames)
    assert truth.keys() == drift_truth.keys()
    assert all(np.array_equal(truth[k], drift_truth[k]) for k in truth)


def test_drifting_changes_a_returning_target_more_at_higher_rates():
    differences = []
    for rate in (0.0, 0.05, 0.2, 1.0):
        frames, truth, trajectory = run("drifting", rate=rate)
        back = end_of_first_return(trajectory)
        assert (truth["instance"][back] == 1).sum() >= 20  # back in view (reshaped, rate > 0)
        v = trajectory.phases[0]
        assert np.array_equal(frames[v.start:v.end], np.repeat(frames[:1], len(v), axis=0))
        differences.append(target_difference(frames, truth, back, instance=1))
    assert differences[0] == 0
    assert np.all(np.diff(differences) > 0), differences


def test_amnesic_resamples_a_target_that_left_the_view():
    frames, truth, trajectory = run("amnesic")
    omniscient, _, _ = run("omniscient")
    back = end_of_first_return(trajectory)
    v = trajectory.phases[0]
    assert np.array_equal(frames[v.start:v.end], omniscient[v.start:v.end])
    assert not (truth["instance"][trajectory.revisits()[0][0].end - 1] == 1).any()  # it left
    before, after = truth["instance"][0] == 1, truth["instance"][back] == 1
    assert after.sum() >= 20 and not np.array_equal(before, after)  # back, in a new shape
    assert target_difference(frames, truth, back, instance=1) > 10


def test_drifting_heads_for_what_amnesic_resamples():
    """Common random numbers: a rate that saturates the drift (amount 1) on the first return
    draws exactly the world amnesic draws then, so the two part only at the second return."""
    frames, truth, trajectory = run("drifting", "object_000", "LRLR", rate=1e3)
    amnesic, amnesic_truth, _ = run("amnesic", "object_000", "LRLR")
    second = trajectory.return_windows()[1].start
    assert np.array_equal(frames[:second], amnesic[:second])
    assert np.array_equal(truth["depth"][:second], amnesic_truth["depth"][:second])
    assert not np.array_equal(frames[second:], amnesic[second:])


def test_amnesic_resets_an_event_when_it_returns_into_view():
    _, truth, trajectory = run("amnesic", "dynamic_000")
    progress = truth["event_progress"]
    drops = np.flatnonzero(np.diff(progress) < 0) + 1
    r1 = trajectory.return_windows()[0]
    assert len(drops) == 1 and r1.start <= drops[0] < r1.end
    assert progress[drops[0]] == 0 and progress[drops[0] - 1] > 0
    assert truth["event_started"][drops[0]]
    _, truth, _ = run("omniscient", "dynamic_000")
    assert np.all(np.diff(truth["event_progress"]) >= 0)


def test_camera_error_scales_the_rotation():
    frames, truth, trajectory = run("camera_error")
    turn = trajectory.revisits()[0][0].end - 1
    target, drawn = trajectory.poses, truth["poses"]
    error = rotation_angle(target[turn, :3, :3].T @ drawn[turn, :3, :3])
    assert np.degrees(error) == pytest.approx(90 * (1 - 0.67), abs=1e-6)
    assert np.array_equal(drawn[:, :3, 3], target[:, :3, 3])
    assert rpe_rot(target, drawn) == pytest.approx(0.33, abs=1e-6)
    _, truth, _ = run("omniscient")
    assert rpe_rot(target, truth["poses"]) == 0
    world = World.from_dict(case("object_000")["world"])  # perfect memory at the drawn pose
    out = render(world, drawn[turn], trajectory.intrinsics, W, H, frame=turn)
    assert np.array_equal(frames[turn], out["rgb"])


def test_camera_error_steps_sideways_by_the_scale_and_rpe_trans_reads_it():
    """On the translation loop the camera-error model draws the square as a rectangle (its
    sideways legs scaled by translation_scale), closes the loop, keeps the orientation, and
    RPE_trans (Sim(3)-aligned, so a uniform scale would read 0) grows as the scale moves from 1:
    exactly 0 at 1, then 0.8 < 0.67 < 0.5 in error."""
    _, truth, trajectory = run("camera_error", name="translation")
    target, drawn = trajectory.poses, truth["poses"]
    right = target[0, :3, 0]
    offsets = target[:, :3, 3] - target[0, :3, 3]
    drawn_offsets = drawn[:, :3, 3] - drawn[0, :3, 3]
    np.testing.assert_allclose(drawn_offsets @ right, 0.67 * (offsets @ right), atol=1e-12)
    np.testing.assert_allclose(drawn_offsets - np.outer(drawn_offsets @ right, right),
                               offsets - np.outer(offsets @ right, right), atol=1e-12)
    assert np.abs(offsets @ right).max() == pytest.approx(0.25)  # the loop does step sideways
    np.testing.assert_allclose(drawn[-1], target[-1], atol=1e-12)  # back where it started
    np.testing.assert_allclose(drawn[:, :3, :3], target[:, :3, :3], atol=1e-12)
    errors = [rpe_trans(target, {"drawn": rm.scale_sideways(target, scale)}) for scale in (1.0, 0.8, 0.67, 0.5)]
    assert errors[0] == pytest.approx(0.0, abs=1e-9)
    assert 0 < errors[1] < errors[2] < errors[3]
    assert rpe_trans(target, {"drawn": drawn}) == pytest.approx(errors[2], abs=1e-12)
    uniform = target.copy()
    uniform[:, :3, 3] *= 0.67  # a similarity of the target path: Eq. 2 forgives it
    assert rpe_trans(target, {"uniform": uniform}) == pytest.approx(0.0, abs=1e-9)


def test_unknown_models_and_parameters_are_named():
    with pytest.raises(ValueError, match="valid: omniscient, amnesic, drifting, camera_error"):
        run("perfect")
    with pytest.raises(ValueError, match="unknown parameters rate; valid: min_pixels"):
        run("amnesic", rate=0.1)


# ---------------------------------------------------------------------------------------------
# The rollout CLI

TRAJECTORIES = {"human": ["LR"], "object": ["translation"], "environment": ["LRUD"],
                "dynamic": ["LR-Hold"]}
TINY = {"n_frames": 49, "hold_frames": 4, "final_hold_frames": 3}


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cases")
    cases.write_embedded_cases(out, per_family=1, width=W, height=H, trajectories=TRAJECTORIES)
    return out


def cli(case_dir, out, model="amnesic", *extra):
    """The rollout CLI on every case, one call per case as the rule makes them, then the model's
    manifest (common.rollout_index, rule worldmembench_rollouts)."""
    ids = sorted(p.name for p in case_dir.iterdir())
    for case in ids:
        rollout.main(["--case", str(case_dir / case), "--model", model, "--kind", "reference",
                      "--params", '{"min_pixels": 20}', "--trajectory-params", json.dumps(TINY),
                      "--width", str(W), "--height", str(H), "--out", str(out / case), *extra])
    rollout_index.main(["--model-dir", str(out), "--units", *ids])


def test_cli_writes_videos_truth_and_manifest(case_dir, tmp_path, capsys):
    cli(case_dir, tmp_path / "a")
    assert capsys.readouterr().out.count(" s\n") == 4  # one progress line per rollout
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert {k: manifest[k] for k in ("model", "kind", "ground_truth", "params")} == {
        "model": "amnesic", "kind": "reference", "ground_truth": True,
        "params": {"min_pixels": 20}}
    entries = manifest["rollouts"]
    assert [(r["case"], r["trajectory"]) for r in entries] == [
        ("dynamic_000", "LR-Hold"), ("environment_000", "LRUD"), ("human_000", "LR"),
        ("object_000", "translation")]
    for entry, loaded in zip(entries, sorted(cases.load_cases(case_dir), key=lambda c: c["id"])):
        assert entry["family"] == loaded["family"]
        assert entry["video"] == f"{entry['case']}/{entry['trajectory']}/video.mkv"
        world = World.from_dict(loaded["world"])
        assert entry["instances"] == {t["id"]: next(e.instance for e in world.entities()
                                                    if e.target == t["id"])
                                      for t in loaded["targets"]}
        trajectory = tj.build(entry["trajectory"], loaded.get("trajectory_params"), **TINY, width=W, height=H)
        frames, truth = rm.run_reference("amnesic", {}, loaded, trajectory, W, H)
        assert np.array_equal(read_video(tmp_path / "a" / entry["video"]), frames)
        with np.load(tmp_path / "a" / entry["truth"]) as stored:
            assert set(stored.files) == set(truth)
            assert all(np.array_equal(stored[k], truth[k]) for k in truth)
            assert stored["instance"].shape == (trajectory.n_frames, H, W)
        written = json.loads((tmp_path / "a" / entry["trajectory_file"]).read_text())
        assert written == trajectory.to_json()
    assert {"event_started", "event_progress"} <= set(np.load(tmp_path / "a" / entries[0]["truth"]))


def test_cli_output_is_deterministic(case_dir, tmp_path):
    """Equal inputs, equal files: every one but the timed cost sidecars (cost.json, costs.csv)."""
    cli(case_dir, tmp_path / "a")
    cli(case_dir, tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*")
                   if p.is_file() and p.name not in ("cost.json", "costs.csv"))
    assert len(files) == 1 + 4 * (1 + 3)  # the model's manifest, each case's and its video, truth, trajectory
    for rel in files:
        a, b = tmp_path / "a" / rel, tmp_path / "b" / rel
        if rel.suffix == ".mkv":  # Matroska stores random segment ids: compare the decoded frames
            assert np.array_equal(read_video(a), read_video(b))
        else:
            assert a.read_bytes() == b.read_bytes(), rel


def test_cli_errors_are_clear(case_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli(case_dir, tmp_path / "x", "perfect")
    assert "valid: omniscient, amnesic, drifting, camera_error" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--kind external needs --command"):
        rollout.write_rollouts(case_dir, "some-model", "external", {}, TINY, tmp_path)
    with pytest.raises(ValueError, match="unknown kind 'oracle'"):
        rollout.write_rollouts(case_dir, "some-model", "oracle", {}, TINY, tmp_path)
    with pytest.raises(ValueError, match="width"):
        rollout.write_rollouts(case_dir, "omniscient", "reference", {}, {**TINY, "width": 32},
                               tmp_path)
