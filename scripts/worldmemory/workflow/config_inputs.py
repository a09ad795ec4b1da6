"""Config checks of the values that leave the config: directories and files the jobs read, values
that reach a command line as an option's argument, names that become file names.

Without these a wrong value is found late and without its key: a missing case directory or
perception file as Snakemake's MissingInputException naming the value only, a revision '-x' as
argparse's "expected one argument" inside a job, a 5,000-character model name as an OSError
while the DAG is built. Each check names the key, the value, what was expected and the fix, and
runs with config_checks.check_config before any job; an estimator's files are checked when the
DAG plans a job that reads them (check_estimator_files). A path is read as the jobs read it:
relative to the working directory.
"""

from __future__ import annotations

import os
import re

from worldmemory.common.ids import MAX_LENGTH, case_collisions, check_id, periodic, same_up_to_case, shown
from worldmemory.perception.estimators import FILE_OPTIONS, parse, weights_slug
from worldmemory.workflow.runs import persistbench_sequences, worldmembench_cases

# A branch, tag or commit as `--revision` receives it ('-x' would read as an option); a Hugging
# Face id fetched into a directory named after it and the revision is at most MAX_LENGTH long too.
REVISION = re.compile(rf"[^-\s]\S{{0,{MAX_LENGTH - 1}}}")
INTPHYS_BLOCKS = ("O1", "O2", "O3")  # the dev set's blocks (Section 3.5)
# The blocks whose keys name runs, grouped by the folder their results share: names within one
# group are ids apart even up to case (a permanence curriculum's and VideoMAE's probes sit beside
# the models', a comparison variant's rollouts beside the study's models').
NAME_GROUPS = {
    "permanence": ("permanence.models", "permanence.curricula", "permanence.videomae.models"),
    "worldmembench": ("worldmembench.models", "worldmembench.comparisons.*.variants"),
    "worldmembench.comparisons": ("worldmembench.comparisons",),
    "persistbench": ("persistbench.models",),
}
# study -> (the block naming its source, how the workflow lists it, what the source is expected to be)
USER_DIRECTORIES = {
    "worldmembench": ("cases", worldmembench_cases,
                      "a directory of cases: one sub-directory per case, named by its id, with case.json"),
    "persistbench": ("sequences", persistbench_sequences,
                     "a directory of 360-degree videos: one sub-directory per video, named by its id, with video.json"),
}


def user_listings(config: dict) -> dict[str, object]:
    """Each study's user directory (USER_DIRECTORIES) listed as the workflow lists it, read once
    for all the checks: study -> its listing, or the ValueError listing it raised; a study without
    one (the embedded default, or a source that is no directory: _user_directory says why) is
    left out."""
    found = {}
    for study_name, (part, listing, _) in USER_DIRECTORIES.items():
        source = config.get(study_name, {}).get(part, {}).get("source", "embedded")
        if source != "embedded" and os.path.isdir(source):
            try:
                found[study_name] = listing(config[study_name])
            except ValueError as e:
                found[study_name] = e
    return found


def input_problems(config: dict, listings: dict[str, object]):
    """Every problem of the config's inputs (``listings``: the user directories, user_listings),
    each a string naming the key, the value, what was expected and the fix:

    * model names (of every block, comparisons' variants too) and comparison names are ids
      (common.ids: at most MAX_LENGTH characters, none Snakemake's periodic-wildcard check
      refuses), and the names of one NAME_GROUPS group differ in more than case;
    * a user case or 360-degree video directory (``source``) exists and lists as the workflow
      lists it (workflow.runs): every sub-directory's id valid, none a name the workflow uses,
      each case or video valid with its files inside its own folder (common.confine) and
      labels.npz loadable without pickle (cases.load_case, persistbench.plan.user_video);
    * ``permanence.intphys.dataset`` is unset, 'fixture' or a directory holding an IntPhys block
      (O1, O2, O3), so '..' is refused; ``baseline`` names a model the IntPhys jobs score;
    * revisions are revisions (REVISION) and fetched estimator ids at most MAX_LENGTH characters;
    * ``worldmembench.human_study.exports``, when set, is a directory with static/ and dynamic/;
    * no local path starts with '-' (written ./-x it reads as a path).

    The files an estimator's options name are checked when a job needs them (check_estimator_files).
    """
    yield from _names(config)
    study = config.get("permanence", {})
    yield from _intphys(study.get("intphys", {}), sorted({*study.get("models", {}), *study.get("curricula", {})}))
    for prefix, block in (("permanence.models", study.get("models", {})),
                          ("permanence.videomae.models", study.get("videomae", {}).get("models", {}))):
        for name, spec in block.items():
            if "revision" in spec:
                yield from _revision(f"{prefix}.{name}.revision", spec["revision"])
    for study_name in USER_DIRECTORIES:
        if study_name in config:
            yield from _user_directory(study_name, config[study_name], listings.get(study_name))
            yield from _estimators(study_name, config[study_name])
    yield from _human_study_exports(config.get("worldmembench", {}).get("human_study", {}).get("exports"))
    for key, path in _paths(config):
        if path.startswith("-"):
            yield (f"{key} = {shown(path)}: starts with '-', so a job's command line would read it as an option. "
                   f"Fix: write ./{path}")


