"""Free-form values are typed and ranged before any job, and names cannot collide with shared outputs.

The types come from the code (the trajectory builders' annotations, the reference models'
DEFAULT_PARAMS, persistbench.plan.VideoMeta), so each case below is a value the code would have
crashed on inside a job, with no key named.
"""

import copy
import json
import time
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate
from worldmemory.common.limits import MAX_FRAMES
from worldmemory.persistbench import reference_models as pb_reference
from worldmemory.persistbench.plan import sequence_plan
from worldmemory.workflow.config_checks import RESERVED_NAMES, check_config
from worldmemory.worldmembench import reference_models as wmb_reference
from worldmemory.worldmembench import trajectories as tj

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
validate(DEFAULT, str(REPO / "config" / "schemas" / "config.schema.yaml"), set_default=True)
WMB = "worldmembench"


def problems(change) -> str:
    config = copy.deepcopy(DEFAULT)
    change(config)
    with pytest.raises(ValueError) as info:
        check_config(config)
    return str(info.value)


def trajectory_params(config, model=None):
    """The study's trajectory_params block, or a new one of the model's (the schema's default {}
    is one object shared by every model)."""
    if model is None:
        return config[WMB]["trajectory_params"]
    config[WMB]["models"][model]["trajectory_params"] = {}
    return config[WMB]["models"][model]["trajectory_params"]


@pytest.mark.parametrize("model, path, value, expected", [
    (None, ["n_frames"], "241", "an integer"),
    (None, ["hold_frames"], 1.5, "an integer"),
    (None, ["fps"], "fast", "a number"),
    (None, ["fps"], float("nan"), "a number"),
    ("drifting", ["LRLR", "n_frames"], True, "an integer"),
    ("drifting", ["LRUD", "pitch_amplitude_deg"], "40", "a number or null"),
    ("amnesic", ["move_frames"], [12], "an integer or null"),
])
def test_trajectory_params_of_another_type_than_the_builders_are_refused_at_their_key(model, path, value,
                                                                                      expected):
    def change(config):
        block = trajectory_params(config, model)
        for key in path[:-1]:
            block = block.setdefault(key, {})
        block[path[-1]] = value

    key = f"{WMB}.models.{model}.trajectory_params" if model else f"{WMB}.trajectory_params"
    message = problems(change)
    assert f"{key}.{'.'.join(path)} = {value!r}: expected {expected}. Fix: write it as a bare value" in message
    assert message.startswith("config: 1 problem(s)")


def test_trajectory_params_out_of_range_are_refused_before_any_job():
    """Ranges are what the builders refuse (trajectories.check), blamed on the block that sets
    them: the study's when no model overrides it, else the model's."""
    message = problems(lambda c: c[WMB]["trajectory_params"].update(n_frames=40))
    assert (f"{WMB}.trajectory_params: the LRLR trajectory: n_frames=40 too small for LRLR: needs 32 (V) + 4 "
            "moves x >= 2 + 9 (H) frames") in message
    message = problems(lambda c: c[WMB]["models"]["drifting"].update(trajectory_params={"fps": 0}))
    assert (f"{WMB}.models.drifting.trajectory_params: the LRLR trajectory: fps = 0: expected a frame rate in "
            "[1, 240]") in message
    assert f"{WMB}.trajectory_params:" not in message
    message = problems(lambda c: c[WMB]["trajectory_params"].update(LRUD={"pitch_amplitude_deg": 95}))
    assert "the LRUD trajectory: pitch amplitude must be in (0, 90], got 95" in message
    check_config(copy.deepcopy(DEFAULT) | {WMB: {**DEFAULT[WMB], "trajectory_params": {"move_frames": None}}})


def test_the_range_check_does_not_render_the_trajectory():
    """The longest trajectory allowed is checked in no time (validation runs it on every start),
    and a billion frames is refused naming the bound (common.limits)."""
    start = time.perf_counter()
    for name in tj.TRAJECTORIES:
        tj.check(name, {name: {"n_frames": MAX_FRAMES}})
        with pytest.raises(ValueError, match=rf"n_frames = \d+ for {name}: expected at most {MAX_FRAMES} frames"):
            tj.check(name, {"n_frames": 10**9})
    assert time.perf_counter() - start < 0.5
    with pytest.raises(ValueError, match="too small for LR-Hold"):
        tj.check("LR-Hold", {"n_frames": 90})


