"""Where bash, or the program a placeholder is handed to, evaluates the value a second time.

A shell-quoted value is one inert word for the shell's own parsing, but some positions evaluate
that word again after quote removal: arithmetic (``[[ {x} -eq 0 ]]``, ``let``, ``declare -i``,
an array subscript, where ``a[$(cmd)]`` runs cmd), builtins that take code, names or files
(``eval``, ``source``, ``read``, ``printf -v``, ``test -v``, ``trap``, ...), the program position
(``{x} args``, ``exec {x}``) and programs that hand their words to a shell (``bash -c``,
``ssh``, ``su``, ``sudo``, ``xargs``, ``watch``, ``find -exec sh``, a pipe into ``bash``).

The rule is an allow-list of positions: a placeholder may stand only in an argument, or the
target of a redirection, of a simple command whose program is a literal word, after that program
(and after its script, for a shell or interpreter), outside ``[[ ... ]]`` and assignments. Within
that, commands known to evaluate their arguments are refused (a deny-list: the model's own
program cannot be enumerated). A value carried out of ``$(...)`` counts as standing in the word
that holds the substitution. Choices: ``bash script.sh {x}`` and ``python -m mod {x}`` are
accepted (the value is an argument of the script); a shell or interpreter given inline code
(``bash -c``, ``python -c``, ``perl -e``) takes no placeholder at all, since the check does not
read code inside quotes; a command whose program is chosen at run time (``$SHELL``,
``$(which bash)``) takes none either (fail closed). What the template does with a value after it
has left its word (a variable, a file) is the template's own code and not followed.
"""

from __future__ import annotations

import os
import re

from worldmemory.external.template import UNQUOTED, _parse, _Scanner

RESERVED = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "esac"}
WRAPPERS = {"exec", "command", "builtin", "time", "coproc", "nohup", "nice", "env", "timeout",
            "stdbuf", "setsid", "ionice", "taskset", "chrt"}  # run the next non-option word
BUILTINS = {  # builtins that evaluate an argument again: what they take it as
    "eval": "shell code", "trap": "shell code", "alias": "shell code", "let": "arithmetic",
    "source": "a script to run", ".": "a script to run", "enable": "a library to load",
    "hash": "a program's path", "compgen": "words to expand (-W) or code (-C)",
    "complete": "words to expand (-W) or code (-C)",
    **dict.fromkeys(("declare", "typeset", "local", "export", "readonly"),
                    "an assignment (arithmetic with -i, a subscript, a nameref)"),
    **dict.fromkeys(("read", "unset", "mapfile", "readarray"),
                    "a variable name, whose subscript is arithmetic (mapfile -C: code)")}
NAME_OPTIONS = {"printf": ("-v",), "test": ("-v", "-R"), "[": ("-v", "-R")}  # option NAME
SPAWNERS = {"ssh", "su", "sg", "sudo", "doas", "runuser", "pkexec", "xargs", "parallel", "watch",
            "flock"}  # run their words through a shell, or build commands from them
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"}
INLINE = {**dict.fromkeys(SHELLS, "c"), "python": "c", "perl": "eE", "ruby": "e", "node": "ep",
          "nodejs": "ep", "Rscript": "e", "php": "r"}  # short options giving the code inline
INLINE_LONG = {"--eval", "--print", "--command"}
ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(\[.*\])?\+?=")
SUBSCRIPT = re.compile(r"[A-Za-z_]\w*\[")
NUMBER = re.compile(r"[\d.]+[smhd]?")  # wrapper arguments such as timeout's duration
DEFINED = re.compile(r"(?:^|[\s;&|(){}])(?:function\s+)?([\w.:-]+)\s*\(\s*\)|\bfunction\s+([\w.:-]+)"
                     r"|\balias\s+([\w.:-]+)=")


class _Word:
    def __init__(self):
        self.text = ""  # its literal characters, quotes removed
        self.dynamic = False  # holds an expansion: its text is known only at run time
        self.names = []  # placeholders in it, also those carried out of a $(...) in it
        self.prefix = {}  # placeholder -> the word's literal text before it
        self.redirect = None  # the operator, if the word is a redirection's target


