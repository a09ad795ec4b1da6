# Shared wiring: config validation, paths, resources. No study logic here.
#
# Shell safety: every value from the config or from data reaches a shell quoted ({x:q}); the only
# unquoted placeholders are params named *_args, argument lists this file builds with
# shlex.join (tests/workflow/test_shell_safety.py enforces both).

import functools
import json
import os
import re
import shlex

from snakemake.logging import logger
from snakemake.utils import min_version, validate

min_version("9.0")

# REPO and SCRIPTS (this checkout, on sys.path) come from the Snakefile.
from worldmemory.common.provenance import config_hash as config_sha256
from worldmemory.common.rollout_store import DIGEST_CACHE, model_digest
from worldmemory.perception.estimators import RESOURCES
from worldmemory.perception.estimators import parse as parse_estimator
from worldmemory.perception.estimators import prefetched as prefetched_weights
from worldmemory.workflow.conda_envs import export_checkout
from worldmemory.workflow.config_checks import check_config
from worldmemory.workflow.config_inputs import check_estimator_files
from worldmemory.workflow.stamp import stamp_differs, update_stamp
from worldmemory.external.replays import replay_name
from worldmemory.workflow.runs import benchmark_runs as study_runs
from worldmemory.workflow.runs import reference_models, stress_models, stress_references
from worldmemory.workflow.runs import worldmembench_cases as study_cases
from worldmemory.worldmembench.trajectories import merge_params as merge_trajectory_params

validate(config, os.path.join(REPO, "config", "schemas", "config.schema.yaml"), set_default=True)
check_config(config)  # what a schema cannot say: paths exist, free-form keys are the code's
export_checkout(REPO)  # for the conda environments' post-deploy scripts (envs/*.post-deploy.sh)

# Every job imports the package from this checkout (pyproject.toml maps scripts/) and prints its
# progress as it goes; the prefix replaces Snakemake's default, so it repeats the strict mode.
# WORLDMEMORY_WORKDIR marks every process of a job with the working directory it writes to, so
# that ./run.sh can find the jobs a killed Snakemake left running (worldmemory.workflow.launch).
# WORLDMEMORY_UNITS: each benchmark study's number of cases (or sequences), which its per-case jobs
# print their model's progress against (worldmemory/common/progress.py); the studies fill it in,
# and the Snakefile sets the prefix once they are included.
# `gpu_slot N COMMAND...`: a GPU-capable rule's command on N devices of its own
# (worldmemory/common/gpu_slot.py); with N = 0 the shell runs COMMAND itself, sparing every CPU job
# a Python start (0.05 s; the main job has about 300 such jobs).
STUDY_UNITS = {}
GPU_SLOT = 'gpu_slot() { if [ "$1" = 0 ]; then shift; "$@"; else python -m worldmemory.common.gpu_slot "$@"; fi; }; '


def job_shell_prefix():
    # Snakemake formats the prefix with each job's command: braces are doubled
    units = json.dumps(STUDY_UNITS, sort_keys=True)
    return (
        (
            f"set -euo pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH={shlex.quote(SCRIPTS)}"
            f' WORLDMEMORY_WORKDIR="$PWD" WORLDMEMORY_UNITS={shlex.quote(units)}; {GPU_SLOT}'
        )
        .replace("{", "{{")
        .replace("}", "}}")
    )


DEVICE = config["device"]
THREADS = config["threads"]
# Model rules ask the scheduler for a GPU only when the configured device is one (0 on the CPU default).
GPU = 1 if DEVICE.startswith("cuda") else 0

# Every table and figure depends on the resolved config (worldmemory/workflow/stamp.py): a config
# switch rebuilds them even where Snakemake has no metadata to see it. Provenance reads it too.
# A dry run only writes a missing stamp; the tables' config_sha param shows a rebuild where
# Snakemake has metadata, and a warning where it has not.
CONFIG_STAMP = "results/config/resolved.json"
CONFIG_SHA = config_sha256(config)
DRY_RUN = workflow.output_settings.dryrun  # known while parsing (workflow.dryrun is not yet)
if workflow.is_main_process and (not DRY_RUN or not os.path.exists(CONFIG_STAMP)):
    update_stamp(CONFIG_STAMP, config)
elif workflow.is_main_process and stamp_differs(CONFIG_STAMP, config):
    logger.warning(f"{CONFIG_STAMP} holds another config: a real run rewrites it and rebuilds every table and figure")


def repo_path(*parts):
    """A file shipped with the workflow (not produced by it), independent of --directory."""
    return os.path.join(REPO, *parts)


