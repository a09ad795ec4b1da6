"""Command templates: which placeholders a template may use, and where it may put them.

A value is substituted shell-quoted (one word in single quotes, ``'...'``), which keeps a prompt
like ``$(rm -rf ~)`` inert only where the shell reads that quoting: in a plain, unquoted word.
Inside ``"..."``, ``'...'``, ``$'...'``, backticks, ``${...}``, arithmetic, a comment or after a
backslash the quotes become literal text (or the value's own backslashes are interpreted) and the
value runs as shell code. So check_template scans the template's literal text with a small model
of bash's quoting and refuses a placeholder anywhere but in an unquoted word (``$(...)`` starts a
fresh unquoted context, even inside double quotes). Where the model cannot follow bash (a
here-document, ``case`` inside ``$(...)``, quotes inside ``${...}`` or arithmetic) it fails
closed: every later placeholder is refused. Then worldmemory.external.evaluated refuses the
unquoted words that bash or a program evaluates a second time (arithmetic, eval, bash -c, ...).
The literal text comes from string.Formatter, the parser str.format itself uses, so ``{{`` and
``}}`` (literal braces) are never taken for placeholders.
"""

from __future__ import annotations

import string

UNQUOTED = ("top", "$(")  # frames whose words the shell splits and unquotes itself
WHERE = {"'": "inside single quotes ('...')", '"': 'inside double quotes ("...")',
         "$'": "inside $'...'", "`": "inside backticks (`...`)",
         "${": "inside a parameter expansion ${...}", "((": "inside arithmetic ((...))"}
LITERAL = (", where the value's own quoting is literal text, so a value holding $(...), a "
           "backtick or a quote would run as shell code")


def check_template(template: str, placeholders: tuple[str, ...],
                   outputs: tuple[str, ...] = ("video", "request")) -> None:
    """Raise ValueError unless ``template`` uses only ``placeholders``, each in an unquoted word
    that nothing evaluates again (see the module docstrings), and passes one of ``outputs``: for
    a world model {video} (where to write) or {request} (holding it); for an external estimator
    {out}."""
    fields = _parse(template)
    names = {name for _, name, _, _ in fields if name is not None}
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
                             f"spec, which would rewrite the shell-quoted value; write {{{name}}}")
    problem = quoting_problem(template)
    if problem:
        name, where = problem
        raise ValueError(
            f"command template {template!r}: placeholder {{{name}}} is {where}. Values are "
            f"substituted shell-quoted as one word ('...'), which is safe only in a plain, "
            f"unquoted word: write e.g. `--{name}={{{name}}}` or `echo {name}={{{name}}}`, not "
            f"`\"--{name}={{{name}}}\"` (the value arrives as one word, spaces and all), or let "
            f"the model read the value from a file ({{request}} holds every value)")
    problem = _evaluation_problem(template)
    if problem:
        name, where = problem
        files = " or ".join(f"{{{f}}}" for f in ("request", "prompt_file") if f in placeholders)
        source = (f"read the value from the file {files} ({{request}}: request.json, which holds "
                  f"every value)" if files else "open the file it names")
        raise ValueError(
            f"command template {template!r}: placeholder {{{name}}} is {where}. There the value "
            f"would be evaluated a second time after its quotes are removed, so a value such as "
            f"a[$(cmd)] would run cmd. Pass it only as an argument of your own program, after "
            f"the program's name (`my-model --{name} {{{name}}}`), and let the program {source} "
            f"rather than handing it to the shell again")
    if not names & set(outputs):
        where = ("{video} (the output path) or {request} (request.json, which holds it)"
                 if outputs == ("video", "request")
                 else " or ".join(f"{{{o}}}" for o in outputs) + " (the output path)")
        raise ValueError(f"command template {template!r} must pass {where}")


def _evaluation_problem(template: str) -> tuple[str, str] | None:
    from worldmemory.external.evaluated import evaluation_problem  # it builds on _Scanner

    return evaluation_problem(template)


def render(template: str, values: dict) -> str:
    """The command: ``template`` with each placeholder replaced by its value in single quotes.
    Always quoted, unlike shlex.quote, which leaves e.g. ``a,b`` bare: in ``x{{{prompt}}}`` the
    shell would brace-expand that into two words."""
    return template.format(**{key: quote(str(value)) for key, value in values.items()})


