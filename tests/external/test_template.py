"""Command templates (worldmemory.external.template): which placeholders a template may use, and
that what fills them is a safe word, checked against bash itself: in every context a template can
put it, a safe value is one literal word, and an unsafe one is refused before anything runs."""

import random
import subprocess

import pytest
from worldmemory.external import check_template, render
from worldmemory.external.template import FREE_TEXT, SAFE, safe_word

PLACEHOLDERS = ("request", "video", "prompt_file", "width")

ACCEPTED = [
    "python gen.py --request {request}",
    "cd /opt && run {video}",
    "echo '{{literal}}' {video}",  # {{ }}: literal braces
    'run "--out={video}" --width={width}',  # quotes are the template's own: safe words need none
    "run '{video}'",
    'run --prompt "$(cat {prompt_file})" {video}',
    "bash -c 'run \"$1\"' _ {video}",
]


@pytest.mark.parametrize("template", ACCEPTED)
def test_templates_with_known_placeholders_are_accepted(template):
    check_template(template, PLACEHOLDERS)


def test_the_free_text_placeholder_is_refused_naming_its_replacement():
    with pytest.raises(ValueError) as e:
        check_template("python gen.py --prompt={prompt} --out {video}", PLACEHOLDERS)
    assert str(e.value) == (
        "command template 'python gen.py --prompt={prompt} --out {video}': {prompt} is free text, "
        "which never reaches a command line; use {prompt_file} (prompt.txt, the prompt as a file) "
        "or the \"prompt\" of {request} (request.json) and let the command read it from there "
        "(docs/external-models.md)")
    assert set(FREE_TEXT) == {"prompt"}
    with pytest.raises(ValueError, match=r"unknown placeholders \['prompt'\]"):  # no {prompt_file} here
        check_template("render {video} --prompt {prompt}", ("video", "input_video"))


@pytest.mark.parametrize("template, message", [
    ("run {video!r}", r"\{video!r\} has a conversion or format spec"),
    ("run {video:>20}", r"\{video:>20\} has a conversion or format spec"),
    ("run {video.name}", r"unknown placeholders \['video.name'\]"),
    ("awk '{print}' {video}", r"unknown placeholders \['print'\].*\{\{ and \}\}"),
    ("run {video", r"expected '\}'.*\{\{ and \}\}"),
    ("run --width {width}", r"must pass \{video\} \(the output path\) or \{request\}"),
])
def test_other_template_mistakes_are_refused(template, message):
    with pytest.raises(ValueError, match=message):
        check_template(template, PLACEHOLDERS)


def test_values_are_substituted_as_they_are():
    assert render('run "--out={video}" --width={width} {{x}}', {"video": "/r/a-1/v.mp4", "width": 256,
                                                               "request": "unused; $(x)"}) == \
        'run "--out=/r/a-1/v.mp4" --width=256 {x}'


@pytest.mark.parametrize("value", [
    "", "a b", "$(touch M)", "`touch M`", "a;b", "a|b", "a&b", "a>b", "a'b", 'a"b', "a\\b", "a\nb",
    "~root", "a*", "a?", "a[0]", "{a,b}", "-rf", "--help", "a$b", "(a)", "a#b", "a=b", "café", "a:b",
])
def test_a_value_that_is_not_a_safe_word_is_refused_and_nothing_runs(value, tmp_path):
    with pytest.raises(ValueError) as e:
        render("touch {video}", {"video": value})
    assert str(e.value).startswith("placeholder {video} would be ") and "not a safe word" in str(e.value)
    assert "run the workflow from a directory whose path holds only those characters" in str(e.value)


def test_values_a_placeholder_does_not_use_are_not_checked():
    assert render("run {video}", {"video": "v.mp4", "width": "a b"}) == "run v.mp4"


ALPHABET = "abcXYZ0189._/+-"
# (template, what bash prints for value v): every context a value can stand in
CONTEXTS = [
    ("printf '%s\\n' {x}", "{v}"),
    ("printf '%s\\n' \"{x}\"", "{v}"),
    ("printf '%s\\n' '{x}'", "{v}"),
    ("printf '%s\\n' $'{x}'", "{v}"),
    ("printf '%s\\n' \"$(echo {x})\"", "{v}"),
    ("printf '%s\\n' `echo {x}`", "{v}"),
    ("printf '%s\\n' \"${{unset:-{x}}}\"", "{v}"),
    ("eval printf \"'%s\\n'\" {x}", "{v}"),
    ("bash -c 'printf \"%s\\n\" {x}'", "{v}"),
    ("cat <<E\n{x}\nE", "{v}"),
    ("cat <<<{x}", "{v}"),
    ("declare -a a=({x}); printf '%s\\n' \"${{a[@]}}\"", "{v}"),
    ("printf '%s\\n' x{x}", "x{v}"),
    ("printf '%s\\n' {x} # {x}", "{v}"),
]


def test_every_safe_value_is_one_literal_word_in_every_context(tmp_path):
    """Random safe words (SAFE's alphabet, never a leading '-') in each context bash has: what
    the command prints is the value itself, one word, untouched by quoting, expansion or eval."""
    rng = random.Random(0)
    values = ["+", ".", "..", "/", "a+b", "0.5", "1e-05", "/r/x.mp4", "a//b", "..."]
    while len(values) < 120:
        value = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12)))
        if not value.startswith("-"):
            values.append(value)
    for template, printed in CONTEXTS:
        for value in values:
            assert safe_word("x", value) == value and SAFE.fullmatch(value)
            out = subprocess.run(["bash", "-c", render(template, {"x": value})], cwd=tmp_path,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
            expected = printed.format(v=value)
            assert out.stdout.split() == expected.split(), (template, value, out.stdout, out.stderr)
    assert not any(tmp_path.iterdir())