def benchmark_tsv(name):
    """Where a job's wall time and memory go (results/benchmarks/, read by worldmemory.workflow.performance)."""
    return f"results/benchmarks/{name}.tsv"


# -- permanence ----------------------------------------------------------------------------------
PERM = config.get("permanence", {"models": {}})
PERM_MODELS = PERM["models"]
PAPER_CHECKPOINTS = {
    "facebook/vjepa2-vitl-fpc64-256",
    "facebook/vjepa2-vith-fpc64-256",
    "facebook/vjepa2-vitg-fpc64-256",
}
PAPER_MODELS = sorted(m for m, s in PERM_MODELS.items() if s.get("id") in PAPER_CHECKPOINTS)
# Curriculum checkpoints (Section 3.5): probe models like any other, in the curriculum tables only.
CURRICULA = PERM.get("curricula", {})
LATENT_MODELS = {**PERM_MODELS, **{name: {**c, "source": "curriculum"} for name, c in CURRICULA.items()}}
# VideoMAE's pixel readout (Section 3.4, Figure 5a): probe models of their own family, in its figure only.
VIDEOMAE = PERM.get("videomae", {})
VIDEOMAE_MODELS = {name: {**spec, "family": "videomae"} for name, spec in VIDEOMAE.get("models", {}).items()}
PROBE_MODELS = {**LATENT_MODELS, **VIDEOMAE_MODELS}
# The curriculum tables' rows: each curriculum and the checkpoint it continues.
CURRICULUM_ROWS = sorted(set(CURRICULA) | {c["init"] for c in CURRICULA.values()})


def weights_of(name):
    """The directory model ``name`` loads from: trained here, prefetched, or none (local path /
    random); a calibration predictor loads its encoder's."""
    spec = PROBE_MODELS[name]
    if spec["source"] == "calibration":
        return weights_of(spec["encoder"])
    if spec["source"] in ("train", "curriculum"):
        return f"results/models/{name}"
    if spec["source"] == "hf":
        return f"resources/models/{name}"
    return []


def model_weights(wildcards):
    """Input function: the weights directory of the probed model (weights_of)."""
    return weights_of(wildcards.model)


def probe_spec(name):
    """A model's spec as its probe job reads it: a calibration predictor's carries its encoder's
    spec as ``encoder_spec`` (worldmemory.permanence.calibration.probe_backend)."""
    spec = dict(PROBE_MODELS[name])
    if spec["source"] == "curriculum":  # a VJEPA2Model directory trained here, like source: train
        return {"source": "train", "init": spec["init"], "curriculum": spec["train"]}
    if spec["source"] == "calibration":
        spec["encoder_spec"] = PROBE_MODELS[spec["encoder"]]
    return spec


def probe_threads(name):
    """Torch threads of a probe job: the model's probe_threads, for a calibration predictor
    without one its encoder's, else the top-level threads."""
    spec = PROBE_MODELS[name]
    if "probe_threads" in spec:
        return spec["probe_threads"]
    if spec["source"] == "calibration":
        return probe_threads(spec["encoder"])
    if spec["source"] == "curriculum":
        return probe_threads(spec["init"])
    return THREADS


FIGURE2_HIGHLIGHT = "facebook/vjepa2-vith-fpc64-256"  # the paper's Figure 2 draws ViT-H thick


def models_of_source(source):
    """Names of the permanence models of one source, sorted."""
    return sorted(m for m, s in PERM_MODELS.items() if s["source"] == source)


INTPHYS = PERM.get("intphys", {})
INTPHYS_FIXTURE = "results/permanence/intphys_fixture"
INTPHYS_PROTOCOL = INTPHYS.get("protocol", "reference")


def intphys_fps_args(wildcards):
    """--source-fps for the dev set (permanence.intphys.source_fps, 15 by default); none for the
    fixture, whose status.json files record the rate it was rendered at."""
    if INTPHYS.get("dataset") == "fixture":
        return ""
    return shlex.join(["--source-fps", str(INTPHYS.get("source_fps", 15))])


def intphys_dataset(wildcards):
    """Input function: the directory the IntPhys-2019 jobs score (Section 3.5): the dev set named by
    permanence.intphys.dataset, or the fixture rendered here; refuses naming the key when unset."""
    dataset = INTPHYS.get("dataset")
    if dataset is None:
        raise ValueError(
            "permanence.intphys.dataset is not set, so IntPhys-2019 (Tables 1 and 10) cannot be scored: set it to "
            "the dev set's directory (O1, O2, O3 inside), or to 'fixture' for the IntPhys-format scenes the "
            'workflow renders (docs/design.md, "IntPhys-2019")'
        )
    # a dataset that is no dev set's root is refused at validation (worldmemory.workflow.config_inputs)
    return INTPHYS_FIXTURE if dataset == "fixture" else dataset


