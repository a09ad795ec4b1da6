"""Every value from the config or from data reaches a shell quoted.

Two guards: a lint of every rule's shell command (each placeholder carries :q, except params
named *_args, which rules/common.smk builds with shlex.join), and a real dry run whose config
puts shell syntax in every free-text value a command line carries (directories with spaces and
$(...), an external model's template) and finds each value in the printed commands as exactly
one shell word; an external model's version and files never reach one (their digest does).
"""

import ast
import os
import re
import shlex
import string
from pathlib import Path

import pytest
import yaml
from worldmemory.worldmembench.cases import write_embedded_case

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "config"
UNQUOTED_OK = re.compile(r"params\.\w+_args")  # argument lists built with shlex.join
HOSTILE = "we ird $(touch PWNED) `touch PWNED` 'q' \"d\" ;&|"


def shell_commands() -> dict[str, str]:
    """Rule name -> its shell command (the concatenated string literals after `shell:`, or the
    module-level constant of string literals it names, e.g. permanence.smk's PROBE_CMD)."""
    found = {}
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text()
        # parenthesised module-level constants (only those a shell: names need be string literals)
        constants = {m.group(1): m.group(2) for m in re.finditer(r"^(\w+) = (\(\n(?:    .*\n)+\))", text, re.M)}
        for block in re.split(r"\n(?=rule )", text):
            name = re.match(r"rule (\w+):", block)
            shell = re.search(r"\n    shell:\n((?:        .*\n?)+)", block)
            if name and shell:
                body = shell.group(1).strip()
                found[name.group(1)] = ast.literal_eval(constants[body] if body in constants else "(" + body + ")")
    return found


def unquoted(command: str) -> list[str]:
    fields = [(field, spec) for _, field, spec, _ in string.Formatter().parse(command) if field is not None]
    return [field for field, spec in fields if spec != "q" and not UNQUOTED_OK.fullmatch(field)]


def test_the_lint_sees_every_rule_and_flags_an_unquoted_placeholder():
    commands = shell_commands()
    assert {"permanence_probe", "worldmembench_rollout", "persistbench_tables", "prefetch_dinov2"} <= set(commands)
    assert commands["permanence_query"] == commands["permanence_probe"]  # the shared PROBE_CMD, read as such
    assert "--query {params.query:q}" in commands["permanence_probe"]
    assert unquoted("run --in {input.cases} --out {output:q} {params.model_args}") == ["input.cases"]
    assert unquoted("run {params.model} {threads}") == ["params.model", "threads"]


def test_every_placeholder_of_every_rule_is_quoted():
    offenders = {rule: bad for rule, command in shell_commands().items() if (bad := unquoted(command))}
    assert not offenders, f"placeholders without :q (quote them, or build a *_args param with shlex.join): {offenders}"


def hostile_config(tmp_path: Path) -> dict:
    """The three tiny configs in one, every free-text value that reaches a command line hostile."""
    config = {}
    for name in ("tiny.yaml", "tiny_worldmembench.yaml", "tiny_persistbench.yaml"):
        config.update(yaml.safe_load((CONFIGS / name).read_text()))
    dirs = {}
    for key in ("cases", "videos", "dinov2"):
        dirs[key] = tmp_path / f"{key} {HOSTILE}"
        dirs[key].mkdir()
    (dirs["dinov2"] / "config.json").write_text("{}")  # a local model directory
    # one case and one 360-degree video: the workflow lists them to plan a job per case
    write_embedded_case(dirs["cases"] / "human_000", "human_000", "human", None, 64, 48, ["LRLR"])
    (dirs["videos"] / "clip_a").mkdir()
    (dirs["videos"] / "clip_a" / "video.json").write_text('{"kind": "static", "target": 1}')
    config["dinov2"] = str(dirs["dinov2"])
    config["worldmembench"]["cases"]["source"] = str(dirs["cases"])
    config["worldmembench"]["features"] = "dinov2"
    config["worldmembench"]["models"]["external"] = {
        "kind": "external", "command": "my-model --request {request} --note 'it'\"'\"'s' $(date)"}
    config["persistbench"]["sequences"]["source"] = str(dirs["videos"])
    config["persistbench"]["features"] = "dinov2"
    config["persistbench"]["models"]["external"] = {
        "kind": "external", "command": "my-4d-model {request} ; echo 'done'"}
    checkpoint = tmp_path / f"ckpt {HOSTILE}.pt"  # a model's version and files reach no command line
    checkpoint.write_bytes(b"weights")
    for study in ("worldmembench", "persistbench"):
        config[study]["models"]["external"].update(version=f"model-version {HOSTILE}", files=[str(checkpoint)])
    return config


@pytest.mark.workflow
def test_hostile_values_reach_the_shell_as_one_word(tmp_path, snakemake):
    config = hostile_config(tmp_path)
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(config))
    targets = ("results/table2.csv", "results/persistbench/table1.csv")
    # the absolute results/ path fills an external model's placeholders, so it must be a safe word
    # (worldmemory.external.template): a working directory holding shell syntax is refused first
    hostile_dir = tmp_path / f"work {HOSTILE}"
    hostile_dir.mkdir()
    refused = snakemake(hostile_dir, path, "-n", *targets, check=False)
    message = refused.stdout + refused.stderr
    assert refused.returncode and "worldmembench.models.external.command: placeholder {video} would be" in message
    assert "not a safe word" in message and not (hostile_dir / "results").exists()
    workdir = tmp_path / "work"
    workdir.mkdir()
    printed = snakemake(workdir, path, "-n", "-p", *targets).stdout
    values = [config["dinov2"], os.path.join(config["worldmembench"]["cases"]["source"], "human_000"),
              config["persistbench"]["sequences"]["source"],
              config["worldmembench"]["models"]["external"]["command"],
              config["persistbench"]["models"]["external"]["command"]]
    commands = [line for line in printed.splitlines() if line.startswith("Shell command:")]
    assert len(commands) > 10
    for value in values:
        assert any(shlex.quote(value) in c for c in commands), value
        # the value holds a single quote, so its quoted form does not contain it: any raw
        # occurrence is an unquoted one
        assert not [c for c in commands if value in c], value
    assert not list(tmp_path.rglob("PWNED")) and not (REPO / "PWNED").exists()
    # only their digest does, a hex word (model_args)
    assert len([c for c in commands if re.search(r" --model-digest [0-9a-f]{64} ", c)]) == 2
    assert not [c for c in commands if "model-version" in c or "ckpt we" in c]