@pytest.mark.parametrize("study, model, param, value, expected", [
    (WMB, "drifting", "rate", "x", "a number >= 0"),
    (WMB, "drifting", "rate", -0.1, "a number >= 0"),
    (WMB, "amnesic", "min_pixels", 2.5, "an integer >= 1"),
    (WMB, "amnesic", "min_pixels", 0, "an integer >= 1"),
    (WMB, "camera-error", "rotation_scale", True, "a number"),
    ("persistbench", "forgetting", "fade_frames", 0, "an integer >= 1"),
    ("persistbench", "displaced", "drift_deg_per_frame", "1.0", "a number"),
    ("persistbench", "recoloured", "hue_shift_deg", None, "a number"),
])
def test_reference_params_of_another_type_or_out_of_range_are_refused(study, model, param, value, expected):
    message = problems(lambda c: c[study]["models"][model].setdefault("params", {}).update({param: value}))
    assert f"{study}.models.{model}.params.{param} = {value!r}: expected {expected} (the default is " in message
    module = wmb_reference if study == WMB else pb_reference  # and the job refuses it the same way
    with pytest.raises(ValueError, match=f"parameter {param} = .*: expected {expected}"):
        module.resolve_params(DEFAULT[study]["models"][model]["reference"], {param: value})


@pytest.mark.parametrize("text, expected", [
    ('{"kind": "static", "target": 1, "fps": "fast"}', "fps = 'fast': expected a number or null"),
    ("[1, 2]", "holds list [1, 2], expected a JSON object with kind, target, category, fps"),
    ('{"kind": "static", "target": "1"}', "target = '1': expected an integer"),
    ('{"kind": "static", "target": 1.5}', "target = 1.5: expected an integer"),
    ('{"kind": "static"}', "target: missing; expected an integer. Fix: add it"),
    ('{"kind": "static", "target": 1, "fsp": 8}', "fsp = 8: unknown key; expected some of kind, target, "
                                                  "category, fps. Fix: did you mean 'fps'?"),
    ('{"kind": "moving", "target": 1}', "kind = 'moving': expected one of static, dynamic"),
    ('{"kind": "static", "target": 1, "fps": 0}', "fps = 0: expected a frame rate in [1, 240]"),
    ('{"kind": "static", "target": 1, "fps": 1e300}', "fps = 1e+300: expected a frame rate in [1, 240] "
                                                      "(common/limits.py). Fix: the video's frame rate"),
    ('{"kind": "static", "target": 1, "fps": 1e-9}', "fps = 1e-09: expected a frame rate in [1, 240] "
                                                     "(common/limits.py). Fix: the video's frame rate"),
    ('{"kind": "static", "target": 1, "category": 3}', "category = 3: expected a string"),
    ('{"kind": "static", target: 1}', "not a readable JSON file"),
])
def test_a_users_video_json_is_checked_when_the_sequences_are_planned(text, expected, tmp_path):
    """sequence_plan runs while Snakemake builds the DAG: a bad video.json stops it there."""
    for name, meta in (("clip_a", '{"kind": "dynamic", "target": 2, "fps": 30}'), ("clip_b", text)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "video.json").write_text(meta)
    with pytest.raises(ValueError) as info:
        sequence_plan(str(tmp_path), 0)
    assert str(info.value).startswith(f"{tmp_path / 'clip_b' / 'video.json'}: ")
    assert expected in str(info.value)
    (tmp_path / "clip_b" / "video.json").write_text('{"kind": "static", "target": 1, "category": "chair"}')
    assert sequence_plan(str(tmp_path), 0) == ["clip_a", "clip_b"]


@pytest.mark.parametrize("block", [["models"], ["curricula"], ["videomae", "models"]])
@pytest.mark.parametrize("name", [*RESERVED_NAMES, "DINOv2", "Perception"])
def test_permanence_model_names_of_shared_outputs_are_reserved(block, name):
    """A permanence model named dinov2 was wired to prefetch_dinov2 (its probe read DINOv2's
    weights), one named perception to resources/models/perception/ (every estimator's weights)."""
    def change(config):
        study = config["permanence"]
        spec = study["curricula"]["tiny-container"] if block == ["curricula"] else {"source": "random"}
        target = study
        for key in block:
            target = target.setdefault(key, {})
        target[name] = copy.deepcopy(spec)

    message = problems(change)
    assert f"permanence.{'.'.join(block)}.{name}: the name is reserved; a model of that name would share " in message
    assert "Fix: rename the model" in message


def test_the_default_check_stays_cheap():
    """The types and ranges add nothing measurable to validation (imports excluded)."""
    check_config(copy.deepcopy(DEFAULT))
    start = time.perf_counter()
    check_config(copy.deepcopy(DEFAULT))
    assert time.perf_counter() - start < 0.2
    assert json.dumps(DEFAULT, sort_keys=True)  # nothing above changed the shared default
