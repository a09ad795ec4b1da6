"""Config checks the JSON schema cannot express, run by the Snakefile right after validation.

The schema checks shapes; these check what only the code or the file system knows: local model
directories exist, and the free-form blocks that reach the code as keyword arguments
(``trajectory_params``, ``persistbench.camera``, reference-model ``params``) name parameters the
code accepts. The valid names are read from the code itself (signatures, dataclass fields,
DEFAULT_PARAMS), so they cannot drift from it. Without these checks a typo or a missing directory
surfaces minutes later, inside a job, as a TypeError or a failed Hugging Face download.

This runs on every Snakemake start, also on login nodes: it reads the file system and imports the
studies' light modules (numpy, scipy), never torch, and never asks for a GPU (jobs check the
device themselves, worldmemory.models.device).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tempfile

from worldmemory.common.params import param_problem
from worldmemory.common.params import unknown_key as _unknown
from worldmemory.external.stress import SOURCES, STRESS
from worldmemory.workflow.config_inputs import input_problems, user_listings

# A Hugging Face id: owner/name, exactly one slash, HF's characters, neither part starting with
# '.', '-' (so './x', '../x', '~/x' and '/x' are never ids).
HF_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_config(config: dict) -> None:
    """Raise ValueError listing every problem, each naming the config key (dotted path), the
    offending value, what was expected and the fix.

    Local paths (a path is read as the jobs read it: relative to the working directory, `~` not
    expanded):

    * a permanence model with ``source: local`` needs ``path`` to be a saved model directory
      (with config.json); one with ``source: hf`` needs ``id`` of the form owner/name; one with
      ``source: calibration`` needs ``encoder`` to name another permanence model that is not a
      calibration one (its encoder reads the fill); a curriculum (``permanence.curricula``) and a
      VideoMAE (``permanence.videomae.models``, local paths and ids checked alike) are named apart
      from the models, and ``permanence.videomae.latent`` names models of permanence.models;
    * the top-level ``dinov2`` is decided by its form: an existing directory is a local model
      (it must hold config.json); otherwise a string of the form owner/name (exactly one slash,
      Hugging Face's characters, not starting with '/', '.' or '~') is a Hugging Face id; anything
      else (absolute, ./, ../, ~, more than one slash, no slash) is a path that does not exist.

    Free-form blocks: ``worldmembench.trajectory_params`` and each WorldMemBench model's
    ``trajectory_params`` may only name keyword arguments of the builder of every trajectory the
    study rolls out (with a user case directory, whose trajectories are not in the config: of
    some trajectory), less the camera keys the rollout sets from the case, and, under a
    trajectory's name, a mapping of that trajectory's own parameters (trajectories.block_problems);
    a user case's own ``trajectory_params`` are range-checked under each model's, blamed on the
    case; ``persistbench.camera`` only fields of camera_paths.PathParams (and must construct one);
    reference models' ``params`` only their reference_models.DEFAULT_PARAMS; external models'
    ``command`` templates pass worldmemory.external.check_template (known placeholders, no free
    text such as {prompt}), and the results/ path that fills them is a safe word; their ``files``
    exist, and only external models have ``files`` or ``version``. Their values are typed and
    ranged as the code takes them: trajectory parameters by the builders' annotations and
    trajectories.check, reference parameters by their default's type and PARAM_MINIMUM.

    Names: no permanence model takes a name of RESERVED_NAMES (a shared output's).

    Comparisons (``worldmembench.comparisons``, Table 3): each ``variants`` entry is checked like a
    model of worldmembench.models, at its own key; a variant id is no model's and no other
    comparison's variant's; ``models`` names models or variants, ``baseline`` one of ``models``,
    ``paper_names`` models of ``models`` and no paper row twice.

    What leaves the config (user directories, the IntPhys dataset and baseline, estimator files,
    revisions, model name lengths, paths starting with '-'): config_inputs.input_problems.
    """
    study = config.get("permanence", {})
    problems = [*_permanence_paths(study), *_curricula(study), *_videomae(study), *_cosmos(study.get("cosmos", {}))]
    problems += _reserved_names(study)
    if "dinov2" in config:
        problems += _dinov2(config["dinov2"])
    listings = user_listings(config)  # each user directory read once
    cases = listings.get("worldmembench")
    if "worldmembench" in config:
        problems += _worldmembench(config["worldmembench"], cases if isinstance(cases, dict) else {})
    if "persistbench" in config:
        problems += _persistbench(config["persistbench"])
    problems += input_problems(config, listings)
    if problems:
        raise ValueError(f"config: {len(problems)} problem(s)\n" + "\n".join(f"- {p}" for p in problems))


# -- local paths ---------------------------------------------------------------------------------
def _model_dir(key: str, path: str, fix: str):
    """A problem if ``path`` is not a saved model directory (config.json), as the loaders need."""
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "config.json")):
            return
        yield f"{key} = {path!r}: the directory has no config.json, so it is no saved model. Fix: {fix}"
        return
    where = "" if os.path.isabs(path) else f" (relative to the working directory {os.getcwd()})"
    if path.startswith("~"):
        where += f"; `~` is not expanded, write {os.path.expanduser(path)!r}"
    yield f"{key} = {path!r}: no such directory{where}. Fix: {fix}"


def _permanence_paths(study: dict):
    models = study.get("models", {})
    for name, spec in models.items():
        key = f"permanence.models.{name}"
        if spec.get("source") == "calibration":
            encoder = spec.get("encoder")
            others = sorted(m for m, s in models.items() if s.get("source") != "calibration")
            if encoder not in models:
                close = difflib.get_close_matches(str(encoder), others, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                yield (f"{key}.encoder = {encoder!r}: no model of that name in permanence.models; expected one "
                       f"of: {', '.join(others) or 'none'}. Fix: {hint}name the model whose encoder reads the fill")
            elif models[encoder].get("source") == "calibration":
                yield (f"{key}.encoder = {encoder!r}: names another calibration model; a calibration predictor "
                       f"reads its fill through a model's encoder. Fix: name one of: {', '.join(others) or 'none'}")
        elif spec.get("source") == "local":
            yield from _model_dir(
                f"{key}.path", spec["path"],
                "point it at a saved VJEPA2Model directory (config.json and *.safetensors), or use "
                "`source: hf` with `id: owner/name` to fetch released weights once")
        elif spec.get("source") == "hf" and not HF_ID.fullmatch(spec["id"]):
            yield (f"{key}.id = {spec['id']!r}: not a Hugging Face id; expected owner/name (e.g. "
                   "facebook/vjepa2-vitl-fpc64-256). Fix: correct the id, or for a directory on "
                   "this machine use `source: local` with `path:`")


def _cosmos(spec: dict):
    """permanence.cosmos: a local model is its model.pt (or the directory holding it) and a tokenizer
    directory holding encoder.jit (models.cosmos_ar, models.cosmos_tokenizer); fetched ones are ids."""
    key = "permanence.cosmos"
    if spec.get("source") == "local":
        path = spec.get("path", "")
        if not (os.path.isfile(path) or os.path.isfile(os.path.join(path, "model.pt"))):
            yield (f"{key}.path = {path!r}: neither a model.pt nor a directory holding one (relative to the "
                   f"working directory {os.getcwd()}). Fix: point it at the released nvidia/Cosmos-Predict1-4B "
                   "model.pt, or use `source: hf` to fetch it once")
        tokenizer = spec.get("tokenizer_path", "")
        if not os.path.isfile(os.path.join(tokenizer, "encoder.jit")):
            yield (f"{key}.tokenizer_path = {tokenizer!r}: no encoder.jit in that directory. Fix: point it at the "
                   "directory of nvidia/Cosmos-Tokenize1-DV8x16x16-720p's TorchScript files")
    elif spec.get("source") == "hf":
        for name in ("id", "tokenizer_id"):
            if not HF_ID.fullmatch(str(spec.get(name))):
                yield (f"{key}.{name} = {spec.get(name)!r}: not a Hugging Face id; expected owner/name (e.g. "
                       f"{'nvidia/Cosmos-Predict1-4B' if name == 'id' else 'nvidia/Cosmos-Tokenize1-DV8x16x16-720p'})")


def _curricula(study: dict):
    """A curriculum continues a non-calibration model of permanence.models and is named apart from them."""
    models = study.get("models", {})
    trainable = sorted(m for m, s in models.items() if s.get("source") != "calibration")
    for name, spec in study.get("curricula", {}).items():
        key = f"permanence.curricula.{name}"
        if name in models:
            yield (f"{key}: the name is also a model of permanence.models; a curriculum checkpoint is a model of its "
                   "own. Fix: rename one of them")
        train = spec.get("train", {})
        if (train.get("curriculum") == "clips") != ("clips_dir" in train):
            yield (f"{key}.train: curriculum {train.get('curriculum')!r} with clips_dir {train.get('clips_dir')!r}; "
                   "clips_dir names the video directory of curriculum 'clips' and of no other. Fix: set both or "
                   "neither")
        elif "clips_dir" in train and not os.path.isdir(train["clips_dir"]):
            yield (f"{key}.train.clips_dir = {train['clips_dir']!r}: no such directory (relative to the working "
                   f"directory {os.getcwd()}). Fix: point it at a directory of your video clips")
        if spec.get("init") not in trainable:
            close = difflib.get_close_matches(str(spec.get("init")), trainable, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            yield (f"{key}.init = {spec.get('init')!r}: no model of that name with weights in permanence.models; "
                   f"expected one of: {', '.join(trainable) or 'none'}. Fix: {hint}name the checkpoint to continue")


def _videomae(study: dict):
    """VideoMAE models are named apart from every other probe model; ``latent`` names models of permanence.models."""
    block = study.get("videomae", {})
    models, taken = study.get("models", {}), {*study.get("models", {}), *study.get("curricula", {})}
    encoders = sorted(m for m, s in block.get("models", {}).items() if s.get("source") != "calibration")
    for name, spec in block.get("models", {}).items():
        key = f"permanence.videomae.models.{name}"
        if name in taken:
            yield (f"{key}: the name is also a model of permanence.models or permanence.curricula. Fix: rename one "
                   "of them")
        if spec.get("source") == "calibration" and spec.get("encoder") not in encoders:
            yield (f"{key}.encoder = {spec.get('encoder')!r}: no VideoMAE of that name (not a calibration one) in "
                   f"permanence.videomae.models; expected one of: {', '.join(encoders) or 'none'}. Fix: name the "
                   "VideoMAE whose pixel targets read the fill")
        if spec.get("source") == "local":
            yield from _model_dir(f"{key}.path", spec["path"], "point it at a saved VideoMAEForPreTraining directory")
        elif spec.get("source") == "hf" and not HF_ID.fullmatch(spec["id"]):
            yield f"{key}.id = {spec['id']!r}: not a Hugging Face id; expected owner/name (e.g. MCG-NJU/videomae-large)"
    for name in block.get("latent", []):
        if name not in models:
            yield (f"permanence.videomae.latent: {name!r} is no model of permanence.models; expected some of: "
                   f"{', '.join(sorted(models)) or 'none'}. Fix: name the V-JEPA 2 models drawn beside VideoMAE")


# Names no permanence model (models, curricula, VideoMAE) may take: its weights go to
# resources/models/<name>, its logs and benchmarks to results/{logs,benchmarks}/permanence/<query>/<name>
# and .../intphys_<name>, where these shared outputs already are. Compared case-insensitively (a
# macOS or Windows file system does).
RESERVED_NAMES = {
    "dinov2": "resources/models/dinov2/ and prefetch_dinov2.log (rule prefetch_dinov2, the top-level dinov2)",
    "perception": "resources/models/perception/ (rule prefetch_perception, every learned estimator's weights)",
    "table": "results/logs/permanence/<query>/table.log (rule permanence_query_table)",
    "table9": "results/logs/permanence/<query>/table9.log (rule permanence_query_table9)",
    "fixture": "results/logs/permanence/intphys_fixture.log (rule permanence_intphys_fixture)",
    "tables": "results/logs/permanence/intphys_tables.log (rule permanence_intphys_tables)",
}


def _reserved_names(study: dict) -> list[str]:
    blocks = {"permanence.models": study.get("models", {}), "permanence.curricula": study.get("curricula", {}),
              "permanence.videomae.models": study.get("videomae", {}).get("models", {})}
    return [f"{key}.{name}: the name is reserved; a model of that name would share {RESERVED_NAMES[name.lower()]}. "
            f"Fix: rename the model (e.g. {name}-model), names reserved: {', '.join(RESERVED_NAMES)}"
            for key, block in blocks.items() for name in block if name.lower() in RESERVED_NAMES]


def _id_or_model_dir(key: str, value: str, fix: str):
    """A value that is a Hugging Face id unless it is a directory: decided by its form (see check_config)."""
    if os.path.isdir(value) or not HF_ID.fullmatch(value):
        yield from _model_dir(key, value, fix)


def _dinov2(value: str):
    yield from _id_or_model_dir(
        "dinov2", value,
        "a Hugging Face id of the form owner/name (e.g. facebook/dinov2-with-registers-base), "
        "fetched once by rule prefetch_dinov2, or an existing local model directory")


# -- free-form blocks ----------------------------------------------------------------------------
def _trajectory_values(study: dict, names: list[str], user_cases: dict[str, dict]):
    """The values of the trajectory parameters: each of its builder's annotated type, at its own
    key; then, if all are, each run's trajectories (``names``) as its rollout lays them out
    (trajectories.check: ranges, the frame budget, common.limits), blamed on the run's block, or
    on the study's when the run sets none; then, if all pass, each user case's trajectories with
    the case's own ``trajectory_params`` (case.json, typed by cases.load_case; ``user_cases``: the
    cases as workflow.runs lists them, none for the embedded default) under each run's, blamed on
    the case. Unknown names are left to _worldmembench."""
    from worldmemory.worldmembench import trajectories as tj

    types = tj.keyword_types()
    study_params = study.get("trajectory_params", {})
    blocks = {"worldmembench.trajectory_params": study_params,
              **{f"{key}.trajectory_params": spec.get("trajectory_params", {})
                 for key, _, spec in _study_models("worldmembench", study)}}
    typed = [problem for key, block in blocks.items() for problem in tj.typed_problems(key, block, names)]
    yield from typed
    if typed:
        return

    def own(params: dict, name: str) -> dict:  # the parameters the run's rollout of ``name`` takes
        found = {k: v for k, v in params.items() if k in types[name]}
        if isinstance(params.get(name), dict):
            found[name] = {k: v for k, v in params[name].items() if k in types[name]}
        return found

    problems = {}
    runs = [(model_key, model, tj.merge_params(study_params, spec.get("trajectory_params", {})),
             f"{model_key}.trajectory_params" if spec.get("trajectory_params") else "worldmembench.trajectory_params")
            for model_key, model, spec in _study_models("worldmembench", study)]
    for _, model, params, key in runs:
        for name in names:
            try:
                tj.check(name, own(params, name))
            except ValueError as e:
                problems.setdefault(f"{key}: the {name} trajectory: {e}", model)
    for problem, model in problems.items():
        yield (f"{problem} (model {model}). Fix: correct the value (trajectories.build documents each "
               "parameter; a longer n_frames or shorter holds give the frame budget room)")
    if problems:
        return
    for case_id, case in user_cases.items():
        for name in sorted(case.get("trajectory_params", {})):
            for _, model, params, key in runs:
                try:
                    tj.check(name, own(params, name), case["trajectory_params"])
                except ValueError as e:
                    yield (f"worldmembench.cases.source: case {case_id}: trajectory_params.{name}: {e} (under "
                           f"{key} of model {model}). Fix: correct the case's value in its case.json "
                           "(trajectories.build documents each parameter), or set the parameter in the "
                           f"config's {name} block, which overrides the case's")
                    break


def _worldmembench(study: dict, user_cases: dict[str, dict]):
    from worldmemory.worldmembench import trajectories as tj
    from worldmemory.worldmembench.external import PLACEHOLDERS
    from worldmemory.worldmembench.reference_models import DEFAULT_PARAMS, PARAM_MINIMUM

    keywords = tj.keywords()
    cases = study.get("cases", {})
    if cases.get("source", "embedded") == "embedded":
        listed = cases.get("trajectories", {}).values()
        names = sorted({n for family in listed for n in family}) or sorted(keywords)
        valid = set.intersection(*(keywords[n] for n in names))
        expected = (f"the trajectory parameters every trajectory of worldmembench.cases takes "
                    f"({', '.join(names)})")
    else:  # a user case directory names its trajectories in its case.json files
        names = sorted(keywords)
        valid = set.union(*keywords.values())
        expected = "the trajectory parameters of worldmemory.worldmembench.trajectories.build"
    blocks = {"worldmembench.trajectory_params": study.get("trajectory_params", {})}
    for key, _, spec in _study_models("worldmembench", study):
        blocks[f"{key}.trajectory_params"] = spec.get("trajectory_params", {})
    for key, block in list(blocks.items()):
        yield from tj.block_problems(key, block)  # each trajectory's own block (trajectories.resolve)
        blocks[key] = {k: v for k, v in block.items() if k not in keywords}
    for key, block in blocks.items():
        for param in sorted(set(block) - valid):
            takers = [n for n in names if param in keywords[n]]  # embedded: some, not all, take it
            if param in tj.CAMERA_KEYS:
                yield tj.camera_key_problem(f"{key}.{param}", block[param])
            elif takers:
                yield (f"{key}.{param} = {block[param]!r}: a parameter of {', '.join(takers)} only, "
                       f"but every trajectory of worldmembench.cases ({', '.join(names)}) is built with "
                       f"these parameters; valid for all: {', '.join(sorted(valid))}. Fix: remove it, "
                       f"or roll out only {', '.join(takers)}")
            else:
                yield _unknown(key, block, param, valid, expected)
    yield from _trajectory_values(study, names, user_cases)
    yield from _reference_params("worldmembench", study, DEFAULT_PARAMS, PARAM_MINIMUM)
    yield from _templates("worldmembench", study, PLACEHOLDERS)
    yield from _model_files("worldmembench", study)
    yield from _perception("worldmembench", study)
    yield from _comparisons(study)
    yield from _human_study_names(study)


def _human_study_names(study: dict):
    """A human-study model named by a word of the embedded cases' event and checklist texts, which
    the blinded dynamic page shows: the page build would refuse it (human_study/blinding.py)."""
    from worldmemory.worldmembench.human_study.blinding import embedded_texts, named_in

    if study.get("cases", {}).get("source", "embedded") != "embedded":
        return
    texts = embedded_texts()
    for model in study.get("human_study", {}).get("models") or study.get("models", {}):
        if any(named_in(model, text) for text in texts):
            yield (f"worldmembench.models.{model}: the name is a word of the embedded cases' event and checklist "
                   f"texts, which the human study's blinded annotation page shows. Fix: rename the model "
                   f"(e.g. 'model-{model}'), or leave it out of worldmembench.human_study.models")


def _study_models(study_name: str, study: dict) -> list[tuple[str, str, dict]]:
    """Every model of a study as (its config key, its run name, its spec): ``<study>.models.<name>``,
    then each comparison's variants, ``<study>.comparisons.<comparison>.variants.<name>``."""
    found = [(f"{study_name}.models.{name}", name, spec) for name, spec in study.get("models", {}).items()]
    for comparison, block in study.get("comparisons", {}).items():
        found += [(f"{study_name}.comparisons.{comparison}.variants.{name}", name, spec)
                  for name, spec in block.get("variants", {}).items()]
    return found


def _comparisons(study: dict):
    """Table 3's comparisons: variant ids apart from the models and from each other; ``models``
    known (a model or any comparison's variant), ``baseline`` and ``paper_names`` among them."""
    models, owner = study.get("models", {}), {}
    for comparison, block in study.get("comparisons", {}).items():
        key = f"worldmembench.comparisons.{comparison}"
        for name in block.get("variants", {}):
            if name in models:
                yield (f"{key}.variants.{name}: also a model of worldmembench.models; a variant is a run of its own "
                       f"(its rollouts, its scores). Fix: rename the variant, or drop it and name the model "
                       f"{name!r} in {key}.models")
            elif name in owner:
                yield (f"{key}.variants.{name}: also a variant of {owner[name]}. Fix: rename one of them, or define "
                       f"it once and name it in both comparisons' models")
            owner.setdefault(name, f"worldmembench.comparisons.{comparison}")
    known = [*models, *owner]
    for comparison, block in study.get("comparisons", {}).items():
        key = f"worldmembench.comparisons.{comparison}"
        for name in block.get("models", []):
            if name not in known:
                close = difflib.get_close_matches(str(name), known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                yield (f"{key}.models: {name!r} is no model of worldmembench.models and no comparison's variant; "
                       f"expected some of: {', '.join(known)}. Fix: {hint}correct it, or define it under "
                       f"{key}.variants")
        if block.get("baseline") not in block.get("models", []):
            yield (f"{key}.baseline = {block.get('baseline')!r}: not one of {key}.models "
                   f"({', '.join(block.get('models', []))}). Fix: name the model the speedups are relative to "
                   "among the models, or add it to models")
        names = block.get("paper_names", {})
        for name in names:
            if name not in block.get("models", []):
                yield (f"{key}.paper_names.{name}: not one of {key}.models ({', '.join(block.get('models', []))}). "
                       "Fix: label a model of the comparison, or remove the entry")
        taken = sorted(row for row in set(names.values()) if list(names.values()).count(row) > 1)
        for row in taken:
            yield (f"{key}.paper_names: {sorted(m for m, r in names.items() if r == row)} all stand for the paper's "
                   f"{row!r}. Fix: label one model per paper row")


def _persistbench(study: dict):
    from worldmemory.persistbench.camera_paths import PathParams
    from worldmemory.persistbench.reference_models import DEFAULT_PARAMS, PARAM_MINIMUM
    from worldmemory.persistbench.rollout import PLACEHOLDERS

    camera = study.get("camera", {})
    fields = [f.name for f in dataclasses.fields(PathParams)]
    unknown = sorted(set(camera) - set(fields))
    for name in unknown:
        yield _unknown("persistbench.camera", camera, name, fields, "the fields of camera_paths.PathParams")
    if not unknown:
        try:
            PathParams(**camera)
        except (TypeError, ValueError) as e:
            yield (f"persistbench.camera = {camera!r}: {e}. Fix: correct the value "
                   "(camera_paths.PathParams documents each field)")
    yield from _reference_params("persistbench", study, DEFAULT_PARAMS, PARAM_MINIMUM)
    yield from _templates("persistbench", study, PLACEHOLDERS)
    yield from _model_files("persistbench", study)
    yield from _perception("persistbench", study)


def _reference_params(study_name: str, study: dict, defaults: dict[str, dict], minimum: dict[str, float]):
    """Reference models' ``params`` against the study's DEFAULT_PARAMS and PARAM_MINIMUM (what
    resolve_params takes): known names, each value of its default's type and in range."""
    for model_key, _, spec in _study_models(study_name, study):
        if spec.get("kind") != "reference" or spec.get("reference") not in defaults:
            continue  # the schema's enum already names the valid reference models
        reference, key, params = spec["reference"], f"{model_key}.params", spec.get("params", {})
        for param in sorted(params):
            if param not in defaults[reference]:
                yield _unknown(key, params, param, defaults[reference],
                               f"the parameters of reference model {reference!r} "
                               f"({study_name}.reference_models.DEFAULT_PARAMS)")
            elif problem := param_problem(params[param], defaults[reference][param], minimum.get(param)):
                yield (f"{key}.{param} = {params[param]!r}: expected {problem} (the default is "
                       f"{defaults[reference][param]!r}). Fix: write a bare number, unquoted (e.g. "
                       f"{param}: {defaults[reference][param]!r})")


def _templates(study_name: str, study: dict, placeholders: tuple[str, ...]):
    """External models' command templates (worldmemory.external.check_template): known
    placeholders, one of the output ones; and the paths that will fill them (under results/,
    absolute) safe words (template.safe_word). Refused before any job runs."""
    from worldmemory.external.template import check_template, safe_word

    external = [(key, spec) for key, _, spec in _study_models(study_name, study)
                if spec.get("kind") == "external"]
    for key, spec in external:
        try:
            check_template(spec["command"], placeholders)
        except ValueError as e:
            yield f"{key}.command: {e}"
    if external:
        try:
            safe_word("video", os.path.realpath("results"))
        except ValueError as e:
            yield f"{external[0][0]}.command: {e}"


def _model_files(study_name: str, study: dict):
    """A model's ``version`` and ``files`` (its rollouts' identity, rollout_store.model_digest)
    belong to an external model, and every file or directory of ``files`` exists."""
    for key, _, spec in _study_models(study_name, study):
        if spec.get("kind") == "reference":
            for name in sorted({"version", "files"} & set(spec)):
                yield (f"{key}.{name}: a reference model is rendered again on every run, so it has no "
                       f"{name}. Fix: remove it")
            continue
        for i, path in enumerate(spec.get("files", [])):
            if not os.path.exists(path):
                where = "" if os.path.isabs(path) else f" (relative to the working directory {os.getcwd()})"
                if path.startswith("~"):
                    where += f"; `~` is not expanded, write {os.path.expanduser(path)!r}"
                yield (f"{key}.files[{i}] = {path!r}: no such file or directory{where}. Fix: correct the path "
                       "of the model's script, checkpoint or weights directory, or remove it from files")


def _perception(study_name: str, study: dict):
    """Each capability's backend is one the registry knows (or ``none``), each model an id or a
    directory (the features' too); no model takes the name of a replay or stress run, even up to
    case."""
    from worldmemory.external.replays import REPLAY
    from worldmemory.external.template import check_template, safe_word
    from worldmemory.perception import registry
    from worldmemory.perception.estimators import parse
    from worldmemory.perception.external_estimator import PLACEHOLDERS as EXTERNAL_PLACEHOLDERS

    fix = ("a Hugging Face id of the form owner/name (with `revision:`), fetched once by rule "
           "prefetch_perception, or an existing local model directory")
    if isinstance(study.get("features"), dict):  # the schema requires its model and names its backends
        yield from _id_or_model_dir(f"{study_name}.features.model", study["features"]["model"], fix)
    for capability, value in study.get("perception", {}).items():
        estimator = parse(value)
        name = estimator.backend
        if estimator.model is not None:
            yield from _id_or_model_dir(f"{study_name}.perception.{capability}.model", estimator.model, fix)
        if name == "external-command" and capability in EXTERNAL_PLACEHOLDERS:
            try:
                command = str(estimator.options.get("command", ""))
                check_template(command, EXTERNAL_PLACEHOLDERS[capability], ("out",))
                safe_word("video", tempfile.gettempdir())  # its files are in a temporary directory
            except ValueError as e:
                yield f"{study_name}.perception.{capability}.command: {e}"
        if name not in registry.names(capability):
            key = f"{study_name}.perception.{capability}" + (".backend" if isinstance(value, dict) else "")
            yield (f"{key} = {name!r}: no such backend; expected one of "
                   f"{', '.join(registry.names(capability))} (worldmemory/perception/registry.py). Fix: use one "
                   "of those")
        elif study_name == "worldmembench" and capability == "judge" and name != registry.NONE:
            from worldmemory.worldmembench.perceive import event_judge_problem  # only for a configured judge

            if problem := event_judge_problem(name):
                yield problem
    for key, name, _ in _study_models(study_name, study):
        if REPLAY in name.casefold():  # in any case: a case-insensitive file system would mix them
            yield (f"{key}: names with {REPLAY!r} (in any case) are the replays of the agreement "
                   f"tables (<model>{REPLAY}, <model>{REPLAY}-<degradation>). Fix: rename the model")
        if name.casefold().startswith(STRESS):
            yield (f"{key}: names starting {STRESS!r} (in any case) are the stress gallery's runs. Fix: rename "
                   "the model")
    yield from _stress(study_name, study)


def _stress(study_name: str, study: dict):
    """Each listed stress model is a built-in one whose reference models the study configures."""
    key = f"{study_name}.stress.models"
    references = {spec.get("reference") for spec in study.get("models", {}).values() if spec.get("kind") == "reference"}
    for model in study.get("stress", {}).get("models") or []:
        if model not in SOURCES[study_name]:
            close = difflib.get_close_matches(model, SOURCES[study_name], n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            yield (f"{key}: {model!r} is no stress model; expected one of {', '.join(SOURCES[study_name])} "
                   f"(worldmemory/external/stress.py). Fix: {hint}rename or remove it")
            continue
        for missing in sorted(set(SOURCES[study_name][model]) - references):
            yield (f"{key}: {model!r} reads the rollouts of a reference model `reference: {missing}`, which "
                   f"{study_name}.models has none of. Fix: add one (kind: reference, reference: {missing}) or "
                   f"remove {model!r}")
