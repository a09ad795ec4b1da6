"""config_inputs: what leaves the config is refused at validation, naming the key, the value,
what was expected and the fix (issue 28, item 4), and a fuzz of every string key of the schema.

Each case here failed before: a missing user directory or estimator file ended in Snakemake's
MissingInputException naming the value only (an estimator's file now stops the DAG naming the key),
a revision or IntPhys baseline '-x' reached argparse
as an option inside a job, `intphys.dataset: ..` scanned the parent directory, a 5,000-character
model name raised an error while the DAG was built, a bad case id stopped the DAG without its key.
"""

import copy
import functools
import operator
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml
from snakemake.utils import validate
from worldmemory.perception.estimators import FILE_OPTIONS, parse
from worldmemory.workflow.config_checks import check_config
from worldmemory.workflow.config_inputs import check_estimator_files

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schemas" / "config.schema.yaml"
TINY = [REPO / "tests" / "config" / f"{name}.yaml" for name in ("tiny", "tiny_worldmembench", "tiny_persistbench")]


def tiny_config(extra=None) -> dict:
    """The three tiny configs in one, ``extra(config)`` applied, validated with defaults filled."""
    config = {}
    for path in TINY:
        config.update(yaml.safe_load(path.read_text()))
    if extra:
        extra(config)
    validate(config, str(SCHEMA), set_default=True)
    return config


def problems(config) -> str:
    with pytest.raises(ValueError) as info:
        check_config(config)
    return str(info.value)


def model_dir(path: Path) -> str:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return str(path)