def quote(value: str) -> str:
    """``value`` as one shell word: in single quotes, each ' written as '"'"'."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def quoting_problem(template: str) -> tuple[str, str] | None:
    """(placeholder, where it is) for the first placeholder outside an unquoted word, or None."""
    scanner = _Scanner()
    for literal, name, _, _ in _parse(template):
        scanner.feed(literal)
        if name is not None:
            where = scanner.placeholder()
            if where:
                return name, where
    return None


def _parse(template: str) -> list[tuple]:
    try:
        return list(string.Formatter().parse(template))
    except ValueError as e:
        raise ValueError(f"command template {template!r}: {e} (write {{{{ and }}}} for a literal "
                         f"brace)") from e


class _Scanner:
    """Bash's quoting state along the template's literal text: a stack of frames (top, "$(",
    quotes, backticks, ${...}, arithmetic, comment), with paren/brace depth per frame."""

    def __init__(self):
        self.stack = [["top", 0]]
        self.escaped = False  # a backslash waits for its character
        self.dollar = False  # the last character was an unescaped $
        self.word_start = True
        self.uncertain = None  # the construct after which the model stops following bash

    def placeholder(self) -> str | None:
        """Where a placeholder at this point is, if that is unsafe; then it is one quoted word."""
        kind = self.stack[-1][0]
        if self.uncertain:
            where = (f"after {self.uncertain}, which this check cannot follow (move such shell "
                     f"code into a script)")
        elif kind == "#":
            where = "in a comment, which a newline in the value would end, running the rest"
        elif kind not in UNQUOTED:
            where = WHERE[kind] + LITERAL
        elif self.escaped:
            where = "right after a backslash, which would escape the value's opening quote"
        elif self.dollar:
            where = ("right after a $, which turns the value's quoting into $'...', where its "
                     "backslashes are interpreted")
        else:
            where = None
        self.dollar = self.word_start = self.escaped = False
        return where

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text) and not self.uncertain:
            i = self._step(text, i)

    def _step(self, text: str, i: int) -> int:
        """Consume the construct at text[i]; return the next index."""
        c, rest = text[i], text[i:]
        frame = self.stack[-1]
        kind = frame[0]
        dollar, self.dollar = self.dollar, False
        if self.escaped:
            self.escaped = self.word_start = False
            return i + 1
        if kind == "'":
            if c == "'":
                self.stack.pop()
        elif kind == "#":
            if c == "\n":
                self.stack.pop()
                self.word_start = True
        elif kind in ("$'", "`"):
            if c == "\\":
                self.escaped = True
            elif c == ("`" if kind == "`" else "'"):
                self.stack.pop()
        elif kind in ("${", "(("):
            opener, closer = ("{", "}") if kind == "${" else ("(", ")")
            if c in "'\"`\\":
                self.uncertain = f"a quote or backslash inside {kind}...{closer}"
            elif c == opener:
                frame[1] += 1
            elif c == closer:
                frame[1] -= 1
                if frame[1] == 0:
                    self.stack.pop()
        elif kind == '"':
            if c == "\\":
                self.escaped = True
            elif c == '"':
                self.stack.pop()
            else:
                return self._substitution(rest, i, dollar)
        else:  # unquoted: top or $(
            return self._unquoted(text, i, dollar)
        return i + 1

    def _substitution(self, rest: str, i: int, dollar: bool) -> int:
        """$'...', $((...)), $(...), ${...}, $[...] and backticks: their frames, or a plain char."""
        if rest.startswith("`"):
            self.stack.append(["`", 0])
        elif rest.startswith("$(("):
            self.stack.append(["((", 2])
            return i + 3
        elif rest.startswith("$("):
            self.stack.append(["$(", 0])
            self.word_start = True
            return i + 2
        elif rest.startswith("${"):
            self.stack.append(["${", 1])
            return i + 2
        elif rest.startswith("$["):
            self.uncertain = "$[...] arithmetic"
        elif rest.startswith("$"):
            self.dollar = not dollar
        return i + 1

    def _unquoted(self, text: str, i: int, dollar: bool) -> int:
        c, rest = text[i], text[i:]
        frame = self.stack[-1]
        word_start, self.word_start = self.word_start, False
        if c == "\\":
            self.escaped = True
        elif c == "'":
            self.stack.append(["$'" if dollar else "'", 0])
        elif c == '"':
            self.stack.append(['"', 0])
        elif c == "#" and word_start:
            self.stack.append(["#", 0])
        elif rest.startswith("<<<"):  # a here-string: its word is an ordinary word
            self.word_start = True
            return i + 3
        elif rest.startswith("<<"):
            self.uncertain = "a here-document (<<)"
        elif rest.startswith("(("):
            self.stack.append(["((", 2])
            return i + 2
        elif c == "(":
            frame[1] += 1
            self.word_start = True
        elif c == ")":
            if frame[1]:
                frame[1] -= 1
            elif frame[0] == "$(":
                self.stack.pop()
            self.word_start = True
        elif word_start and frame[0] == "$(" and rest.startswith("case") and rest[4:5].isspace():
            self.uncertain = "`case` inside $(...)"
        elif c.isspace() or c in ";&|<>":
            self.word_start = True
        else:
            return self._substitution(rest, i, dollar)
        return i + 1
