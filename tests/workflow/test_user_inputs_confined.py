"""Known answers for a user's case and 360-degree video folders (issue 39): every file they name
stays inside the folder (common.confine), labels.npz loads without pickle (common.npz), a case's
own trajectory_params are typed and range-checked like the config's, and frame counts and rates
are bounded (common.limits). Each refusal comes from check_config, before any job, and names the
case or video, the key or file, what was expected and the fix."""

import copy
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.utils import validate
from worldmemory.common.confine import outside
from worldmemory.common.limits import MAX_FPS, MAX_FRAMES, MIN_FPS
from worldmemory.common.npz import save_npz
from worldmemory.persistbench.plan import sequence_plan
from worldmemory.workflow.config_checks import check_config
from worldmemory.worldmembench.cases import MANIFEST, load_case, write_embedded_case

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
validate(DEFAULT, str(SCHEMA), set_default=True)
FIX = "Fix: copy the file into that folder (in place of any symlink) and name it by its path there"


@pytest.fixture
def case_dir(tmp_path):
    """A user case directory (cases/human_000, a good case) and a file outside it."""
    case = write_embedded_case(tmp_path / "cases" / "human_000", "human_000", "human", None, 64, 48,
                               ["LRLR", "translation"])
    (tmp_path / "secret.png").write_bytes((case / "conditioning.png").read_bytes())
    return case


def edit(case_dir: Path, change) -> None:
    manifest = json.loads((case_dir / MANIFEST).read_text())
    change(manifest)
    (case_dir / MANIFEST).write_text(json.dumps(manifest))


def config_problems(case_dir: Path) -> str:
    """check_config's message for the config whose worldmembench.cases.source is the case's parent."""
    config = copy.deepcopy(DEFAULT)
    config["worldmembench"]["cases"]["source"] = str(case_dir.parent)
    with pytest.raises(ValueError) as info:
        check_config(config)
    return str(info.value)


def test_a_good_case_loads_with_its_files_inside_its_folder(case_dir):
    config = copy.deepcopy(DEFAULT)
    config["worldmembench"]["cases"]["source"] = str(case_dir.parent)
    check_config(config)
    case = load_case(case_dir)
    assert case["conditioning_frame"] == str(case_dir.resolve() / "conditioning.png")
    assert case["trajectory_params"]["translation"]["side"] > 0


@pytest.mark.parametrize("key, value, why", [
    ("conditioning_frame", "/etc/passwd", "an absolute path"),
    ("conditioning_frame", "../secret.png", "a path through '..'"),
    ("targets[0].mask", "masks/../../secret.png", "a path through '..'"),
])
def test_a_case_file_outside_its_folder_is_refused_before_any_job(case_dir, key, value, why):
    def change(manifest):
        if key == "conditioning_frame":
            manifest["conditioning_frame"] = value
        else:
            manifest["targets"][0]["mask"] = value

    edit(case_dir, change)
    message = config_problems(case_dir)
    assert message.startswith("config: 1 problem(s)\n- worldmembench.cases.source = ")
    assert (f": case human_000: {key} = {value!r}: {why}; expected a path relative to the folder {case_dir}, "
            "inside it") in message
    assert FIX in message
    with pytest.raises(ValueError, match=r"case human_000: .*Fix: copy the file"):
        load_case(case_dir)  # and the job's own loading refuses it the same way


def test_a_symlink_leading_out_of_the_case_is_refused_one_staying_inside_is_not(case_dir):
    frame = case_dir / "conditioning.png"
    frame.rename(case_dir / "frames.png")
    frame.symlink_to(case_dir.parent.parent / "secret.png")  # the file a symlink
    message = config_problems(case_dir)
    assert (f"case human_000: conditioning_frame = 'conditioning.png': a symlink leading out of the folder (it "
            f"resolves to {(case_dir.parent.parent / 'secret.png').resolve()})") in message
    assert FIX in message
    frame.unlink()
    frame.symlink_to("frames.png")  # inside the folder: fine
    load_case(case_dir)
    masks = case_dir / "masks"
    masks.rename(case_dir.parent.parent / "masks")
    masks.symlink_to(case_dir.parent.parent / "masks")  # a folder on the way leads out
    message = config_problems(case_dir)
    assert "case human_000: targets[0].mask = 'masks/person_0.png': a symlink leading out of the folder" in message


def test_outside_resolves_relative_to_the_folder(tmp_path):
    assert outside(tmp_path, "a/b.png") is None
    assert outside(tmp_path, "a/../b.png") == "a path through '..'"
    assert outside(tmp_path, str(tmp_path / "b.png")) == "an absolute path"


@pytest.mark.parametrize("block, expected", [
    ({"translation": {"side": "big"}},
     "case human_000: trajectory_params.translation.side = 'big': expected a number. Fix: write it as a bare value"),
    ({"LRLR": {"n_frames": "241"}},
     "case human_000: trajectory_params.LRLR.n_frames = '241': expected an integer. Fix: write it as a bare value"),
    ({"LRLR": {"n_frame": 241}},
     "case human_000: trajectory_params.LRLR.n_frame = 241: unknown key 'n_frame'; expected one of the parameters "
     "of the LRLR trajectory"),
    ({"LRLR": {"width": 64}},
     "case human_000: trajectory_params.LRLR.width = 64: set from the case camera, not here. Fix: remove it"),
])
def test_a_cases_trajectory_params_are_typed(case_dir, block, expected):
    edit(case_dir, lambda m: m.update(trajectory_params=block))
    with pytest.raises(ValueError) as info:
        load_case(case_dir)
    assert expected in str(info.value)
    assert expected in config_problems(case_dir)