# -- user directories ----------------------------------------------------------------------------
@pytest.mark.parametrize(("study", "part"), [("worldmembench", "cases"), ("persistbench", "sequences")])
def test_a_missing_user_directory_is_refused_with_its_key(study, part, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tiny_config(lambda c: c[study][part].update(source="nope/dir"))
    message = problems(config)
    assert f"{study}.{part}.source = 'nope/dir': no such directory (relative to the working directory" in message
    assert "expected 'embedded' or a directory of" in message and "Fix: correct the path" in message


@pytest.mark.parametrize(("study", "part", "expected"), [("worldmembench", "cases", "no case directories"),
                                                         ("persistbench", "sequences", "no 360-degree video")])
def test_a_directory_without_cases_is_refused_with_its_key(study, part, expected, tmp_path, monkeypatch):
    (tmp_path / "etc" / "passwd.d").mkdir(parents=True)
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    config = tiny_config(lambda c: c[study][part].update(source="../../etc"))
    message = problems(config)
    assert f"{study}.{part}.source = '../../etc': " in message and expected in message


@pytest.mark.parametrize("bad", ["-x", "x" * 101, "s" + "0" * 20])
@pytest.mark.parametrize(("study", "part", "manifest"), [("worldmembench", "cases", "case.json"),
                                                         ("persistbench", "sequences", "video.json")])
def test_a_bad_case_or_sequence_id_is_refused_at_validation(study, part, manifest, bad, tmp_path):
    (tmp_path / "user" / bad).mkdir(parents=True)
    (tmp_path / "user" / bad / manifest).write_text("{}")  # the id is checked before the manifest
    config = tiny_config(lambda c: c[study][part].update(source=str(tmp_path / "user")))
    message = problems(config)
    assert f"{study}.{part}.source = " in message
    assert f"id {bad[:60]!r}" in message and "is not a valid id" in message and "rename the directory" in message


@pytest.mark.parametrize(("study", "part", "manifest", "kind"), [
    ("worldmembench", "cases", "case.json", "case"), ("persistbench", "sequences", "video.json", "sequence")])
def test_case_or_sequence_ids_equal_up_to_case_are_refused_at_validation(study, part, manifest, kind, tmp_path):
    for name in ("Scene_1", "scene_1"):
        (tmp_path / "user" / name).mkdir(parents=True)
        (tmp_path / "user" / name / manifest).write_text("{}")  # the ids are checked before the manifests
    config = tiny_config(lambda c: c[study][part].update(source=str(tmp_path / "user")))
    message = problems(config)
    assert f"{study}.{part}.source = " in message
    assert (f"{kind} ids 'Scene_1' and 'scene_1': equal up to case; on a case-insensitive file system (macOS, "
            f"Windows) their results would share one directory. Fix: rename one of the directories in "
            f"{tmp_path / 'user'}") in message


# -- permanence: IntPhys, revisions, names ---------------------------------------------------------
def test_intphys_dataset_must_be_the_dev_sets_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for value in ("..", "missing"):
        message = problems(tiny_config(lambda c, v=value: c["permanence"]["intphys"].update(dataset=v)))
        assert f"permanence.intphys.dataset = {value!r}: " in message
        assert "none of the IntPhys-2019 blocks O1, O2, O3" in message and "or write 'fixture'" in message
    (tmp_path / "dev" / "O2").mkdir(parents=True)
    for value in ("dev", "fixture", None):
        check_config(tiny_config(lambda c, v=value: c["permanence"]["intphys"].update(dataset=v)))


def test_intphys_baseline_names_a_scored_model():
    for value in ("-x", "tiny-test-scrach", "tiny-test-mae"):  # an option, a typo, a VideoMAE (not scored)
        message = problems(tiny_config(lambda c, v=value: c["permanence"]["intphys"].update(baseline=v)))
        assert f"permanence.intphys.baseline = {value!r}: no model of that name" in message
        assert "expected one of: tiny-test-container, tiny-test-random, tiny-test-scratch" in message
    for value in ("tiny-test-random", "tiny-test-container"):
        check_config(tiny_config(lambda c, v=value: c["permanence"]["intphys"].update(baseline=v)))


def test_revisions_are_refused_when_they_read_as_options(tmp_path):
    def configure(revision):
        def extra(c):
            c["permanence"]["models"]["hf"] = {"source": "hf", "id": "facebook/vjepa2-vitl-fpc64-256",
                                               "revision": revision}
            c["permanence"]["videomae"]["models"]["mae-hf"] = {"source": "hf", "id": "MCG-NJU/videomae-base",
                                                               "revision": revision}
            c["worldmembench"]["perception"] = {"depth": {"backend": "depth-anything", "revision": revision,
                                                   "model": "depth-anything/Depth-Anything-V2-Small-hf"}}
            c["persistbench"]["features"] = {"backend": "clip", "model": "openai/clip-vit-large-patch14",
                                             "revision": revision}
        return tiny_config(extra)

    keys = ["permanence.models.hf.revision", "permanence.videomae.models.mae-hf.revision",
            "worldmembench.perception.depth.revision", "persistbench.features.revision"]
    for bad in ("-x", "", "a b", "r" * 101):
        message = problems(configure(bad))
        assert message.startswith("config: 4 problem(s)")
        assert all(f"{key} = " in message for key in keys) and "not starting with '-'" in message
    for good in ("main", "refs/pr/3", "0123456789abcdef0123456789abcdef01234567"):
        check_config(configure(good))


def test_a_revision_making_a_periodic_weights_directory_is_refused():
    """A fetched estimator's weights directory (owner__name@revision) is rule prefetch_perception's
    wildcard value: a revision ending in 20 repeats stopped the DAG in Snakemake's check."""
    def configure(revision):
        return tiny_config(lambda c: c["worldmembench"].update(perception={"depth": {
            "backend": "depth-anything", "model": "depth-anything/Depth-Anything-V2-Small-hf", "revision": revision}}))

    message = problems(configure("v" + "0" * 20))
    assert message.startswith("config: 1 problem(s)")
    assert ("- worldmembench.perception.depth.revision = 'v00000000000000000000': its weights' directory "
            "'depth-anything__Depth-Anything-V2-Small-hf@v00000000000000000000' is a wildcard value, and it ends in "
            "'0' repeated 20 times") in message and "Fix: name the revision another way" in message
    check_config(configure("v" + "0" * 19))


def test_model_names_are_at_most_100_characters():
    blocks = ["permanence.models", "permanence.curricula", "permanence.videomae.models", "worldmembench.models",
              "persistbench.models"]

    def named(length):
        def extra(c):
            for letter, block in zip("abcde", blocks):  # a name of its own per block: no name collides
                models = c
                for part in block.split("."):
                    models = models[part]
                models[letter * (length - 1) + "z"] = copy.deepcopy(next(iter(models.values())))
        return tiny_config(extra)

    message = problems(named(5000))
    assert message.startswith("config: 5 problem(s)")
    for letter, block in zip("abcde", blocks):
        assert f"- {block}: model id {letter * 60!r}... (5000 characters) is not a valid id" in message
    assert "at most 100 characters" in message and "rename the model" in message
    check_config(named(100))


NAMED_BLOCKS = ["permanence.models", "permanence.curricula", "permanence.videomae.models", "worldmembench.models",
                "worldmembench.comparisons.rate.variants", "persistbench.models"]


def _with_comparison(c):
    """The tiny config with one Table 3 comparison (``rate``), whose variants are runs too."""
    c["worldmembench"]["comparisons"] = {"rate": {"models": ["drifting"], "baseline": "drifting", "variants": {}}}


def _block(c, key):
    return functools.reduce(operator.getitem, key.split("."), c)


def test_names_snakemakes_periodic_wildcard_check_refuses_are_refused_with_their_key():
    """A name that becomes a wildcard value ending in one piece repeated 20 times or more stopped
    the DAG in Snakemake's PeriodicWildcardError; every model block, comparisons' variants and
    comparison names are checked first, each naming its key."""
    names = ["m" + "0" * 20, "a" * 25, "ab" * 20, "x-" * 20, "q" + "0." * 20, "r" + "yz" * 20]

    def extra(c):
        _with_comparison(c)
        for name, key in zip(names, NAMED_BLOCKS):
            block = _block(c, key)
            block[name] = copy.deepcopy(next(iter(block.values()), c["worldmembench"]["models"]["drifting"]))
        c["worldmembench"]["comparisons"]["b" * 21] = copy.deepcopy(c["worldmembench"]["comparisons"]["rate"])
        c["worldmembench"]["comparisons"]["b" * 21]["variants"] = {}

    message = problems(tiny_config(extra))
    assert message.startswith("config: 7 problem(s)"), message
    for name, key in zip(names, NAMED_BLOCKS):
        assert f"- {key}: model id {name!r} is not a valid id: it ends in " in message
    assert f"- worldmembench.comparisons: comparison id {'b' * 21!r} is not a valid id: it ends in 'b' repeated 21" \
           " times, and Snakemake refuses a wildcard value ending in one piece repeated 20 times or more (its " \
           "periodic-wildcard check); rename the comparison" in message


@pytest.mark.parametrize(("first", "second"), [
    ("permanence.models", "permanence.models"), ("permanence.models", "permanence.curricula"),
    ("permanence.curricula", "permanence.videomae.models"), ("worldmembench.models", "worldmembench.models"),
    ("worldmembench.models", "worldmembench.comparisons.rate.variants"),
    ("persistbench.models", "persistbench.models")])
def test_names_equal_up_to_case_in_one_results_folder_are_refused(first, second):
    """``Omniscient`` beside ``omniscient`` shares one directory on macOS or Windows: refused
    naming both keys; the same names in two studies' folders are not."""
    def extra(c):
        _with_comparison(c)
        for key, name in ((first, "Mine"), (second, "mINE")):
            block = _block(c, key)
            block[name] = copy.deepcopy(next(iter(block.values()), c["worldmembench"]["models"]["drifting"]))

    message = problems(tiny_config(extra))
    assert message.startswith("config: 1 problem(s)"), message
    assert (f"- {first}.Mine and {second}.mINE: equal up to case; on a case-insensitive file system (macOS, "
            "Windows) their results would share one directory. Fix: rename one of them") in message

    def apart(c):
        _with_comparison(c)
        for key, name in (("worldmembench.models", "Mine"), ("persistbench.models", "mINE")):
            _block(c, key)[name] = copy.deepcopy(next(iter(_block(c, key).values())))
    check_config(tiny_config(apart))


# -- estimator files and paths starting with '-' --------------------------------------------------
def test_an_estimators_files_are_checked_when_a_job_needs_them_naming_the_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    faces = parse({"backend": "arcface", "detector": "yunet.onnx", "recognizer": "arcface.onnx"})
    aesthetic = parse({"backend": "laion-aesthetic", "model": "openai/clip-vit-large-patch14", "head": "head.pth"})
    with pytest.raises(ValueError) as info:
        check_estimator_files("worldmembench.perception.aesthetic_quality", aesthetic)
    assert str(info.value).startswith("worldmembench.perception.aesthetic_quality.head = 'head.pth': no such file "
                                      f"(relative to the working directory {tmp_path})")
    assert "expected the file the 'laion-aesthetic' backend reads as head. Fix: " in str(info.value)
    (tmp_path / "yunet.onnx").write_bytes(b"")
    with pytest.raises(ValueError, match=r"^persistbench.perception.faces.recognizer = 'arcface.onnx': no such"):
        check_estimator_files("persistbench.perception.faces", faces)
    (tmp_path / "arcface.onnx").write_bytes(b"")
    check_estimator_files("persistbench.perception.faces", faces)
    # validation passes without them (config/paper.yaml names a head placed only to score an external model)
    check_config(tiny_config(lambda c: c["worldmembench"].update(perception={"aesthetic_quality": aesthetic.options
                                                                              | {"backend": "laion-aesthetic"}})))


def test_a_path_starting_with_a_dash_is_refused_with_the_dot_slash_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model_dir(tmp_path / "-model")

    def local(path):
        return lambda c: c["permanence"]["models"].update(mine={"source": "local", "path": path})

    message = problems(tiny_config(local("-model")))
    assert "permanence.models.mine.path = '-model': starts with '-'" in message and "Fix: write ./-model" in message
    check_config(tiny_config(local("./-model")))


@pytest.mark.workflow
def test_a_dry_run_stops_before_any_job_naming_the_key(tmp_path, snakemake):
    config = tiny_config(lambda c: c["worldmembench"]["cases"].update(source="no/cases"))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"worldmembench": config["worldmembench"]}))
    result = snakemake(tmp_path, path, "-n", check=False)
    assert result.returncode != 0
    assert "worldmembench.cases.source = 'no/cases': no such directory" in result.stdout + result.stderr
    assert "Job stats" not in result.stdout + result.stderr


