"""WorldMemBench's external-model contract (its request files in external.py, rollout --kind
external, the shared command contract of worldmemory.external) with a real command: the
still-frame model of still_model.py, run through bash like any user's model."""

import json
import math
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from worldmemory.common.video import read_video
from worldmemory.external import check_template, check_video, run_model
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.perception.registry import not_configured
from worldmemory.worldmembench import external
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import load_case, write_embedded_case, write_embedded_cases
from worldmemory.worldmembench.rollout import main, write_rollouts
from worldmemory.worldmembench.score import score_families
from worldmemory.worldmembench.tables import table2, table2_reasons

REPO = Path(__file__).resolve().parents[2]
STILL = "python -m worldmemory.worldmembench.still_model --request {request}"
PARAMS = {"n_frames": 161, "hold_frames": 32, "final_hold_frames": 9}


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cases")
    write_embedded_cases(out, 1, 64, 48, {"human": ["LRLR"], "object": ["translation"],
                                          "environment": ["LRUD"], "dynamic": ["LR-Hold"]},
                         PARAMS)
    return out


@pytest.fixture(autouse=True)
def package_on_path(monkeypatch):
    """The command runs in a child bash, which finds the package through PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", str(REPO / "scripts"))
    monkeypatch.setenv("PATH", f"{Path(os.sys.executable).parent}:{os.environ['PATH']}")


def test_template_placeholders_are_checked():
    check_template(STILL, external.PLACEHOLDERS)
    check_template("model --image {conditioning} --out {video}", external.PLACEHOLDERS)
    with pytest.raises(ValueError, match=r"unknown placeholders \['poses'\]"):
        check_template("model --poses {poses} --out {video}", external.PLACEHOLDERS)
    with pytest.raises(ValueError, match=r"\{video\}.*\{request\}"):
        check_template("model --image {conditioning}", external.PLACEHOLDERS)


def test_caption_segments_are_runs_of_equal_captions():
    assert external.caption_segments(["Hold", "Hold", "Left", "Right", "Right"]) == [
        {"caption": "Hold", "start": 0, "end": 2}, {"caption": "Left", "start": 2, "end": 3},
        {"caption": "Right", "start": 3, "end": 5}]


def test_request_files_carry_the_case_and_the_camera_path(tmp_path, cases_dir):
    case = load_case(cases_dir / "human_000")
    traj = tj.build("LRLR", **PARAMS, width=64, height=48)
    request = external.write_request(case, traj, 64, 48, tmp_path)
    assert json.loads(Path(request["request"]).read_text())["video"] == request["video"]
    assert Path(request["conditioning"]).read_bytes() == Path(case["conditioning_frame"]).read_bytes()
    assert Path(request["prompt_file"]).read_text() == case["prompt"] + "\n"
    assert Path(request["trajectory"]) == (tmp_path / "trajectory.json").resolve()  # beside the video
    stored = json.loads(Path(request["trajectory"]).read_text())
    np.testing.assert_allclose(stored["poses"], traj.poses, atol=1e-9)
    assert [p["name"] for p in stored["phases"]] == ["V", "D1", "R1", "D2", "R2", "H"]
    captions = Path(request["captions"]).read_text().split()
    assert captions == traj.captions and len(captions) == request["n_frames"] == 161
    assert sum(s["end"] - s["start"] for s in request["caption_segments"]) == 161


def test_still_model_rollouts_are_scored_nan_with_the_missing_backends(tmp_path, cases_dir):
    manifest = write_rollouts(cases_dir, "still", "external", {}, PARAMS, tmp_path / "still",
                              command=STILL)
    assert manifest["ground_truth"] is False and manifest["params"] == {"command": STILL}
    assert len(manifest["rollouts"]) == 4
    entry = next(r for r in manifest["rollouts"] if r["case"] == "human_000")
    frames = read_video(tmp_path / "still" / entry["video"])
    conditioning = np.asarray(Image.open(cases_dir / "human_000" / "conditioning.png").convert("RGB"))
    assert frames.shape == (161, 48, 64, 3)
    assert (frames == frames[0]).all()  # a still
    assert np.abs(frames[0].astype(int) - conditioning).mean() < 1  # H.264 4:4:4 crf 0: YUV rounding only

    # no estimator configured: every metric NaN, the reason naming the key that selects one
    scores = score_families(cases_dir, tmp_path / "still", ColourGradientPatches(), backends={})
    assert scores["value"].isna().all()
    row = table2(scores).iloc[0]
    assert row["model"] == "still" and all(math.isnan(v) for v in row.drop("model"))
    reasons = table2_reasons(scores).set_index("metric")["reason"]
    key = "worldmembench.perception"
    assert reasons["human_appearance"] == not_configured(f"{key}.tracking", "tracking")
    assert reasons["env_depth"] == not_configured(f"{key}.camera", "camera")
    assert reasons["dyn_overall"] == not_configured(f"{key}.judge", "judge")
    assert reasons["rpe_trans"] == not_configured(f"{key}.camera", "camera")
    assert reasons["imaging_quality"] == not_configured(f"{key}.imaging_quality", "imaging_quality")


def test_every_rollout_keeps_one_trajectory_file(tmp_path, cases_dir):
    """The camera path is written once per rollout, beside the video (the manifest's
    trajectory_file), and request.json points the command at that copy."""
    manifest = write_rollouts(cases_dir, "still", "external", {}, PARAMS, tmp_path / "still", command=STILL)
    written = sorted((tmp_path / "still").rglob("trajectory.json"))
    assert written == sorted(tmp_path / "still" / r["trajectory_file"] for r in manifest["rollouts"])
    for entry in manifest["rollouts"]:
        request = json.loads((tmp_path / "still" / entry["video"]).with_name("request").joinpath(
            "request.json").read_text())
        assert Path(request["trajectory"]) == (tmp_path / "still" / entry["trajectory_file"]).resolve()


def test_prompt_reaches_the_command_intact_and_every_log_is_kept(tmp_path, cases_dir):
    command = "printf '%s' \"$(cat {prompt_file})\" > {video}.prompt && " + STILL
    manifest = write_rollouts(cases_dir, "echo", "external", {}, PARAMS, tmp_path / "echo",
                              command=command, log_dir=tmp_path / "logs")
    for entry in manifest["rollouts"]:
        case = load_case(cases_dir / entry["case"])
        written = (tmp_path / "echo" / entry["video"]).with_suffix(".mp4.prompt").read_text()
        assert written == case["prompt"]
        log = tmp_path / "logs" / entry["case"] / f"{entry['trajectory']}.log"
        assert not (tmp_path / "echo" / entry["video"]).with_name("command.log").exists()  # kept once
        assert "still frames" in log.read_text() and "[exit status 0 after" in log.read_text()


@pytest.mark.parametrize("command, message", [
    ("echo loading weights; exit 3; true {video}", r"exited with status 3.*loading weights"),
    ("true {video}", "wrote no video"),
])
def test_a_failing_model_names_the_rollout_and_its_output(tmp_path, cases_dir, command, message):
    with pytest.raises(RuntimeError, match=f"(?s)dynamic_000/LR-Hold.*{message}") as e:
        write_rollouts(cases_dir, "bad", "external", {}, PARAMS, tmp_path / "bad",
                       command=command, log_dir=tmp_path / "logs")
    copy = tmp_path / "logs" / "dynamic_000" / "LR-Hold.log"
    assert f"Its output ({copy})" in str(e.value)
    assert "[exit status" in copy.read_text() and not list((tmp_path / "bad").rglob("*.log"))  # kept once


def test_the_cli_kills_a_model_past_its_time_and_keeps_its_log(tmp_path, cases_dir):
    """--timeout-minutes (the model's runtime) and --log-dir, as the rule passes them; the log
    outlives the rollout directory, which Snakemake deletes when the job fails."""
    start = time.monotonic()
    with pytest.raises(RuntimeError) as e:
        main(["--case", str(cases_dir / "dynamic_000"), "--model", "slow", "--kind", "external",
              "--command", "echo loading weights; sleep 30; true {video}",
              "--trajectory-params", json.dumps(PARAMS), "--timeout-minutes", "0.02",
              "--log-dir", str(tmp_path / "logs"), "--out", str(tmp_path / "slow" / "dynamic_000")])
    assert time.monotonic() - start < 10
    copy = tmp_path / "logs" / "dynamic_000" / "LR-Hold.log"
    assert str(e.value).startswith("external model on dynamic_000/LR-Hold: `echo loading weights")
    assert "time limit of 0.02 min ran out" in str(e.value) and f"({copy})" in str(e.value)
    shutil.rmtree(tmp_path / "slow")
    assert "loading weights\n" in copy.read_text()


@pytest.mark.parametrize("args, message", [
    (["--command", "echo {prompt} > {video}"], r"\{prompt\} is free text.*use \{prompt_file\}"),
    (["--command", STILL, "--timeout-minutes", "0"], "--timeout-minutes must be a positive"),
])
def test_the_cli_refuses_a_bad_template_or_time_limit_up_front(tmp_path, cases_dir, capsys, args,
                                                               message):
    with pytest.raises(SystemExit) as e:
        main(["--case", str(cases_dir / "human_000"), "--model", "m", "--kind", "external", *args,
              "--out", str(tmp_path / "m" / "human_000")])
    assert e.value.code == 2 and re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "m").exists()


def test_a_failed_rollout_costs_only_itself_the_store_keeps_the_others(tmp_path, monkeypatch):
    """A model that fails on one trajectory of a case: rerun, the case's job links the rollouts
    that had finished from the store (common.rollout_store) instead of running the model on them
    again, and runs it only where it failed; a changed command (another identity) runs it again
    everywhere. Snakemake deletes the failed job's output in between, as the rule's would be."""
    case_dir = write_embedded_case(tmp_path / "cases" / "object_000", "object_000", "object", None, 64, 48,
                                   ["LRLR", "LRUD", "translation"], PARAMS)
    calls, fixed = tmp_path / "calls.txt", tmp_path / "fixed"
    monkeypatch.setenv("CALLS", str(calls))
    monkeypatch.setenv("FIXED", str(fixed))
    flaky = ('echo {trajectory_name} >> "$CALLS"; if [ {trajectory_name} = LRUD ] && [ ! -e "$FIXED" ]; '
             'then echo CUDA out of memory; exit 1; fi; ' + STILL)
    out, store = tmp_path / "rollouts" / "flaky" / "object_000", tmp_path / "store" / "flaky" / "object_000"

    def run(command):
        main(["--case", str(case_dir), "--model", "flaky", "--kind", "external", "--command", command,
              "--trajectory-params", json.dumps(PARAMS), "--store", str(store), "--out", str(out)])

    with pytest.raises(RuntimeError, match="object_000/LRUD.*exited with status 1"):
        run(flaky)
    shutil.rmtree(out)  # what Snakemake does with a failed job's output
    assert calls.read_text().split() == ["LRLR", "LRUD"]
    fixed.touch()
    run(flaky)
    assert calls.read_text().split() == ["LRLR", "LRUD", "LRUD", "translation"]  # LRLR was not made again
    manifest = json.loads((out / "rollouts.json").read_text())
    assert [r["trajectory"] for r in manifest["rollouts"]] == ["LRLR", "LRUD", "translation"]
    for entry in manifest["rollouts"]:
        video = out.parent / entry["video"]
        assert video.samefile(store / entry["trajectory"] / video.name)  # a link, not a copy
        assert json.loads((out.parent / entry["cost"]).read_text())["wall_s"] > 0
    shutil.rmtree(out)
    run(flaky)  # a rerun with nothing failed (a forced rerun, a changed rule) makes nothing again
    assert calls.read_text().split() == ["LRLR", "LRUD", "LRUD", "translation"]
    assert (out / "LRLR" / "video.mp4").samefile(store / "LRLR" / "video.mp4")
    shutil.rmtree(out)
    monkeypatch.setenv("FIXED", str(tmp_path / "missing"))  # would fail LRUD again if it ran
    with pytest.raises(RuntimeError, match="object_000/LRUD"):
        run(flaky.replace("exit 1", "exit 2"))  # another command: another identity, every rollout made again
    assert calls.read_text().split() == ["LRLR", "LRUD", "LRUD", "translation", "LRLR", "LRUD"]


def test_a_changed_model_digest_makes_the_rollouts_again(tmp_path, monkeypatch):
    """--model-digest (a model entry's version and files, common.rollout_store.model_digest) is
    part of each rollout's identity: the same digest links the stored video back, another makes it
    again."""
    case_dir = write_embedded_case(tmp_path / "cases" / "human_000", "human_000", "human", None, 64, 48,
                                   ["LRLR"], PARAMS)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("CALLS", str(calls))
    out, store = tmp_path / "rollouts" / "mine" / "human_000", tmp_path / "store" / "mine" / "human_000"

    def run(digest):
        main(["--case", str(case_dir), "--model", "mine", "--kind", "external", "--command",
              'echo {trajectory_name} >> "$CALLS"; ' + STILL, "--trajectory-params", json.dumps(PARAMS),
              "--store", str(store), "--model-digest", digest, "--out", str(out)])
        shutil.rmtree(out)  # a forced rerun, or a changed param, starts from an empty output

    run("a" * 64)
    run("a" * 64)
    assert calls.read_text().split() == ["LRLR"]
    run("b" * 64)
    assert calls.read_text().split() == ["LRLR", "LRLR"]


def test_a_video_of_the_wrong_length_says_how_to_fix_it(tmp_path, cases_dir):
    case = load_case(cases_dir / "dynamic_000")
    traj = tj.build("LR-Hold", **PARAMS, width=64, height=48)
    request = external.write_request(case, traj, 64, 48, tmp_path)
    video = run_model(STILL, request, tmp_path / "log.txt", external.PLACEHOLDERS)
    fix = "trajectory_params: {{LR-Hold: {{n_frames: {length}}}}}"
    assert check_video(video, 161, "still", fix) == (48, 64)
    native = r"wrote 161 frames, the trajectory has 165 \(the model.s native length\?\).*LR-Hold: \{n_frames: 161\}"
    with pytest.raises(ValueError, match=native):
        check_video(video, 165, "still", fix)


@pytest.mark.parametrize("asked, says", [
    (162, r"wrote 161 frames, 1 fewer than the 162.*drops a frame.*frame loop.*would then write 160"),
    (160, r"wrote 161 frames, 1 more than the 160.*adds a frame.*frame loop.*would then write 162"),
    (163, r"wrote 161 frames, 2 fewer than the 163.*drops 2 frames.*would then write 159"),
])
def test_an_off_by_one_video_points_at_the_frame_loop(tmp_path, cases_dir, asked, says):
    """A video a frame or a few off its asked length is a frame loop's error: setting n_frames to
    what was written would chase itself (240 -> 239 -> 238), so the error says to fix the loop;
    a length far off (test above) is a native length, fixed in the config."""
    case = load_case(cases_dir / "dynamic_000")
    request = external.write_request(case, tj.build("LR-Hold", **PARAMS, width=64, height=48), 64, 48, tmp_path)
    video = run_model(STILL, request, tmp_path / "log.txt", external.PLACEHOLDERS)
    with pytest.raises(ValueError, match=says) as error:
        check_video(video, asked, "still", "trajectory_params: {{LR-Hold: {{n_frames: {length}}}}}")
    assert "native length" not in str(error.value)
