"""Placeholders that bash, or the program they are handed to, evaluates a second time
(worldmemory.external.evaluated): each form is refused at validation, and run by bash with
validation bypassed, the value really runs code; the forms that stay accepted run nothing."""

import os
import random
import string
import subprocess
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate
from worldmemory.external import check_template, quoting_problem, render
from worldmemory.external.evaluated import evaluation_problem
from worldmemory.workflow.config_checks import check_config

REPO = Path(__file__).resolve().parents[2]
PLACEHOLDERS = ("request", "video", "prompt", "prompt_file", "width")
ISSUE = "[[ {prompt} -eq 0 ]]; python -m worldmemory.worldmembench.still_model --request {request}"
SUBSCRIPT = "a[$(touch M1)]"  # the issue's value: an array subscript, evaluated as arithmetic
CODE = "touch M1"

# (template, a value that runs `touch M1` there, where the check says the placeholder is)
DANGEROUS = [
    (ISSUE, SUBSCRIPT, "inside [[ ... ]]"),
    ("[[ 1 -lt {prompt} ]] && run {video}", SUBSCRIPT, "inside [[ ... ]]"),
    ("let n={prompt}; run {video}", SUBSCRIPT, "an argument of `let`"),
    ("declare -i n={prompt}; run {video}", SUBSCRIPT, "an argument of `declare`"),
    ("typeset -i n={prompt}; run {video}", SUBSCRIPT, "an argument of `typeset`"),
    ("f() {{ local -i n={prompt}; }}; f; run {video}", SUBSCRIPT, "an argument of `local`"),
    ("declare -i n; n={prompt}; run {video}", SUBSCRIPT, "in an assignment"),
    ("a[{prompt}]=1; run {video}", SUBSCRIPT, "in an array subscript"),
    ("a=(1); unset a[{prompt}]; run {video}", SUBSCRIPT, "in an array subscript"),
    ("printf -v {prompt} x; run {video}", SUBSCRIPT, "may read it as a variable name"),
    ("test -v {prompt}; run {video}", SUBSCRIPT, "may read it as a variable name"),
    ("[ -v {prompt} ]; run {video}", SUBSCRIPT, "may read it as a variable name"),
    ("read {prompt} <<<x; run {video}", SUBSCRIPT, "an argument of `read`"),
    ("eval echo {prompt} {video}", "$(touch M1)", "an argument of `eval`"),
    ("builtin eval {prompt}; run {video}", CODE, "an argument of `eval`"),
    ('eval "$(echo {prompt})"; run {video}', CODE, "an argument of `eval`"),
    ("trap {prompt} EXIT; run {video}", CODE, "an argument of `trap`"),
    ("bash -c {prompt}; run {video}", CODE, "gives `bash` inline code"),
    ("sh -c {prompt}; run {video}", CODE, "gives `sh` inline code"),
    ("dash -c {prompt}; run {video}", CODE, "gives `dash` inline code"),
    ("bash -ec {prompt}; run {video}", CODE, "gives `bash` inline code"),
    ("exec bash -c {prompt} {video}", CODE, "gives `bash` inline code"),
    ("env A=1 sh -c {prompt}; run {video}", CODE, "gives `sh` inline code"),
    ("timeout -s KILL 10 bash -c {prompt}; run {video}", CODE, "gives `bash` inline code"),
    ("find /dev/null -exec sh -c {prompt} \\; ; run {video}", CODE, "gives `sh` inline code"),
    ("python3 -c {prompt}; run {video}", "import os; os.system('touch M1')", "gives `python` inline"),
    ("echo {prompt} | xargs -0 sh -c; run {video}", CODE, "in a pipeline into `xargs`"),
    ("echo {prompt} | bash; run {video}", CODE, "in a pipeline into `bash`"),
    ("bash <<<{prompt}; run {video}", CODE, "input of `bash`"),
    ("{prompt} M1; run {video}", "touch", "names its program"),
    ("exec {prompt} M1 {video}", "touch", "names its program"),
    ("x=$(echo {prompt}); $x M1; run {video}", "touch", "in an assignment"),
    ("f() {{ eval \"$1\"; }}; f {prompt}; run {video}", CODE, "a function or alias of the template"),
    ("$BASH -c {prompt}; run {video}", CODE, "a program chosen at run time"),
]

NOT_DEMONSTRATED = [  # no ssh host, su or sudo here: refused all the same
    ("ssh host run {prompt} {video}", "with `ssh`"),
    ("su -c {prompt} nobody; run {video}", "with `su`"),
    ("sudo sh -c {prompt}; run {video}", "with `sudo`"),
    ("xargs run {prompt} < list; run {video}", "with `xargs`"),
    ("watch -n 1 run {prompt} {video}", "with `watch`"),
    ("source {prompt}; run {video}", "an argument of `source`"),
    (". {prompt}; run {video}", "an argument of `.`"),
    ("zsh -c {prompt}; run {video}", "gives `zsh` inline code"),
    ("sh -c 'run \"$1\"' _ {prompt} {video}", "gives `sh` inline code"),
    ("python -m {prompt} {video}", "the program `python` -m runs"),
    ("bash {prompt} {video}", "takes its options and program"),
]

ACCEPTED = [  # placeholders as arguments of a program that does not evaluate them
    "python -m worldmemory.worldmembench.still_model --request {request}",
    "conda run -n mymodel python /opt/mymodel/generate.py --request {request}",  # docs/external-models.md
    "bash run.sh --prompt {prompt} {video}",  # a value after the script is the script's argument
    "timeout 600 python gen.py {prompt} {video}",
    "env A=1 nice -n 5 python gen.py --prompt={prompt} {video}",
    "if [ {prompt} = lit ] && [ -n {width} ]; then run {video}; fi",  # test: strings, no -v
    "[ {width} -gt 3 ] && run {video}",  # test's -gt reads decimal integers only
    "for i in {prompt}; do run {video}; done",
    "python gen.py {request} 2>&1 | tee log",
    "printf '%s' {prompt} > {video}.prompt && run {request}",
    'run "$(cat {prompt_file})" {video}',
]


