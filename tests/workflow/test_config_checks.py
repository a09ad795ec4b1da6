"""check_config: the checks after schema validation, on the real configs and on broken copies.

Each config is validated against the schema with defaults filled first, as the Snakefile does.
"""

import copy
import inspect
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate
from worldmemory.persistbench.camera_paths import PathParams
from worldmemory.workflow.config_checks import check_config
from worldmemory.worldmembench import cases
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import write_embedded_case

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schemas" / "config.schema.yaml"
CONFIGS = [REPO / "config" / "config.yaml", REPO / "config" / "paper.yaml",
           *sorted((REPO / "tests" / "config").glob("*.yaml"))]


def load(path=REPO / "config" / "config.yaml") -> dict:
    config = yaml.safe_load(Path(path).read_text())
    validate(config, str(SCHEMA), set_default=True)
    return config


def problems(config) -> str:
    with pytest.raises(ValueError) as info:
        check_config(config)
    return str(info.value)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_pass(path):
    check_config(load(path))  # paper.yaml has Hugging Face ids, the default an HF dinov2


def test_check_is_fast_and_never_imports_torch():
    code = ("import json, sys, time, yaml; from snakemake.utils import validate; "
            "from worldmemory.workflow.config_checks import check_config; "
            f"c = yaml.safe_load(open({str(REPO / 'config' / 'config.yaml')!r})); "
            f"validate(c, {str(SCHEMA)!r}, set_default=True); "
            "t = time.time(); check_config(c); "
            "print(json.dumps([time.time() - t, 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO / "scripts"), "PATH": ""})
    seconds, torch_loaded = json.loads(out.stdout.splitlines()[-1])
    assert not torch_loaded
    assert seconds < 5


# -- 7. local paths ------------------------------------------------------------------------------
def test_local_model_path_must_be_a_saved_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load()
    config["permanence"]["models"]["my-vjepa2"] = {"source": "local", "path": "models/my-vjepa2"}
    message = problems(config)
    assert "permanence.models.my-vjepa2.path = 'models/my-vjepa2': no such directory" in message
    assert str(tmp_path) in message and "Fix:" in message and "source: hf" in message
    (tmp_path / "models" / "my-vjepa2").mkdir(parents=True)
    assert "has no config.json" in problems(config)
    (tmp_path / "models" / "my-vjepa2" / "config.json").write_text("{}")
    check_config(config)


def test_a_local_cosmos_model_needs_its_model_pt_and_the_tokenizers_encoder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load()
    config["permanence"]["cosmos"].update(source="local", path="cosmos", tokenizer_path="tokenizer")
    message = problems(config)
    assert "permanence.cosmos.path = 'cosmos': neither a model.pt nor a directory holding one" in message
    assert "permanence.cosmos.tokenizer_path = 'tokenizer': no encoder.jit in that directory" in message
    (tmp_path / "cosmos").mkdir()
    (tmp_path / "cosmos" / "model.pt").write_bytes(b"")
    (tmp_path / "tokenizer").mkdir()
    (tmp_path / "tokenizer" / "encoder.jit").write_bytes(b"")
    check_config(config)
    config["permanence"]["cosmos"].update(source="hf", id="nvidia/Cosmos-Predict1-4B", tokenizer_id="not an id")
    assert "permanence.cosmos.tokenizer_id = 'not an id': not a Hugging Face id" in problems(config)


def test_hf_model_id_must_look_like_one():
    config = load(REPO / "config" / "paper.yaml")
    config["permanence"]["models"]["vjepa2-vitl-fpc64-256"]["id"] = "./vjepa2-vitl"
    message = problems(config)
    assert "permanence.models.vjepa2-vitl-fpc64-256.id = './vjepa2-vitl': not a Hugging Face id" in message
    assert "source: local" in message


def test_calibration_models_validate_and_name_a_model_encoder():
    config = load()
    models = config["permanence"]["models"]
    models["oracle"] = {"source": "calibration", "predictor": "persistence_oracle", "encoder": "vjepa2-tiny-scratch"}
    models["posterior"] = {"source": "calibration", "predictor": "known_posterior", "encoder": "vjepa2-tiny-scratch",
                           "q": 0.75, "mode": "sample"}
    validate(config, str(SCHEMA), set_default=True)
    check_config(config)
    models["oracle"]["encoder"] = "vjepa2-tiny-scrach"
    models["posterior"]["encoder"] = "oracle"
    message = problems(config)
    assert "permanence.models.oracle.encoder = 'vjepa2-tiny-scrach': no model of that name" in message
    assert "did you mean 'vjepa2-tiny-scratch'?" in message
    assert "permanence.models.posterior.encoder = 'oracle': names another calibration model" in message


def test_a_curriculum_continues_a_model_with_weights_under_a_name_of_its_own():
    config = load()
    curricula = config["permanence"]["curricula"]
    assert curricula and {c["init"] for c in curricula.values()} == {"vjepa2-tiny-scratch"}
    config["permanence"]["models"]["oracle"] = {"source": "calibration", "predictor": "persistence_oracle",
                                                "encoder": "vjepa2-tiny-scratch"}
    curricula["vjepa2-tiny-scratch"] = {**curricula["tiny-container"]}
    curricula["tiny-container"]["init"] = "vjepa2-tiny-scrach"
    curricula["tiny-tube"]["init"] = "oracle"
    message = problems(config)
    assert "permanence.curricula.vjepa2-tiny-scratch: the name is also a model of permanence.models" in message
    assert "permanence.curricula.tiny-container.init = 'vjepa2-tiny-scrach': no model of that name" in message
    assert "did you mean 'vjepa2-tiny-scratch'?" in message
    assert "permanence.curricula.tiny-tube.init = 'oracle'" in message  # a calibration fill has no weights
    curricula["tiny-temporal"]["train"]["curriculum"] = "clips"  # natural video without its directory
    assert "permanence.curricula.tiny-temporal.train: curriculum 'clips' with clips_dir None" in problems(config)
    curricula["tiny-temporal"]["train"]["curriculum"] = "boxes"
    with pytest.raises(WorkflowError, match="boxes"):
        validate(config, str(SCHEMA), set_default=True)


def test_videomae_models_are_named_apart_and_drawn_beside_models_of_permanence():
    config = load()
    block = config["permanence"]["videomae"]
    assert set(block["models"]) == {"videomae-tiny-scratch", "videomae-oracle"}
    assert block["latent"] == ["vjepa2-tiny-scratch"]
    validate(config, str(SCHEMA), set_default=True)
    block["models"]["tiny-container"] = dict(block["models"]["videomae-tiny-scratch"])  # a curriculum's name
    block["models"]["mae-local"] = {"source": "local", "path": "no/such/dir"}
    block["models"]["mae-hf"] = {"source": "hf", "id": "videomae-large"}
    block["latent"] = ["vjepa2-tiny"]
    block["models"]["videomae-oracle"]["encoder"] = "vjepa2-tiny-scratch"  # reads V-JEPA's axis, not pixels
    message = problems(config)
    assert "permanence.videomae.models.videomae-oracle.encoder = 'vjepa2-tiny-scratch': no VideoMAE" in message
    assert "permanence.videomae.models.tiny-container: the name is also a model" in message
    assert "permanence.videomae.models.mae-local.path = 'no/such/dir': no such directory" in message
    assert "permanence.videomae.models.mae-hf.id = 'videomae-large': not a Hugging Face id" in message
    assert "permanence.videomae.latent: 'vjepa2-tiny' is no model of permanence.models" in message
    block["models"]["videomae-tiny-scratch"]["train"]["mask_ratio"] = 1.0  # hides every patch
    with pytest.raises(WorkflowError, match="mask_ratio|1.0"):
        validate(config, str(SCHEMA), set_default=True)


@pytest.mark.parametrize("change", [
    {"q": 1.5}, {"q": -0.5},  # q outside [0, 1]
    {"q": None},  # known_posterior without q
    {"predictor": "object_freezer"},  # q for another rule
    {"predictor": "oracle"},  # unknown rule
    {"encoder": None},  # no encoder
    {"mode": "median"},
    {"config": {"crop_size": 64}},  # a model's own keys on a calibration predictor
])
def test_bad_calibration_specs_fail_validation(change):
    config = load()
    spec = {"source": "calibration", "predictor": "known_posterior", "encoder": "vjepa2-tiny-scratch", "q": 0.5}
    spec.update(change)
    config["permanence"]["models"]["posterior"] = {k: v for k, v in spec.items() if v is not None}
    with pytest.raises(WorkflowError, match="Error validating config file"):
        validate(config, str(SCHEMA), set_default=True)


def test_calibration_keys_on_another_source_fail_validation():
    config = load()
    config["permanence"]["models"]["vjepa2-tiny-scratch"]["predictor"] = "object_freezer"
    with pytest.raises(WorkflowError, match="Error validating config file"):
        validate(config, str(SCHEMA), set_default=True)


@pytest.mark.parametrize("value", ["/nonexistent/dinov2", "./dinov2", "../dinov2", "~/dinov2",
                                   "facebook/dinov2/base", "dinov2-base", ".hidden/dinov2"])
def test_dinov2_path_forms_that_do_not_exist_fail(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = {**load(), "dinov2": value}
    message = problems(config)
    assert f"dinov2 = {value!r}: no such directory" in message
    assert "Fix: a Hugging Face id of the form owner/name" in message
    if value.startswith("~"):
        assert "`~` is not expanded" in message


@pytest.mark.parametrize("value", ["facebook/dinov2-with-registers-base", "facebook/dinov2-small",
                                   "my_org/dinov2.v2"])
def test_dinov2_hf_ids_pass(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_config({**load(), "dinov2": value})


def test_dinov2_existing_directory_is_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "facebook" / "dinov2-small").mkdir(parents=True)  # owner/name form, but a directory
    message = problems({**load(), "dinov2": "facebook/dinov2-small"})
    assert "dinov2 = 'facebook/dinov2-small': the directory has no config.json" in message
    (tmp_path / "facebook" / "dinov2-small" / "config.json").write_text("{}")
    local = ["facebook/dinov2-small", "./facebook/dinov2-small", str(tmp_path / "facebook" / "dinov2-small")]
    for value in local:
        check_config({**load(), "dinov2": value})


# -- 10. free-form blocks ------------------------------------------------------------------------
def test_trajectory_keywords_are_what_build_accepts():
    """The derived names are exactly the keyword arguments trajectories.build passes through."""
    keywords = tj.keywords()
    assert set(keywords) == set(tj.TRAJECTORIES)
    assert keywords["translation"] >= {"n_frames", "hold_frames", "final_hold_frames", "side"}
    assert "amplitude_deg" in keywords["LRUD"] and "side" not in keywords["LRUD"]
    for name, names in keywords.items():
        builder = tj.translation if name == "translation" else tj.rotation
        defaults = {k: p.default for k, p in inspect.signature(builder).parameters.items()}
        tj.build(name, **{k: defaults[k] for k in names})
        with pytest.raises(TypeError):
            tj.build(name, n_frame=241)


def test_trajectory_params_typo_names_key_and_valid_keys():
    config = load()
    config["worldmembench"]["trajectory_params"]["n_frame"] = 241
    message = problems(config)
    valid = set.intersection(*tj.keywords().values())
    assert "worldmembench.trajectory_params.n_frame = 241: unknown key 'n_frame'" in message
    assert ", ".join(sorted(valid)) in message
    assert "did you mean 'n_frames'?" in message


def test_model_trajectory_params_are_checked_too():
    config = load()
    config["worldmembench"]["models"]["amnesic"]["trajectory_params"] = {"hold_frame": 8}
    message = problems(config)
    assert "worldmembench.models.amnesic.trajectory_params.hold_frame = 8: unknown key" in message
    assert "did you mean 'hold_frames'?" in message


def test_trajectory_param_of_some_trajectories_only():
    config = load()
    config["worldmembench"]["trajectory_params"]["side"] = 0.5
    message = problems(config)
    assert "worldmembench.trajectory_params.side = 0.5: a parameter of translation only" in message
    assert "Fix: remove it, or roll out only translation" in message
    config["worldmembench"]["cases"]["trajectories"] = {"object": ["translation"]}
    check_config(config)  # every configured trajectory takes it
    config["worldmembench"]["cases"]["trajectories"] = {"object": ["LRLR"]}
    assert "side = 0.5: unknown key 'side'" in problems(config)  # no configured trajectory takes it


def test_user_cases_accept_any_builders_keyword(tmp_path):
    config = load()
    write_embedded_case(tmp_path / "human_000", "human_000", "human", None, 64, 48, ["LRLR"])  # a case directory
    config["worldmembench"]["cases"]["source"] = str(tmp_path)
    config["worldmembench"]["trajectory_params"].update(side=0.5, amplitude_deg=60)
    check_config(config)
    config["worldmembench"]["trajectory_params"]["sides"] = 1
    assert "worldmembench.trajectory_params.sides = 1: unknown key" in problems(config)


def test_each_user_case_is_read_once(tmp_path, monkeypatch):
    """The case checks of check_config and of config_inputs share one listing of the directory."""
    config = load()
    for case_id in ("human_000", "human_001"):
        write_embedded_case(tmp_path / case_id, case_id, "human", None, 64, 48, ["LRLR"])
    config["worldmembench"]["cases"]["source"] = str(tmp_path)
    read = []
    monkeypatch.setattr(cases, "load_case", lambda path, load=cases.load_case: read.append(path) or load(path))
    check_config(config)
    assert sorted(Path(p).name for p in read) == ["human_000", "human_001"]


def test_camera_keys_come_from_the_case():
    config = load()
    config["worldmembench"]["trajectory_params"]["fov_deg"] = 60
    assert "worldmembench.trajectory_params.fov_deg = 60: set from the case camera" in problems(config)


def test_persistbench_camera_keys_are_pathparams_fields():
    config = load()
    config["persistbench"]["camera"]["fov"] = 90
    message = problems(config)
    fields = sorted(f for f in inspect.signature(PathParams).parameters)
    assert "persistbench.camera.fov = 90: unknown key 'fov'" in message
    assert ", ".join(fields) in message and "did you mean 'fov_deg'?" in message


def test_persistbench_camera_values_are_checked_by_pathparams():
    config = load()
    config["persistbench"]["camera"]["fov_deg"] = 200
    assert "persistbench.camera = " in problems(config) and "fov_deg must be in (0, 180)" in problems(config)


@pytest.mark.parametrize("study, model, typo, valid", [
    ("worldmembench", "drifting", "rte", "min_pixels, rate"),
    ("persistbench", "forgetting", "fade", "fade_frames"),
    ("persistbench", "omniscient", "fade_frames", "none"),
])
def test_reference_params_must_be_known(study, model, typo, valid):
    config = load()
    config[study]["models"][model].setdefault("params", {})[typo] = 1
    message = problems(config)
    assert f"{study}.models.{model}.params.{typo} = 1: unknown key {typo!r}" in message
    assert f"reference_models.DEFAULT_PARAMS): {valid}." in message


def test_every_problem_is_reported_at_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = copy.deepcopy(load())
    config["dinov2"] = "./missing"
    config["worldmembench"]["trajectory_params"]["n_frame"] = 1
    config["persistbench"]["camera"]["fov"] = 1
    message = problems(config)
    assert message.startswith("config: 3 problem(s)")
    assert message.count("\n- ") == 3


@pytest.mark.parametrize("study, command, message", [
    ("worldmembench", 'gen --request {request} --prompt "{prompt}"', "{prompt} is free text"),
    ("persistbench", "render {request} --prompt {prompt}", "unknown placeholders ['prompt']"),
    ("persistbench", "render {input_video}", "must pass {video}"),
])
def test_a_template_with_free_text_or_no_output_is_refused_at_validation(study, command, message):
    config = load(REPO / "tests" / "config" / f"tiny_{study}.yaml")
    config[study]["models"]["mine"] = {"kind": "external", "command": command}
    text = problems(config)
    assert f"{study}.models.mine.command: " in text and message in text


def test_a_results_path_that_is_not_a_safe_word_is_refused_at_validation(tmp_path, monkeypatch):
    """The absolute results/ path fills {video}, {request}, ...: a project directory holding a
    space is refused before any job, not at the first rollout."""
    (tmp_path / "a b").mkdir()
    monkeypatch.chdir(tmp_path / "a b")
    config = load(REPO / "tests" / "config" / "tiny_worldmembench.yaml")
    config["worldmembench"]["models"]["mine"] = {"kind": "external", "command": "gen {request}"}
    text = problems(config)
    assert "worldmembench.models.mine.command: placeholder {video} would be " in text
    assert "a b/results" in text and "not a safe word" in text
    del config["worldmembench"]["models"]["mine"]
    check_config(config)  # no external model: no path reaches a command line


@pytest.mark.parametrize("study", ["worldmembench", "persistbench"])
def test_perception_backends_are_the_registrys_and_replay_names_are_reserved(study):
    config = load(REPO / "tests" / "config" / f"tiny_{study}.yaml")
    config[study]["perception"]["tracking"] = "sam9"
    config[study]["models"]["mine.replay"] = {"kind": "reference", "reference": "omniscient"}
    config[study]["models"]["omniscient.Replay"] = {"kind": "reference", "reference": "omniscient"}
    text = problems(config)
    expected = "no such backend; expected one of optical-flow, sam2, sam3, none"
    assert f"{study}.perception.tracking = 'sam9': {expected}" in text
    assert f"{study}.models.mine.replay: names with '.replay' (in any case) are the replays" in text
    assert f"{study}.models.omniscient.Replay: names with '.replay' (in any case) are the replays" in text


def test_a_feature_ablation_names_its_own_weights():
    """A features mapping (the CLIP / DINOv2-B ablations) is validated like an estimator's model."""
    config = load()
    config["persistbench"]["features"] = {"backend": "clip", "model": "./clip-l14"}
    validate(config, str(SCHEMA), set_default=True)
    assert "persistbench.features.model = './clip-l14'" in problems(config)
    config["persistbench"]["features"] = {"backend": "clip", "model": "openai/clip-vit-large-patch14"}
    check_config(config)
    config["persistbench"]["features"] = {"backend": "siglip", "model": "openai/clip-vit-large-patch14"}
    with pytest.raises(WorkflowError, match="Error validating config file"):
        validate(config, str(SCHEMA), set_default=True)


def test_an_external_estimators_command_is_checked_before_any_job(monkeypatch):
    config = load()
    config["worldmembench"]["perception"]["camera"] = {"backend": "external-command",
                                                       "command": "da3 --video {video} > {depth}"}
    text = problems(config)
    assert "worldmembench.perception.camera.command: command template" in text and "['depth']" in text
    config["worldmembench"]["perception"]["camera"]["command"] = 'da3 --video "{video}" --out {out}'
    check_config(config)
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/a b")  # its files go to a temporary directory
    assert "camera.command: placeholder {video} would be '/tmp/a b'" in problems(config)


def test_the_commented_calibration_rows_of_the_default_wire_up(tmp_path, snakemake, job_counts):
    """config.yaml ships the calibration rows commented out (beyond the main job's budget); the
    docs/targets.md says uncomment them: then Table 3 probes each through the embedded model's weights."""
    text = (REPO / "config" / "config.yaml").read_text()
    lines = [line for line in text.splitlines() if line.startswith("    # calib-")]
    assert len(lines) == 4
    for line in lines:
        text = text.replace(line, "    " + line[len("    # "):])
    config = tmp_path / "config.yaml"
    config.write_text(text)
    dry = snakemake(tmp_path, config, "-n", "-p", "results/permanence/table3.csv")
    assert job_counts(dry.stdout)["permanence_probe"] == 5
    for name in ("calib-oracle", "calib-freezer", "calib-extrapolation", "calib-posterior-0.75"):
        assert f"--model-name {name} " in dry.stdout
    assert dry.stdout.count("--weights results/models/vjepa2-tiny-scratch") == 5


def test_comparisons_refuse_unknown_models_a_stray_baseline_and_colliding_variants():
    """Table 3's comparisons (worldmembench.comparisons): each refusal names its key and the fix;
    a variant is checked like a model, at its own key."""
    config = load()
    block = config["worldmembench"]["comparisons"]["drift_rate"]
    block["models"].append("drift-fats")
    block["baseline"] = "omniscient"
    block["variants"]["amnesic"] = {"kind": "reference", "reference": "amnesic"}
    block["variants"]["drift-slow"]["params"]["rte"] = 1
    config["worldmembench"]["comparisons"]["again"] = {
        "models": ["drift-fast"], "baseline": "drift-fast", "paper_names": {"drifting": "FoV"},
        "variants": {"drift-fast": {"kind": "reference", "reference": "drifting"}}}
    message = problems(config)
    key = "worldmembench.comparisons.drift_rate"
    assert message.startswith("config: 6 problem(s)")
    assert (f"- {key}.models: 'drift-fats' is no model of worldmembench.models and no comparison's variant; "
            "expected some of: ") in message and "Fix: did you mean 'drift-fast'?" in message
    assert f"- {key}.baseline = 'omniscient': not one of {key}.models (drift-slow, drifting, drift-fast" in message
    assert f"- {key}.variants.amnesic: also a model of worldmembench.models" in message
    assert f"- {key}.variants.drift-slow.params.rte = 1: unknown key 'rte'" in message
    assert (f"- worldmembench.comparisons.again.variants.drift-fast: also a variant of {key}. Fix: rename one of "
            "them") in message
    assert "- worldmembench.comparisons.again.paper_names.drifting: not one of " in message


@pytest.mark.parametrize("study", ["worldmembench", "persistbench"])
def test_a_models_files_must_exist_and_belong_to_an_external_model(study, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("")
    (tmp_path / "weights").mkdir()
    config = load(REPO / "tests" / "config" / f"tiny_{study}.yaml")
    mine = {"kind": "external", "command": "gen {request}", "version": "2 (retrained)"}
    config[study]["models"]["mine"] = {**mine, "files": ["model.py", "weights"]}
    check_config(config)  # a file and a directory, relative to the working directory
    config[study]["models"]["mine"] = {**mine, "files": ["model.py", "ckpt.pt", "~/w.pt"]}
    config[study]["models"]["omniscient"].update(version="1", files=["model.py"])
    text = problems(config)
    assert text.startswith("config: 4 problem(s)")
    assert (f"{study}.models.mine.files[1] = 'ckpt.pt': no such file or directory (relative to the working "
            f"directory {tmp_path}). Fix: correct the path") in text
    assert f"{study}.models.mine.files[2] = '~/w.pt': no such file or directory" in text and "is not expanded" in text
    for key in ("files", "version"):
        assert f"{study}.models.omniscient.{key}: a reference model is rendered again on every run" in text


@pytest.mark.parametrize("study", ["worldmembench", "persistbench"])
def test_a_stress_model_is_a_built_in_one_whose_references_are_configured(study):
    config = load(REPO / "tests" / "config" / f"tiny_{study}.yaml")
    config[study]["stress"] = {"models": ["frozn", "spliced" if study == "worldmembench" else "black"]}
    config[study]["models"] = {"stress.mine": {"kind": "reference", "reference": "amnesic"},
                               "Stress.other": {"kind": "reference", "reference": "amnesic"}}
    text = problems(config)
    valid = ("frozen, mirrored, spliced, content-out-of-frame" if study == "worldmembench"
             else "input-copy, black, black-after-exit, black-window")
    assert f"{study}.stress.models: 'frozn' is no stress model; expected one of {valid}" in text
    for name in ("stress.mine", "Stress.other"):
        assert f"{study}.models.{name}: names starting 'stress.' (in any case) are the stress gallery's runs" in text
    model = "spliced" if study == "worldmembench" else "black"
    assert f"{study}.stress.models: {model!r} reads the rollouts of a reference model `reference: omniscient`" in text
