"""Command templates (worldmemory.external.template): where a placeholder may stand, with known
answers, and checked against bash itself: no template the check accepts lets a hostile value run."""

import random
import string
import subprocess

import pytest
from worldmemory.external import check_template, quoting_problem, render

PLACEHOLDERS = ("request", "video", "prompt", "prompt_file", "width")

ACCEPTED = [
    "python gen.py --request {request}",
    "python gen.py --prompt={prompt} --out {video}",
    "cd /opt && run {video}",
    "echo '{{literal}}' {video}",  # {{ }}: literal braces, inside quotes or not
    'echo "{{" {prompt} "}}" {video}',
    "run '{{' {prompt} '}}' {video}",
    'run --x "a b" {video}',
    "run $'a\\'b' {video}",  # an escaped quote inside $'...' does not end it
    'run "$(cat {prompt_file})" {video}',  # $(...) is a fresh unquoted context, even in "..."
    "run <<<{prompt} {video}",
    "printf '%s' {prompt} > {video}.prompt",
    "run ${{HOME}}/x {video}",
    "run \\\\{video}",  # an escaped backslash, then the word
    "run $$ {video}",
    "run a#b {video}",  # '#' inside a word starts no comment
    "run {video} # done",
    "(cd /opt && run {video})",
    "run $(( 1 + 2 )) {video}",
]

REFUSED = [  # (template, where the first unsafe placeholder is)
    ('echo "{prompt}" {video}', "prompt", "inside double quotes"),
    ("echo '{prompt}' {video}", "prompt", "inside single quotes"),
    ('echo "prompt={prompt}" {video}', "prompt", "inside double quotes"),
    ('run "--out={video}"', "video", "inside double quotes"),
    ("run $'{video}'", "video", "inside $'...'"),
    ("run \\{video}", "video", "after a backslash"),
    ("run ${prompt} {video}", "prompt", "after a $"),
    ("run {video} # {prompt}", "prompt", "in a comment"),
    ("x=`echo {prompt}` {video}", "prompt", "inside backticks"),
    ("run $(( {width} + 1 )) {video}", "width", "inside arithmetic"),
    ('run "${{x:-{prompt}}}" {video}', "prompt", "inside a parameter expansion"),
    ("cat <<E\n{prompt}\nE\nrun {video}", "prompt", "after a here-document"),
    ('run "$(echo "{prompt}")" {video}', "prompt", "inside double quotes"),
    ("run \"a ' {prompt}\" {video}", "prompt", "inside double quotes"),
    ("run 'a \" {prompt}' {video}", "prompt", "inside single quotes"),
    ('run "{{{prompt}}}" {video}', "prompt", "inside double quotes"),  # {{ then a placeholder
    ("run '{{{prompt}' {video}", "prompt", "inside single quotes"),
    ("x=$(case a in a) echo {prompt};; esac) {video}", "prompt", "after `case` inside $(...)"),
    ('echo "$(case x in x) echo " {prompt} ";; esac)" {video}', "prompt", "after `case`"),
    ('run {video} "', None, None),  # unterminated quote after the last placeholder: bash's error
]


@pytest.mark.parametrize("template", ACCEPTED)
def test_placeholders_in_plain_words_are_accepted(template):
    assert quoting_problem(template) is None
    check_template(template, PLACEHOLDERS)


@pytest.mark.parametrize("template, name, where", REFUSED)
def test_placeholders_inside_quotes_are_refused_with_the_fix(template, name, where):
    problem = quoting_problem(template)
    if name is None:
        assert problem is None
        return
    assert problem[0] == name and where in problem[1]
    with pytest.raises(ValueError) as e:
        check_template(template, PLACEHOLDERS)
    message = str(e.value)
    assert repr(template) in message and f"placeholder {{{name}}} is " in message
    assert f"`--{name}={{{name}}}`" in message and "one word" in message


def test_the_message_explains_why_and_gives_the_correct_form():
    with pytest.raises(ValueError) as e:
        check_template('echo "prompt={prompt}" > {video}', PLACEHOLDERS)
    assert str(e.value) == (
        "command template 'echo \"prompt={prompt}\" > {video}': placeholder {prompt} is inside "
        "double quotes (\"...\"), where the value's own quoting is literal text, so a value "
        "holding $(...), a backtick or a quote would run as shell code. Values are substituted "
        "shell-quoted as one word ('...'), which is safe only in a plain, unquoted word: write "
        "e.g. `--prompt={prompt}` or `echo prompt={prompt}`, not `\"--prompt={prompt}\"` (the "
        "value arrives as one word, spaces and all), or let the model read the value from a file "
        "({request} holds every value)")


@pytest.mark.parametrize("template, message", [
    ("run {prompt!r} {video}", r"\{prompt!r\} has a conversion or format spec"),
    ("run {video:>20}", r"\{video:>20\} has a conversion or format spec"),
    ("awk '{print}' {video}", r"unknown placeholders \['print'\].*\{\{ and \}\}"),
    ("run {video", r"expected '\}'.*\{\{ and \}\}"),
])
def test_other_template_mistakes_are_refused(template, message):
    with pytest.raises(ValueError, match=message):
        check_template(template, PLACEHOLDERS)


HOSTILE = ("a'b\"c$(touch M1)`touch M2`\ntouch M3\n; touch M4 #\\",
           "\\'$(touch M5)\" #")  # after a $: $'\'"'"'$(touch M5)" #' runs touch
FRAGMENTS = ["echo ", "printf %s ", " ", " ", "x", "=", ";", "\n", "'", "'", '"', '"', "\\", "$",
             "$'", "$(", "$((", "(", ")", "`", "${{x:-", "}}", "{{", "#", "<<E\n", "\nE\n",
             "<<<", "case x in x) ", ";; esac", "\\'", "{prompt}", "{prompt}", "{prompt}"]


def test_no_accepted_template_lets_a_hostile_value_run(tmp_path):
    """Random templates from shell fragments; each one the check accepts is run by bash with
    values that try every way out of their quoting: no marker file may appear."""
    rng = random.Random(0)
    accepted = 0
    for _ in range(4000):
        template = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 9))) + " {{}}"
        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(template) if name]
        except ValueError:  # not a valid format string
            continue
        if not fields or quoting_problem(template) is not None:
            continue
        accepted += 1
        for value in HOSTILE:
            command = render(template, {"prompt": value})
            subprocess.run(["bash", "-c", command], cwd=tmp_path, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
            assert not any(tmp_path.glob("M*")), f"{template!r} ran the value: {command!r}"
    assert accepted > 300


@pytest.mark.parametrize("template", [
    'echo "{prompt}"', "echo '{prompt}'", "echo ${prompt}", "echo x # {prompt}",
    "echo \\{prompt}", "echo `echo {prompt}`", "echo $'{prompt}'", 'echo "${{x:-{prompt}}}"',
    "echo $(( {prompt} ))", "cat <<E\n{prompt}\nE", 'echo "$(echo " {prompt} ")"',
    'echo "$(case x in x) echo " {prompt} ";; esac)"',
])
def test_each_refused_form_really_runs_a_hostile_value(template, tmp_path):
    """The refusals are not caution: bash runs one of the values' commands in every one."""
    assert quoting_problem(template)[0] == "prompt"
    for value in HOSTILE:
        subprocess.run(["bash", "-c", render(template, {"prompt": value})], cwd=tmp_path,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    assert any(tmp_path.glob("M*"))