# Cosmos-Predict1's autoregressive readout (Section 4.5, Appendix F): the one model of permanence.cosmos.
COSMOS = PERM.get("cosmos", {})
COSMOS_RELEASED = "nvidia/Cosmos-Predict1-4B"
COSMOS_FETCHED = f"resources/models/{COSMOS.get('name', 'cosmos')}"
# Our run of the released model, whose Table 8 prints beside the paper's (none for a random model).
COSMOS_PAPER_RUNS = (
    {COSMOS["name"]: COSMOS_RELEASED}
    if COSMOS.get("source") in ("hf", "local") and COSMOS.get("id") == COSMOS_RELEASED
    else {}
)


def cosmos_inputs(wildcards):
    """Input function: the model and tokenizer the Cosmos jobs load, fetched (hf) or the config's
    own (local); none for a random model (its scripted tokenizer is written by the job)."""
    if COSMOS.get("source") == "hf":
        return {"model": f"{COSMOS_FETCHED}/model", "tokenizer": f"{COSMOS_FETCHED}/tokenizer"}
    if COSMOS.get("source") == "local":
        return {"model": COSMOS["path"], "tokenizer": COSMOS["tokenizer_path"]}
    return {}


def cosmos_model_args(wildcards, input):
    """--weights and --tokenizer of the Cosmos jobs (cosmos_inputs), none for a random model."""
    if "model" not in input.keys():
        return ""
    return shlex.join(["--weights", input.model, "--tokenizer", input.tokenizer])


def models_with(source, models=None):
    """Wildcard constraint matching the models of one source among ``models`` (default every probe
    model; nothing when there are none)."""
    models = PROBE_MODELS if models is None else models
    return "|".join(re.escape(m) for m, s in models.items() if s["source"] == source) or "^$"


# -- worldmembench ---------------------------------------------------------------------------------
def worldmembench_cases():
    """Case id -> {family, category, trajectories, trajectory_params}, known before anything runs
    (worldmemory/workflow/runs.py)."""
    return study_cases(config["worldmembench"])


def worldmembench_cases_root():
    """Where the cases are: rendered here (embedded) or the user's directory."""
    source = config["worldmembench"]["cases"]["source"]
    return "results/worldmembench/cases" if source == "embedded" else source


def worldmembench_case_dir():
    """The case's directory as a pattern of the {case} wildcard (braces in the path escaped)."""
    return os.path.join(worldmembench_cases_root().replace("{", "{{").replace("}", "}}"), "{case}")


def worldmembench_rollout_args(wildcards):
    """The WorldMemBench rollout CLI's model arguments and the trajectory parameters (the
    study's, updated with the run's own)."""
    study = config["worldmembench"]
    spec = WMB_RUNS[wildcards.model]
    trajectory = merge_trajectory_params(study["trajectory_params"], spec["trajectory_params"])
    return f"{model_args(spec)} {shlex.join(['--trajectory-params', json.dumps(trajectory, sort_keys=True)])}"


def score_files(study, runs, names):
    """The score files ``names`` of every run of ``runs``: runs sorted, names in the given order
    per run (the order the tables read them in)."""
    return [f"results/{study}/scores/{run}/{name}" for run in sorted(runs) for name in names]


def agreement_inputs(study, runs, replays, score_names, units):
    """Inputs of a perception-agreement table over ``replays`` (replay runs of ``runs``): the
    scores ``score_names`` of each replay and of the model it replays, each replay's perception
    of every unit, both rollout manifests (the replayed model's truth, the replay's runs), the
    config stamp."""
    replayed = {r: runs[r]["replays"] for r in replays}
    return {
        "scores": score_files(study, [*replays, *replayed.values()], score_names),
        "estimates_dirs": [f"results/{study}/perception/{r}/{u}" for r in replays for u in units],
        "rollouts": [f"results/{study}/rollouts/{m}/manifest.json" for r in replays for m in (replayed[r], r)],
        "config": CONFIG_STAMP,
    }


# -- shared feature backend ----------------------------------------------------------------------
DINOV2_DIR = "resources/models/dinov2"