# -- fuzz: hostile values in every string key of the schema ----------------------------------------
def string_keys(schema: dict) -> dict[tuple[str, ...], dict]:
    """Every string-valued key of the schema as a path, with the schema a string there must match:
    '*' stands for any name of a mapping of named entries, '<name>' for the name itself (its
    propertyNames), '[]' for a list's items; alternatives (anyOf) and references ($ref) followed."""
    def resolve(node):
        while "$ref" in node:
            target = schema
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def walk(node, path):
        node = resolve(node)
        types = node.get("type", [])
        if "string" in ([types] if isinstance(types, str) else types):
            yield path, {k: node[k] for k in ("type", "enum", "pattern", "minLength", "maxLength") if k in node}
        for alternative in node.get("anyOf", []):
            yield from walk(alternative, path)
        for name, sub in node.get("properties", {}).items():
            yield from walk(sub, (*path, name))
        if isinstance(node.get("additionalProperties"), dict):
            if "propertyNames" in node:
                yield (*path, "<name>"), {"type": "string", **node["propertyNames"]}
            yield from walk(node["additionalProperties"], (*path, "*"))
        if "items" in node:
            yield from walk(node["items"], (*path, "[]"))

    return dict(walk(schema, ()))


def fuzz_base(tmp_path: Path) -> dict:
    """A valid config that holds every string key of the schema (each entry kind, every estimator
    option), with local directories and files under ``tmp_path``."""
    files = tmp_path / "files"
    (tmp_path / "clips").mkdir()
    files.mkdir()
    for option in FILE_OPTIONS:
        (files / option).write_bytes(b"")
    schema = yaml.safe_load(SCHEMA.read_text())

    def estimator(name, backend, *options):
        return {"backend": backend, "model": model_dir(tmp_path / name), "revision": "main",
                **{option: str(files / option) for option in options}}

    def extra(c):
        perm = c["permanence"]
        calibration = {"source": "calibration", "predictor": "known_posterior", "q": 0.5, "mode": "mean"}
        perm["models"].update(hf={"source": "hf", "id": "facebook/vjepa2-vitl-fpc64-256", "revision": "main"},
                              local={"source": "local", "path": model_dir(tmp_path / "vjepa")},
                              calib={**calibration, "encoder": "tiny-test-scratch"})
        perm["models"]["tiny-test-scratch"]["train"]["mask_kinds"] = ["short_tube"]
        perm["curricula"]["tiny-test-container"]["train"]["loss"] = "laplace"
        perm["curricula"]["tiny-test-clips"] = {"init": "tiny-test-scratch", "train": {
            "curriculum": "clips", "clips_dir": str(tmp_path / "clips"), "seed": 0, "steps": 2, "batch_size": 2,
            "lr": 0.001, "warmup_steps": 1}}
        perm["videomae"]["models"].update(
            {"mae-hf": {"source": "hf", "id": "MCG-NJU/videomae-base", "revision": "main"},
             "mae-local": {"source": "local", "path": model_dir(tmp_path / "mae")},
             "mae-calib": {**calibration, "encoder": "tiny-test-mae"}})
        perm["intphys"]["baseline"] = "tiny-test-scratch"
        perm["cosmos"].update(source="local", path=str(tmp_path / "cosmos-model.pt"),
                              tokenizer_path=str(tmp_path / "cosmos-tokenizer"))
        (tmp_path / "cosmos-model.pt").write_bytes(b"")
        (tmp_path / "cosmos-tokenizer").mkdir()
        (tmp_path / "cosmos-tokenizer" / "encoder.jit").write_bytes(b"")
        for study, command in [("worldmembench", "python -m worldmemory.worldmembench.still_model --request {request}"),
                               ("persistbench", "my-4d-model --request {request}")]:
            capabilities = schema["properties"][study]["properties"]["perception"]["properties"]
            c[study]["perception"] = {capability: estimator(f"{study}-{capability}", "none", *FILE_OPTIONS)
                                      for capability in capabilities}
            c[study]["features"] = estimator(f"{study}-features", "dinov2")
            c[study]["models"]["external"] = {"kind": "external", "command": command, "paper_name": "Some Model",
                                              "version": "1", "files": [str(files / FILE_OPTIONS[0])]}
            c[study]["stress"] = {"models": ["black" if study == "persistbench" else "frozen"]}
        c["persistbench"]["sequences"]["schedule"] = {"shape": "visible-invisible-visible"}
        c["worldmembench"]["figures"] = {"cases": ["human_000"], "models": ["omniscient"],
                                         "trajectories": {"human_000": "LRLR"}}
        c["worldmembench"]["comparisons"] = {"drift_rate": {
            "models": ["drift-slow", "drifting"], "baseline": "drifting", "paper_names": {"drifting": "FullKV"},
            "variants": {"drift-slow": {"kind": "reference", "reference": "drifting", "params": {"rate": 0.01}},
                         "still": {"kind": "external", "paper_name": "Some Model", "version": "1",
                                   "files": [str(files / FILE_OPTIONS[0])], "command": (
                             "python -m worldmemory.worldmembench.still_model --request {request}")}}}}
        for part in ("static", "dynamic"):
            (tmp_path / "exports" / part).mkdir(parents=True)
        c["worldmembench"]["human_study"] = {"models": ["omniscient", "amnesic"], "exports": str(tmp_path / "exports")}

    config = tiny_config(extra)
    check_config(config)
    return config


