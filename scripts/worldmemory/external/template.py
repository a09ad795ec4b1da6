"""Command templates: placeholders stand only for values the workflow makes, each a safe word.

A template is the config's own text; what fills its placeholders is the workflow's: paths it chose
under results/ (or a temporary directory), integers and frame rates, and ids it checked
(common.ids). Each value is checked when the command is rendered against SAFE: letters, digits
and ``._/+-``, not starting with ``-``. No bash context gives those characters a meaning (no
whitespace, quote, ``$``, backtick, backslash, glob, brace, ``~``, ``;``, ``|``, ``&``, ``<``,
``>``, ``(``, ``[``), so a value is one literal word wherever the template puts it (in quotes or
not, in arithmetic, after ``eval``) and never reads as an option. Values are therefore
substituted as they are: quoting them would put literal quotes into ``"--out={video}"``.

Free text (a case's prompt) is never a placeholder: it is in request.json and in a file of the
request folder (``{prompt_file}``), which the command reads. Where a rendered value is not safe
(a working directory whose path holds a space), the command is refused there, naming the
placeholder, the value and the fix; nothing runs. This replaces a model of bash's quoting and a
list of forms that bash evaluates twice, which each new form could bypass.
"""

from __future__ import annotations

import re
import string

from worldmemory.common.ids import shown

SAFE = re.compile(r"[A-Za-z0-9._/+][A-Za-z0-9._/+-]*")
SAFE_RULE = "letters, digits and . _ / + -, not starting with -"
# placeholders that once stood for free text: the replacement a template uses instead
FREE_TEXT = {"prompt": ("prompt_file", "{prompt_file} (prompt.txt, the prompt as a file) or the "
                                        "\"prompt\" of {request} (request.json)")}


def check_template(template: str, placeholders: tuple[str, ...],
                   outputs: tuple[str, ...] = ("video", "request")) -> None:
    """Raise ValueError unless ``template`` uses only ``placeholders``, without conversions or
    format specs, and passes one of ``outputs``: for a world model {video} (where to write) or
    {request} (holding it); for an external estimator {out}."""
    fields = _parse(template)
    names = {name for _, name, _, _ in fields if name is not None}
    for name in sorted(names - set(placeholders)):
        if name in FREE_TEXT and FREE_TEXT[name][0] in placeholders:
            raise ValueError(f"command template {template!r}: {{{name}}} is free text, which never "
                             f"reaches a command line; use {FREE_TEXT[name][1]} and let the command "
                             f"read it from there (docs/external-models.md)")
    unknown = sorted(names - set(placeholders))
    if unknown:
        raise ValueError(f"command template {template!r} uses unknown placeholders {unknown}; "
                         f"valid: {', '.join(placeholders)} (write {{{{ and }}}} for a literal "
                         f"brace)")
    for _, name, spec, conversion in fields:
        if name is not None and (spec or conversion):
            field = "{" + name + (f"!{conversion}" if conversion else "")
            field += (f":{spec}" if spec else "") + "}"
            raise ValueError(f"command template {template!r}: {field} has a conversion or format "
                             f"spec, which would rewrite the value; write {{{name}}}")
    if not names & set(outputs):
        where = ("{video} (the output path) or {request} (request.json, which holds it)"
                 if outputs == ("video", "request")
                 else " or ".join(f"{{{o}}}" for o in outputs) + " (the output path)")
        raise ValueError(f"command template {template!r} must pass {where}")


def render(template: str, values: dict) -> str:
    """The command: ``template`` with each placeholder it uses replaced by its value, which must
    be a safe word (module docstring); ValueError naming the placeholder and the fix otherwise."""
    used = {name for _, name, _, _ in _parse(template) if name is not None}
    for name in sorted(used):
        safe_word(name, values[name])
    return template.format(**{name: str(values[name]) for name in used})


def safe_word(name: str, value: object) -> str:
    """``str(value)`` if it is a safe word; otherwise ValueError naming placeholder ``name``."""
    text = str(value)
    if not SAFE.fullmatch(text):
        raise ValueError(
            f"placeholder {{{name}}} would be {shown(text, 300)}, which is not a safe word ({SAFE_RULE}); "
            f"nothing was run. Paths are absolute: run the workflow from a directory whose path "
            f"holds only those characters (and, for an external estimator, a TMPDIR likewise)")
    return text


def _parse(template: str) -> list[tuple]:
    try:
        return list(string.Formatter().parse(template))
    except ValueError as e:
        raise ValueError(f"command template {template!r}: {e} (write {{{{ and }}}} for a literal "
                         f"brace)") from e