class _Level:
    """The commands of one unquoted context (the template, or one $(...)): its current word,
    the words of its current simple command and the commands of its current pipeline."""

    def __init__(self, defined: set[str], parent: _Level | None = None):
        self.defined, self.parent = defined, parent
        self.word = None
        self.words = []
        self.pipeline = []  # (its first placeholder, its program reading code from stdin)
        self.redirect_pending = None  # a redirection operator waiting for its target
        self.dbracket = False  # inside [[ ... ]], where && < ( are operators of the test
        self.last = ""  # the previous character, for ||, |&, >&
        self.problems = []
        self.all_names = []

    def touch(self, dynamic: bool = False) -> _Word:
        if self.word is None:
            self.word = _Word()
            self.word.redirect = self.redirect_pending
        self.word.dynamic |= dynamic
        return self.word

    def add(self, text: str, dynamic: bool = False) -> None:
        self.touch(dynamic).text += text

    def placeholder(self, name: str, carried: bool = False) -> None:
        word = self.touch(dynamic=carried)
        if not carried:
            word.prefix[name] = word.text
        word.names.append(name)
        self.all_names.append(name)

    def end_word(self) -> None:
        word, self.word = self.word, None
        if word is None:
            return
        self.redirect_pending = None
        if word.text == "[[" and all(w.text in RESERVED for w in self.words):
            self.dbracket = True
        elif word.text == "]]":
            self.dbracket = False
        self.words.append(word)

    def unquoted(self, char: str, following: str) -> None:
        """A character (or <<<) read in this context outside any quotes or substitution."""
        last, self.last = self.last, char
        redirection = char == "<<<" or (char in ("<", ">") and not self.dbracket)
        if redirection or (char == "&" and following in ("<", ">")):
            if self.word is not None and not self.word.dynamic and self.word.text.isdigit() \
                    and not self.word.names:
                self.word = None  # 2>: the descriptor, not a word
            self.end_word()
            self.redirect_pending = self.redirect_pending or char
        elif char == "&" and last in ("<", ">", "|"):  # >&, <&, |&: part of the operator
            pass
        elif char.isspace() and char != "\n":
            self.end_word()
        elif char in ";&|()\n":
            self.end_word()
            if not self.dbracket or char == "\n":
                self.end_command("|" if char == "|" and last != "|" else ";")
        else:
            self.add(char, dynamic=char == "$")

    def end_command(self, separator: str = ";") -> None:
        self.end_word()
        words, self.words, self.dbracket, self.redirect_pending = self.words, [], False, None
        if words:
            problem = _command_problem(words, self.defined)
            if problem:
                self.problems.append(problem)
            named = [name for w in words for name in w.names]
            self.pipeline.append((named[0] if named else None, _reads_code(words)))
        if separator != "|":
            problem = _pipeline_problem(self.pipeline)
            if problem:
                self.problems.append(problem)
            self.pipeline = []


def evaluation_problem(template: str) -> tuple[str, str] | None:
    """(placeholder, where it is and why) for the first placeholder whose value bash or the
    program would evaluate a second time, or None. Assumes quoting_problem found none."""
    fields = _parse(template)
    literal = "".join(text + (" x " if name is not None else "") for text, name, _, _ in fields)
    defined = {name for match in DEFINED.finditer(literal) for name in match.groups() if name}
    scanner = _Scanner()
    levels = {id(scanner.stack[0]): _Level(defined)}
    for text, name, _, _ in fields:
        i = 0
        while i < len(text) and not scanner.uncertain:
            i = _advance(scanner, levels, text, i)
        if name is not None:
            scanner.placeholder()
            _level(scanner.stack, levels).placeholder(name)
    for frame in reversed(scanner.stack):
        if id(frame) in levels:
            _close(levels, frame)
    problems = [p for level in levels.values() for p in level.problems]  # only the top is left
    return problems[0] if problems else None


def _level(stack: list, levels: dict) -> _Level:
    return next(levels[id(f)] for f in reversed(stack) if id(f) in levels)