def concrete(config, path: tuple[str, ...]) -> tuple | None:
    """``path`` in ``config``: each '*' the first entry (by name) that holds the rest of the path."""
    if not path or path[0] in ("[]", "<name>"):
        return path
    if not isinstance(config, dict):
        return None
    names = sorted(config) if path[0] == "*" else [path[0]] if path[0] in config else []
    for name in names:
        rest = concrete(config[name], path[1:])
        if rest is not None:
            return (name, *rest)
    return None


def with_value(config: dict, path: tuple, value: str) -> tuple[dict, tuple]:
    """A copy of ``config`` with ``value`` at ``path`` (a list's items: the list [value]; a name:
    a new entry of that name copying the first), and the key a refusal must name."""
    config = copy.deepcopy(config)
    *parents, last = path
    if last in ("<name>", "[]"):
        *parents, key = parents
        container = functools.reduce(operator.getitem, parents, config)
        if last == "[]":
            container[key] = [value]
        else:
            container[key][value] = copy.deepcopy(container[key][sorted(container[key])[0]])
        return config, tuple(path[:-1])
    functools.reduce(operator.getitem, parents, config)[last] = value
    return config, path


def hostile_values(marker: Path) -> dict[str, str]:
    return {"command substitution": f"$(touch {marker})", "backticks": f"`touch {marker}`",
            "quotes": f"'\"; touch {marker}; echo \"'", "spaces": "two words", "newline": "line\nbreak",
            "dot-dot": "..", "absolute path": "/etc", "leading dash": "-rf", "5,000 characters": "a" * 5000,
            "non-ASCII": "ünïcødé-模型", "empty": ""}