def uses_learned_features(study):
    """Whether a study's appearance features come from a learned backend (a GPU job)."""
    return study in config and (config[study]["features"] == "dinov2" or isinstance(config[study]["features"], dict))


def features_input(study):
    """The weights directory a study's score jobs read ([] for the non-learned descriptor): for
    `dinov2`, the user's local directory or where rule prefetch_dinov2 puts the top-level id; for
    a mapping, its own (estimators.Estimator.weights_dir, prefetch_perception)."""
    value = config[study]["features"]
    if isinstance(value, dict):
        return parse_estimator(value).weights_dir()
    if value != "dinov2":
        return []
    return config["dinov2"] if os.path.isdir(config["dinov2"]) else DINOV2_DIR


def features_args(study):
    """Params function: the score CLIs' feature arguments."""

    def args(wildcards, input):
        value = config[study]["features"]
        if not uses_learned_features(study):
            return shlex.join(["--features", value])
        name = value["backend"] if isinstance(value, dict) else "dinov2"
        return shlex.join(["--features", name, "--features-model", input.features, "--device", DEVICE])

    return args


# -- runs of the benchmark studies -------------------------------------------------------------
def benchmark_runs(study):
    """Every run of a benchmark study (worldmemory/workflow/runs.py): its models and their replays."""
    return study_runs(study, config[study])


def stress_runs(runs):
    """Stress model -> its run (``stress.<model>``, worldmemory/external/stress.py), in gallery order."""
    return {spec["stress"]: run for run, spec in runs.items() if "stress" in spec}


def stress_reference_runs(study):
    """The stress expectations' reference rows (``omniscient.replay``, ...) -> the replay runs that
    give them (worldmemory/workflow/runs.py)."""
    block = config[study]
    return {row: replay_name(*of) for row, of in stress_references(study, block, stress_models(study, block)).items()}


def stress_truth(study):
    """The run whose truth the stress table transforms (the omniscient reference model's)."""
    return reference_models(config[study]).get("omniscient", "")


def unit_constraint(units):
    """Wildcard constraint matching exactly ``units`` (case, sequence or run names)."""
    return "|".join(re.escape(u) for u in units) or "^$"


def agreement_replays(study, runs, recipes):
    """The replays of ``runs`` degraded by one of ``recipes`` ("clean": the main job's agreement
    table), sorted; none with the study's ``agreement`` off (the stress gallery's reference rows
    are replays too, made for stress.csv alone)."""
    if not config[study]["agreement"]:
        return []
    return sorted(run for run, spec in runs.items() if spec.get("degradation") in recipes)


def replayed_unit(runs, study, unit):
    """Input function: the unit's (case's, sequence's) rollout directories of the models a replay
    or stress run reads (its ``sources``; none for other runs)."""

    def files(wildcards):
        return [
            f"results/{study}/rollouts/{m}/{getattr(wildcards, unit)}" for m in runs[wildcards.model].get("sources", [])
        ]

    return files


def store_args(runs, study, subdirectory):
    """Params function: an external run's rollout store (common.rollout_store; under the model's,
    ``subdirectory(wildcards)``) and, for a replay or stress run, the rollouts it reads; nothing for a reference
    model, which is rendered again each time."""

    def args(wildcards, input):
        if runs[wildcards.model]["kind"] != "external":
            return ""
        store = os.path.join(f"results/{study}/rollout_store/{wildcards.model}", subdirectory(wildcards)).rstrip("/")
        return shlex.join(["--store", store, *(["--replayed", *input.replayed] if input.replayed else [])])

    return args


def model_args(spec):
    """A rollout CLI's model arguments: a reference model with its parameters, or an external
    command template and, where the entry has a version or files, their digest: a param of the
    rollout rules, so Snakemake reruns the model's rollouts when either changes (and no free text
    of the version reaches the shell)."""
    if spec["kind"] == "reference":
        args = ["--kind", "reference", "--reference", spec["reference"]]
        args += ["--params", json.dumps(spec.get("params", {}), sort_keys=True)]
    else:
        args = ["--kind", "external", "--command", spec["command"]]
        if "version" in spec or spec.get("files"):
            args += ["--model-digest", entry_digest(spec.get("version"), tuple(spec.get("files", [])))]
    return shlex.join(args)


@functools.cache  # once per Snakemake run; the files' digests are cached across runs (DIGEST_CACHE)
def entry_digest(version, files):
    """A model entry's rollout_store.model_digest."""
    return model_digest(version, files, DIGEST_CACHE)