def run_bash(command: str, cwd: Path) -> None:
    subprocess.run(["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=10, env={**os.environ, "PATH": f"{cwd}:{os.environ['PATH']}"})


def stubs(directory: Path) -> None:
    """`run` and `python` that do nothing, so that a whole template runs in milliseconds."""
    for name in ("run", "python"):
        (directory / name).write_text("#!/bin/sh\nexit 0\n")
        (directory / name).chmod(0o755)


def test_the_issues_reproduction_runs_code_without_the_check_and_is_refused_with_it(tmp_path):
    stubs(tmp_path)
    command = render(ISSUE, {"prompt": SUBSCRIPT, "request": str(tmp_path / "request.json")})
    assert command.startswith("[[ 'a[$(touch M1)]' -eq 0 ]]; python -m")  # one quoted word...
    run_bash(command, tmp_path)
    assert (tmp_path / "M1").exists()  # ...which [[ evaluates as arithmetic: the value ran
    assert quoting_problem(ISSUE) is None  # the quoting check alone let it through
    with pytest.raises(ValueError) as e:
        check_template(ISSUE, PLACEHOLDERS)
    message = str(e.value)
    assert message.startswith(f"command template {ISSUE!r}: placeholder {{prompt}} is inside [[")
    assert "evaluated a second time" in message and "a[$(cmd)] would run cmd" in message
    assert "read the value from the file {request} or {prompt_file}" in message


@pytest.mark.parametrize("template, value, where", DANGEROUS)
def test_each_evaluating_position_runs_the_value_in_bash_and_is_refused(template, value, where,
                                                                       tmp_path):
    stubs(tmp_path)
    assert quoting_problem(template) is None
    run_bash(render(template, {"prompt": value, "video": "v.mp4", "request": "r.json"}), tmp_path)
    assert (tmp_path / "M1").exists(), "bash did not run the value: the refusal is not needed"
    assert where in evaluation_problem(template)[1]
    with pytest.raises(ValueError, match=r"placeholder \{prompt\} is .*evaluated a second time"):
        check_template(template, PLACEHOLDERS)


@pytest.mark.parametrize("template, where", NOT_DEMONSTRATED)
def test_programs_that_hand_their_words_to_a_shell_are_refused(template, where):
    assert quoting_problem(template) is None
    assert evaluation_problem(template)[0] == "prompt" and where in evaluation_problem(template)[1]


@pytest.mark.parametrize("template", ACCEPTED)
def test_values_as_plain_arguments_stay_accepted(template):
    assert evaluation_problem(template) is None
    check_template(template, PLACEHOLDERS)


def test_an_external_estimators_template_gets_the_same_check():
    with pytest.raises(ValueError, match=r"\{video\} is an argument of `eval`.*open the file it names"):
        check_template("eval da3 --video {video} --out {out}", ("video", "intrinsics", "out"), ("out",))


@pytest.mark.parametrize("study, key, command", [
    ("worldmembench", "models.mine.command", ISSUE),
    ("persistbench", "models.mine.command", "bash -c {request}"),
    ("worldmembench", "perception.camera.command", "let n={video}; da3 {video} {out}"),
])
def test_the_config_check_names_the_key(study, key, command):
    config = yaml.safe_load((REPO / "tests" / "config" / f"tiny_{study}.yaml").read_text())
    validate(config, str(REPO / "config" / "schemas" / "config.schema.yaml"), set_default=True)
    if key.startswith("models"):
        config[study]["models"]["mine"] = {"kind": "external", "command": command}
    else:
        config[study]["perception"]["camera"] = {"backend": "external-command", "command": command}
    with pytest.raises(ValueError) as e:
        check_config(config)
    assert f"{study}.{key}: command template {command!r}: placeholder" in str(e.value)
    assert "evaluated a second time" in str(e.value)


EVALUATING = ["[[ ", " ]]", " -eq 0", "let ", "eval ", "bash -c ", "sh ", "declare -i n=", "a[", "]",
              "=", "n", "| bash", "| xargs sh -c", "printf -v ", "test -v ", "[ -v ", "source ",
              "exec ", "$(", ")", " M2", "echo ", "run ", ";", " ", " ", "\n", "{prompt}", "{prompt}"]
VALUES = ("a[$(touch M3)]", "touch M4", "touch", "-c", "./M5")


def test_no_accepted_template_with_evaluating_fragments_runs_a_value(tmp_path):
    """Random templates from evaluating shell fragments; each one the check accepts is run by bash
    with values that are code, arithmetic with a command substitution, a program name and an
    option: no marker file may appear (`./M5` is a script that would make one)."""
    stubs(tmp_path)
    (tmp_path / "M5").write_text("touch M6\n")
    rng = random.Random(1)
    accepted = refused = 0
    for _ in range(2500):
        template = "".join(rng.choice(EVALUATING) for _ in range(rng.randint(2, 7)))
        try:
            if not any(name for _, name, _, _ in string.Formatter().parse(template)):
                continue
        except ValueError:
            continue
        if quoting_problem(template) is not None:
            continue
        if evaluation_problem(template) is not None:
            refused += 1
            continue
        accepted += 1
        for value in VALUES:
            run_bash(render(template, {"prompt": value}), tmp_path)
            assert not list(tmp_path.glob("M[2-46]")), f"{template!r} ran {value!r}"
    assert accepted > 80 and refused > 500, (accepted, refused)