def _names(config: dict):
    """Names that become file names and wildcard values are ids (the schema checks the pattern,
    common.ids the length and Snakemake's periodic-wildcard rule); names of one group that are
    equal up to case would share a directory on a case-insensitive file system."""
    for group, blocks in NAME_GROUPS.items():
        named = [(key, name) for block in blocks for key, names in _blocks(config, block) for name in names]
        for key, name in named:
            kind = "comparison" if group.endswith("comparisons") else "model"
            try:
                check_id(kind, name, f"rename the {kind}")
            except ValueError as e:
                yield f"{key}: {e}"
        for same in case_collisions(name for _, name in named):
            keys = [f"{key}.{name}" for key, name in named if name in same]
            yield same_up_to_case(" and ".join(keys), "rename one of them")


def _blocks(config: dict, block: str):
    """(key, the mapping at key) of a dotted ``block``; a ``*`` part stands for each key there."""
    found = [("", config)]
    for part in block.split("."):
        found = [(f"{key}.{name}".lstrip("."), value.get(name, {}))
                 for key, value in found for name in (value if part == "*" else [part])]
    return found


def _revision(key: str, value: str):
    if not REVISION.fullmatch(value):
        yield (f"{key} = {shown(value)}: not a revision; expected a branch, tag or commit of at most {MAX_LENGTH} "
               "characters, without spaces, not starting with '-' (e.g. main, or a 40-digit commit). Fix: correct "
               "it, or leave it out for main")


def _user_directory(study_name: str, study: dict, listed):
    """A study's user directory, ``listed`` as the workflow lists it (user_listings)."""
    part, _, expected = USER_DIRECTORIES[study_name]
    key, source = f"{study_name}.{part}.source", study.get(part, {}).get("source", "embedded")
    if source == "embedded":
        return
    if not os.path.isdir(source):
        yield (f"{key} = {shown(source)}: no such directory (relative to the working directory {os.getcwd()}); "
               f"expected 'embedded' or {expected}. Fix: correct the path, or write 'embedded'")
        return
    if isinstance(listed, ValueError):
        yield f"{key} = {shown(source)}: {listed} (expected {expected})"


def _intphys(intphys: dict, models: list[str]):
    """The dataset is unset, 'fixture' or the dev set's root; the baseline one of the scored models
    (permanence.models and permanence.curricula, as rule permanence_intphys_tables lists them)."""
    dataset, baseline = intphys.get("dataset"), intphys.get("baseline")
    if dataset not in (None, "fixture") and not any(os.path.isdir(os.path.join(dataset, b)) for b in INTPHYS_BLOCKS):
        what = "a directory holding none of" if os.path.isdir(dataset) else "no directory, so it holds none of"
        yield (f"permanence.intphys.dataset = {shown(dataset)}: {what} the IntPhys-2019 blocks "
               f"{', '.join(INTPHYS_BLOCKS)} (relative to the working directory {os.getcwd()}); expected the dev "
               "set's root directory or 'fixture'. Fix: point it at the directory holding O1, O2, O3, or write "
               "'fixture'")
    if baseline is not None and baseline not in models:
        yield (f"permanence.intphys.baseline = {shown(baseline)}: no model of that name in permanence.models or "
               f"permanence.curricula; expected one of: {', '.join(models)}. Fix: name one of them, or leave it out "
               "for the first by name")


def _human_study_exports(exports):
    """The real study's exports: a directory with static/ and dynamic/ holding <annotator>.json."""
    if exports is None:
        return
    missing = [part for part in ("static", "dynamic") if not os.path.isdir(os.path.join(exports, part))]
    if missing:
        yield (f"worldmembench.human_study.exports = {shown(exports)}: no {' or '.join(f'{m}/' for m in missing)} "
               f"directory there (relative to the working directory {os.getcwd()}); expected a directory with "
               "static/ and dynamic/, each holding the annotators' exports (<annotator>.json). Fix: put the "
               "exports there, or leave the key out to use simulated annotators")