@pytest.mark.parametrize("block, expected", [
    ({"LRLR": {"n_frames": 1_000_000_000}},
     f"n_frames = 1000000000 for LRLR: expected at most {MAX_FRAMES} frames (common/limits.py)"),
    ({"translation": {"side": -1.0}}, "side must be positive, got -1.0"),
    ({"LRLR": {"fps": 1e300}}, f"fps = 1e+300: expected a frame rate in [{MIN_FPS}, {MAX_FPS}]"),
    # fits alone (the builder's default n_frames is 493), not under the config's 241 frames
    ({"LRLR": {"hold_frames": 400}}, "n_frames=241 too small for LRLR: needs 400 (V)"),
])
def test_a_cases_trajectory_params_are_range_checked_under_each_models(case_dir, block, expected):
    edit(case_dir, lambda m: m.update(trajectory_params=block))
    load_case(case_dir)  # typed: the ranges need the config's parameters
    message = config_problems(case_dir)
    name = next(iter(block))
    assert f"- worldmembench.cases.source: case human_000: trajectory_params.{name}: {expected}" in message
    assert "Fix: correct the case's value in its case.json" in message


@pytest.mark.parametrize("fps", [1e300, 1e-9])
def test_a_cases_frame_rate_is_bounded(case_dir, fps):
    edit(case_dir, lambda m: m["camera"].update(fps=fps))
    with pytest.raises(ValueError, match=r"case human_000: camera\.fps: .* (greater|less) than the (maximum|minimum)"):
        load_case(case_dir)


def test_a_config_trajectory_of_a_billion_frames_is_refused_naming_the_bound():
    config = copy.deepcopy(DEFAULT)
    config["worldmembench"]["trajectory_params"]["n_frames"] = 1_000_000_000
    with pytest.raises(ValueError) as info:
        check_config(config)
    assert (f"- worldmembench.trajectory_params: the LRLR trajectory: n_frames = 1000000000 for LRLR: expected at "
            f"most {MAX_FRAMES} frames (common/limits.py)") in str(info.value)


def test_the_schemas_bounds_are_common_limits():
    schema = yaml.safe_load(SCHEMA.read_text())
    pb = schema["properties"]["persistbench"]["properties"]["sequences"]["properties"]
    assert pb["n_frames"]["maximum"] == MAX_FRAMES
    fps = schema["properties"]["permanence"]["properties"]["intphys"]["properties"]["source_fps"]
    assert (fps["minimum"], fps["maximum"]) == (MIN_FPS, MAX_FPS)
    case = yaml.safe_load((REPO / "scripts/worldmemory/worldmembench/case.schema.yaml").read_text())
    camera = case["properties"]["camera"]["properties"]["fps"]
    assert (camera["minimum"], camera["maximum"]) == (MIN_FPS, MAX_FPS)


# -- PersistBench: a user's 360-degree video folder ----------------------------------------------
@pytest.fixture
def videos(tmp_path):
    """A user's folder of 360-degree videos with one, clip_a (video.json and labels.npz)."""
    clip = tmp_path / "videos" / "clip_a"
    clip.mkdir(parents=True)
    (clip / "video.json").write_text('{"kind": "static", "target": 1}')
    save_npz(clip / "labels.npz", {"labels": np.ones((2, 4, 8), np.int32)})
    return tmp_path / "videos"


def pb_problems(videos: Path) -> str:
    config = copy.deepcopy(DEFAULT)
    config["persistbench"]["sequences"]["source"] = str(videos)
    with pytest.raises(ValueError) as info:
        check_config(config)
    return str(info.value)


def test_a_good_video_folder_is_planned(videos):
    assert sequence_plan(str(videos), 0) == ["clip_a"]
    (videos / "clip_a" / "labels.npz").rename(videos / "clip_a" / "labels-v1.npz")
    (videos / "clip_a" / "labels.npz").symlink_to("labels-v1.npz")  # a symlink inside the folder
    assert sequence_plan(str(videos), 0) == ["clip_a"]


@pytest.mark.parametrize("write, problem", [
    (lambda p: np.savez(p, labels=np.array([{"a": 1}, 2], dtype=object)),
     "labels.npz holds 'labels' as Python objects (object), which only pickle can load"),
    (lambda p: p.write_bytes(pickle.dumps({"labels": np.ones(3)})), "labels.npz is no .npz archive"),
    (lambda p: save_npz(p, {"label": np.ones(3)}), "labels.npz holds no array 'labels' (its arrays: 'label')"),
])
def test_a_pickled_labels_npz_is_refused_before_any_job(videos, write, problem):
    labels = videos / "clip_a" / "labels.npz"
    labels.unlink()
    write(labels)
    message = pb_problems(videos)
    assert f"360-degree video clip_a: {problem}" in message
    assert "which the workflow loads without pickle. Fix: write it with np.savez(" in message
    assert "allow_pickle=True" not in message


def test_a_symlinked_labels_npz_leading_out_is_refused_before_any_job(videos):
    labels = videos / "clip_a" / "labels.npz"
    labels.rename(videos.parent / "elsewhere.npz")
    labels.symlink_to(videos.parent / "elsewhere.npz")
    message = pb_problems(videos)
    assert ("360-degree video clip_a: labels.npz = 'labels.npz': a symlink leading out of the folder (it resolves to "
            f"{(videos.parent / 'elsewhere.npz').resolve()})") in message
    assert FIX in message
    video_json = videos / "clip_a" / "video.json"
    video_json.rename(videos.parent / "video.json")
    video_json.symlink_to(videos.parent / "video.json")
    assert "360-degree video clip_a: video.json = 'video.json': a symlink leading out" in pb_problems(videos)