def _close(levels: dict, frame: list) -> None:
    """End a $(...): its last command, and its values carried into the enclosing word."""
    level = levels[id(frame)]
    level.end_command()
    if level.parent is not None:
        del levels[id(frame)]
        level.parent.problems.extend(level.problems)
        level.parent.touch(dynamic=True)
        for name in level.all_names:
            level.parent.placeholder(name, carried=True)


def _advance(scanner: _Scanner, levels: dict, text: str, i: int) -> int:
    """One step of the quoting scanner, and what it means for the words of the commands."""
    before, escaped = list(scanner.stack), scanner.escaped
    top, level = before[-1], _level(before, levels)
    j = scanner._step(text, i)
    chunk, stack = text[i:j], scanner.stack
    if len(stack) < len(before):
        if id(top) in levels:
            _close(levels, top)
        elif top[0] == "#":
            level.unquoted("\n", "")
    elif len(stack) > len(before):
        kind = stack[-1][0]
        if kind == "$(":
            levels[id(stack[-1])] = _Level(level.defined, parent=level)
        if kind != "#":
            level.touch(dynamic=kind not in ("'", '"', "$'"))
        else:
            level.end_word()
    elif escaped and top[0] in (*UNQUOTED, '"'):
        level.add("" if chunk == "\n" else chunk)  # a backslash-newline joins the lines
    elif chunk == "\\" and top[0] in (*UNQUOTED, '"'):
        pass  # the escape itself is no character of the word
    elif top[0] in UNQUOTED:
        level.unquoted(chunk, text[j:j + 1])
    elif top[0] in ("'", '"', "$'"):
        level.add(chunk, dynamic=top[0] == '"' and chunk == "$")
    return j


def _command_problem(words: list[_Word], defined: set[str]) -> tuple[str, str] | None:
    """The first placeholder of one simple command that stands where it is evaluated again."""
    if not any(w.names for w in words):
        return None
    args = [w for w in words if w.redirect is None]
    first = next(w.names[0] for w in words if w.names)
    for word in words:
        for name, prefix in word.prefix.items():
            if SUBSCRIPT.match(prefix):
                return name, ("in an array subscript (`name[...]`), which bash evaluates as "
                              "arithmetic wherever the word names a variable")
    k = 0
    while k < len(args) and args[k].text in RESERVED and not args[k].dynamic:
        k += 1
    if k < len(args) and args[k].text == "[[":
        inside = next((w.names[0] for w in args[k:] if w.names), None)
        closing = next((i for i, w in enumerate(args[k:]) if w.text == "]]"), len(args))
        if inside and any(w.names for w in args[k:k + closing]):
            return inside, ("inside [[ ... ]], whose -eq/-ne/-lt/-le/-gt/-ge operands are "
                            "arithmetic and whose -v evaluates a subscript")
    if k < len(args) and args[k].text in ("for", "select", "case"):
        return None  # the word list is data; a variable name refuses a value
    while k < len(args) and ASSIGNMENT.match(args[k].text):
        if args[k].names:
            return args[k].names[0], ("in an assignment, which bash evaluates as arithmetic for "
                                      "an integer variable (declare -i) or an array element")
        k += 1
    program, k, problem = _program(args, k)
    if problem or program is None:
        return problem
    if program in defined:
        return first, (f"an argument of `{program}`, a function or alias of the template, whose "
                       f"body this check does not follow")
    if program in BUILTINS:
        return first, (f"an argument of `{program}`, which takes it as {BUILTINS[program]}")
    if program in NAME_OPTIONS:
        problem = _name_option(program, args[k + 1:])
        if problem:
            return problem
    for word in args[k:]:
        name = os.path.basename(word.text)
        if name in SPAWNERS and not word.dynamic:
            return first, (f"in a command with `{name}`, which hands its words to a shell or "
                           f"builds commands from them")
    if program == "find":
        for i, word in enumerate(args[k:-1], k):
            if word.text in ("-exec", "-execdir", "-ok", "-okdir") and args[i + 1].names:
                return args[i + 1].names[0], f"the program of find's {word.text}, which it runs"
    for i in range(k, len(args)):
        problem = _interpreter(words, args, i, first)
        if problem:
            return problem
    return None