def _estimators(study_name: str, study: dict):
    """A study's estimators given as mappings: revisions, and fetched ids' length; the directory
    a fetched one's weights go to (its slug, a wildcard value of rule prefetch_perception) one
    that Snakemake's periodic-wildcard check accepts."""
    for key, value in _estimator_entries(study_name, study).items():
        estimator = parse(value)
        if "revision" in value:
            yield from _revision(f"{key}.revision", value["revision"])
        if estimator.fetched and len(estimator.model) > MAX_LENGTH:
            yield (f"{key}.model = {shown(estimator.model)}: a Hugging Face id of more than {MAX_LENGTH} characters "
                   "(it names the directory its weights are fetched into). Fix: correct the id")
        elif (estimator.fetched and REVISION.fullmatch(estimator.revision)
              and (problem := periodic(slug := weights_slug(estimator.model, estimator.revision)))):
            yield (f"{key}.revision = {shown(estimator.revision)}: its weights' directory {shown(slug, 250)} is a "
                   f"wildcard value, and {problem}. Fix: name the revision another way (a tag, a branch, or "
                   "the full commit)")


def check_estimator_files(key: str, estimator) -> None:
    """The files ``estimator``'s options name (head, detector, recognizer, weights: inputs of the perception
    jobs that run it) exist; else ValueError naming ``key``, the file, what was expected and the
    fix. Checked when such a job is planned, not at validation: config/paper.yaml names a LAION
    head that the user places only to score an external model with it."""
    for option in (o for o in FILE_OPTIONS if o in estimator.options):
        path = estimator.options[option]
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError(
                f"{key}.{option} = {shown(path)}: no such file (relative to the working directory {os.getcwd()}); "
                f"expected the file the {estimator.backend!r} backend reads as {option}. Fix: correct the path, or "
                "place the file there first (docs/perception.md, \"Learned estimators\")")


def estimator_files(config: dict) -> dict[str, str]:
    """``<key>.<option>`` -> path of every file an estimator's options name (FILE_OPTIONS: head,
    detector, recognizer, weights), the files check_estimator_files asks for when a job reads them."""
    files = {}
    for study_name in USER_DIRECTORIES:
        for key, value in _estimator_entries(study_name, config.get(study_name, {})).items():
            options = parse(value).options
            files.update({f"{key}.{option}": options[option] for option in FILE_OPTIONS if option in options})
    return files


def _estimator_entries(study_name: str, study: dict) -> dict[str, dict]:
    """Key -> the study's estimators given as mappings (perception capabilities and features)."""
    entries = {f"{study_name}.perception.{c}": v for c, v in study.get("perception", {}).items()}
    entries[f"{study_name}.features"] = study.get("features")
    return {key: value for key, value in entries.items() if isinstance(value, dict)}


def _paths(config: dict):
    """(key, value) of every local path the config names: model directories, user directories,
    datasets, clip directories."""
    if "dinov2" in config and os.path.isdir(config["dinov2"]):
        yield "dinov2", config["dinov2"]
    study = config.get("permanence", {})
    for prefix, block in (("permanence.models", study.get("models", {})),
                          ("permanence.videomae.models", study.get("videomae", {}).get("models", {}))):
        yield from ((f"{prefix}.{name}.path", spec["path"]) for name, spec in block.items() if "path" in spec)
    for name, spec in study.get("curricula", {}).items():
        if "clips_dir" in spec.get("train", {}):
            yield f"permanence.curricula.{name}.train.clips_dir", spec["train"]["clips_dir"]
    if study.get("intphys", {}).get("dataset") not in (None, "fixture"):
        yield "permanence.intphys.dataset", study["intphys"]["dataset"]
    if config.get("worldmembench", {}).get("human_study", {}).get("exports") is not None:
        yield "worldmembench.human_study.exports", config["worldmembench"]["human_study"]["exports"]
    for study_name, (part, _, _) in USER_DIRECTORIES.items():
        source = config.get(study_name, {}).get(part, {}).get("source", "embedded")
        if source != "embedded":
            yield f"{study_name}.{part}.source", source
        for key, value in _estimator_entries(study_name, config.get(study_name, {})).items():
            estimator = parse(value)
            if estimator.model is not None and not estimator.fetched:
                yield f"{key}.model", estimator.model