@functools.cache  # the config does not change while the DAG is built: parsed once, not per job
def estimators(study):
    """Capability -> backend name of the study's estimators (the ``none`` ones left out)."""
    named = {c: parse_estimator(value).backend for c, value in sorted(config[study]["perception"].items())}
    return {c: name for c, name in named.items() if name != "none"}


@functools.cache
def configured_estimator(study, capability):
    """The study's estimator of ``capability`` (worldmemory.perception.estimators.Estimator)."""
    return parse_estimator(config[study]["perception"][capability])


def applying_estimators(study, applies):
    """Capability -> Estimator of the study's configured estimators that read anything of a unit
    (``applies(wildcards, capability)``), as a function of the wildcards."""
    return lambda wc: {c: configured_estimator(study, c) for c in estimators(study) if applies(wc, c)}


def perceive_weights(study, applying):
    """Input function: the weights directories and files the unit's estimators read, the files
    checked first, naming the key (a missing one is no job's output)."""

    def files(wildcards):
        used = applying(wildcards)
        for capability, estimator in used.items():
            check_estimator_files(f"{study}.perception.{capability}", estimator)
        return sorted({f for e in used.values() for f in e.inputs()})

    return files


def perceive_args(study, applying):
    """Params function: the perception CLI's estimators (JSON: capability -> backend and options,
    the weights as local directories); those that read nothing the run scores of the unit are
    skipped, their (empty) estimate files recording the backend's name."""

    def args(wildcards):
        used = applying(wildcards)
        specs = {c: {"backend": name, "skip": True} for c, name in estimators(study).items()}
        specs |= {c: {"backend": e.backend, "options": e.backend_options()} for c, e in used.items()}
        return shlex.join(["--estimators", json.dumps(specs, sort_keys=True)])

    return args


def perceive_resources(applying):
    """Resource functions of a unit's perception job, which runs its estimators one after another:
    the largest gpu and mem_mb of them, their runtimes (minutes per unit) added."""
    pick = {"gpu": max, "mem_mb": max, "runtime": sum}
    return {
        key: (lambda wc, key=key: pick[key]([e.resources[key] for e in applying(wc).values()] or [RESOURCES[key]]))
        for key in pick
    }


def perception_args(study, runs, unit):
    """Params function: the score CLIs' perception arguments, empty for a reference model (read by
    the oracle), so that choosing another estimator never re-scores one."""

    def args(wildcards):
        if runs[wildcards.model]["kind"] == "reference":
            return ""
        backends = json.dumps(estimators(study), sort_keys=True)
        where = f"results/{study}/perception/{wildcards.model}/{getattr(wildcards, unit)}"
        return shlex.join(["--perception", backends, "--estimates", where])

    return args


def estimate_dir(study, runs, unit):
    """Input function: the unit's perception directory a score job reads; none for a reference
    model (the oracle)."""

    def files(wildcards):
        if runs[wildcards.model]["kind"] == "reference":
            return []
        return [f"results/{study}/perception/{wildcards.model}/{getattr(wildcards, unit)}"]

    return files


def paper_runs(study):
    """Our run -> the paper's model name, for the study's runs labelled with one (paper_name)."""
    models = config[study]["models"]
    return {m: s["paper_name"] for m, s in sorted(models.items()) if "paper_name" in s}


def paper_args(runs, input, output, ablation=False):
    """Table CLI arguments that print the paper's numbers beside ours for ``runs`` (our run ->
    the paper's model). The side-by-side files are written for every config (empty of rows when
    no run is one of the paper's models), so that a rule's outputs never depend on the config:
    Snakemake skips the params and input rerun triggers of a job with an output it has no
    metadata for."""
    args = ["--paper", input.paper, "--out-paper", output.paper]
    if runs:
        args += ["--paper-models", *(f"{m}={name}" for m, name in runs.items())]
    if ablation:
        args += ["--paper-ablation", input.ablation, "--out-paper-ablation", output.paper_ablation]
    return shlex.join(args)


def figure_runs(rows, runs):
    """A WorldMemBench figure's inputs: each row's rollouts and case scores, and the perception
    (tracks) of a run without ground truth; ``rows(wildcards)``: the figure's models."""

    def files(wildcards):
        case = wildcards.case
        return [
            path
            for m in rows(wildcards)
            for path in (
                f"results/worldmembench/rollouts/{m}/{case}",
                f"results/worldmembench/scores/{m}/cases/{case}",
                *([] if runs[m]["kind"] == "reference" else [f"results/worldmembench/perception/{m}/{case}"]),
            )
        ]

    return files