def _program(args: list[_Word], k: int) -> tuple[str | None, int, tuple | None]:
    """(the program's name, its index, None), through wrappers such as exec or timeout; or a
    problem when a placeholder or a run-time expansion stands where the program is named."""
    named = next((w.names[0] for w in args if w.names), None)
    while k < len(args):
        word = args[k]
        if word.names:
            return None, k, (word.names[0], "where the command names its program, so the value "
                             "would choose the program to run")
        if word.dynamic:
            return None, k, named and (named, (
                f"an argument of a program chosen at run time ({word.text or '$...'}), which "
                f"this check cannot tell from one that evaluates its arguments"))
        name = os.path.basename(word.text)
        if name not in WRAPPERS:
            return name, k, None
        k += 1
        while k < len(args) and not args[k].names and not args[k].dynamic and (
                args[k].text.startswith("-") or NUMBER.fullmatch(args[k].text)
                or (name == "env" and ASSIGNMENT.match(args[k].text))):
            k += 1
    return None, k, None


def _name_option(program: str, rest: list[_Word]) -> tuple[str, str] | None:
    """printf -v NAME, test -v NAME: a value where a variable name may stand (after the option,
    or after another value, which may itself be the option)."""
    options = NAME_OPTIONS[program]
    previous = None
    for word in rest:
        prefix = next(iter(word.prefix.values()), "")
        if word.names and (prefix.startswith(options) or (previous is not None and (
                previous.names or previous.text in options))):
            return word.names[0], (f"where `{program}` may read it as a variable name "
                                   f"({' / '.join(options)} NAME), whose subscript is arithmetic")
        previous = word
    return None


def _interpreter_name(word: _Word) -> str | None:
    name = os.path.basename(word.text)
    name = "python" if re.fullmatch(r"python[\d.]*", name) else name
    return name if name in INLINE and not word.dynamic else None


def _interpreter(words: list[_Word], args: list[_Word], k: int, first: str):
    """A shell or interpreter at args[k]: no placeholder in inline code or before its script."""
    name = _interpreter_name(args[k])
    if name is None:
        return None
    for i in range(k + 1, len(args)):
        word = args[i]
        if word.names:
            return word.names[0], (f"where `{name}` takes its options and program, so the value "
                                   f"would be its code or choose its script")
        text = word.text
        if text in INLINE_LONG or (re.fullmatch(r"-[A-Za-z]+", text) and set(text[1:]) & set(INLINE[name])):
            return first, (f"in a command that gives `{name}` inline code ({text} ...), to which "
                           f"its arguments are handed and which this check does not read")
        if (text == "-m" and name == "python") or text == "--":
            if i + 1 < len(args) and args[i + 1].names:
                return args[i + 1].names[0], f"the program `{name}` {text} runs"
            return None
        if not text.startswith("-") or word.dynamic:
            return None
    redirected = next((w.names[0] for w in words if w.redirect in ("<", "<<<") and w.names), None)
    if redirected:
        return redirected, f"input of `{name}`, which reads its program from standard input"
    return None


def _reads_code(words: list[_Word]) -> str | None:
    """The program of this command that takes its standard input as code, if any."""
    args = [w for w in words if w.redirect is None]
    for k, word in enumerate(args):
        name = os.path.basename(word.text)
        if name in SPAWNERS - {"watch", "flock", "pkexec"} and not word.dynamic:
            return name
        interpreter = _interpreter_name(word)
        if interpreter and all(w.text.startswith("-") and not w.names for w in args[k + 1:]):
            if not any(set(w.text[1:]) & set(INLINE[interpreter]) for w in args[k + 1:]):
                return interpreter
    return None


def _pipeline_problem(pipeline: list) -> tuple[str, str] | None:
    """A value piped into a program that reads its input as code (bash, xargs sh -c, ...)."""
    for i, (name, _) in enumerate(pipeline):
        reader = next((reads for _, reads in pipeline[i + 1:] if reads), None)
        if name and reader:
            return name, (f"in a pipeline into `{reader}`, which takes its input as code or "
                          f"builds commands from it")
    return None