def test_the_fuzz_reaches_every_string_key():
    keys = {".".join(k) for k in string_keys(yaml.safe_load(SCHEMA.read_text()))}
    assert {"permanence.models.<name>", "permanence.models.*.revision", "permanence.intphys.dataset",
            "worldmembench.cases.source", "worldmembench.perception.judge.head", "persistbench.models.*.command",
            "worldmembench.cases.trajectories.human.[]", "dinov2", "device"} <= keys
    assert len(keys) > 90


def with_accepted(base: dict, accepted: list[tuple], kinds: tuple[str, ...], marker: Path) -> dict:
    """``base`` with, at every key that accepted a value of one of ``kinds``, the first such value."""
    config, done = copy.deepcopy(base), set()
    for key, what in accepted:
        if what in kinds and key not in done:
            config, _ = with_value(config, concrete(base, key), hostile_values(marker)[what])
            done.add(key)
    return config


@pytest.mark.workflow
def test_hostile_values_in_every_string_key_are_refused_naming_it_or_run_cleanly(tmp_path, monkeypatch, snakemake):
    """Every hostile value in every string key: refused by the schema there, or by check_config
    naming the key. The accepted ones go through two real dry runs (the command substitutions;
    the leading dashes and 5,000-character values), which build the DAG, and none reaches a
    printed command as a word of its own. No code runs (the marker file is never created). The
    schema is checked at the key itself (a string that matches its own schema leaves the valid
    base config valid): 50 times faster than validating the whole config a thousand times."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "MARKER"
    base = fuzz_base(tmp_path)
    keys = string_keys(yaml.safe_load(SCHEMA.read_text()))
    missing = [key for key in keys if concrete(base, key) is None]
    assert not missing, f"add an entry holding these keys to fuzz_base: {missing}"
    accepted, unnamed = [], []
    for key, own_schema in keys.items():
        validator = jsonschema.Draft202012Validator(own_schema)
        for what, value in hostile_values(marker).items():
            if not validator.is_valid(value):
                continue  # Snakemake's validate names the key: "On instance[...]"
            config, named = with_value(base, concrete(base, key), value)
            try:
                check_config(config)
            except ValueError as e:
                if f"- {'.'.join(named)}" not in str(e):
                    unnamed.append((key, what, str(e)[:300]))
                continue
            accepted.append((key, what))
    assert not unnamed, "\n".join(map(str, unnamed))
    assert not marker.exists()
    for i, kinds in enumerate([("command substitution",), ("leading dash", "5,000 characters")]):
        (tmp_path / f"config{i}.yaml").write_text(yaml.safe_dump(with_accepted(base, accepted, kinds, marker)))
        (tmp_path / f"work{i}").mkdir()
        printed = snakemake(tmp_path / f"work{i}", tmp_path / f"config{i}.yaml", "-n", "-p").stdout
        commands = [shlex.split(line) for line in printed.splitlines() if line.startswith("Shell command:")]
        assert len(commands) > 10
        assert not [c for c in commands if hostile_values(marker)["leading dash"] in c]
    assert not marker.exists()


def test_a_periodic_model_name_stops_snakemake_with_the_projects_message(tmp_path, snakemake):
    """The real `snakemake -n` on a tiny config: the model `m` + twenty zeros stopped the DAG in
    Snakemake's PeriodicWildcardError (naming rule worldmembench_rollouts, no key); the config
    check refuses it first, naming the key and the fix."""
    config = yaml.safe_load((REPO / "tests" / "config" / "tiny_worldmembench.yaml").read_text())
    config["worldmembench"]["models"]["m" + "0" * 20] = config["worldmembench"]["models"].pop("amnesic")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, tmp_path / "config.yaml", "-n", check=False)
    log = result.stdout + result.stderr
    assert result.returncode != 0 and "PeriodicWildcardError" not in log
    assert (f"- worldmembench.models: model id {'m' + '0' * 20!r} is not a valid id: it ends in '0' repeated 20 "
            "times, and Snakemake refuses a wildcard value ending in one piece repeated 20 times or more") in log
