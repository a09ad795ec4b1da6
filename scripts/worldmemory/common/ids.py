"""Ids that become file names: one path component, never '.' or '..', never an option.

Case, sequence and model ids name directories and files under results/ and reach command lines;
an id such as '..' or 'a/b' would write outside its study's folder, one starting with '-' would
read as an option. The config schema (model names) and the case schema use the same pattern.
An id has at most MAX_LENGTH characters: a file name holds at most 255 bytes, and ids are
joined with suffixes (``<model>.replay-blur-noise``, ``<case>.csv``) and with each other.

An id is also a Snakemake wildcard value, and Snakemake refuses a value that ends in one piece
repeated PERIODIC_REPEATS times or more (``m00000000000000000000``, ``ab`` twenty times) as a
sign of infinite recursion (snakemake.io.PeriodicityDetector, run by DAG.check_periodic_wildcards
while the DAG is built); check_id refuses the same ids first, naming the key. The longer values
an id becomes are refused exactly when the id is: a replay run ``<model>.replay[-<recipe>]``
ends in a suffix whose one '.' makes any repeated piece reaching into it 7 characters or more,
so 20 repeats would need 140 characters, more than the id and its suffix hold; a stress run
``stress.<name>`` takes only built-in names.

Ids equal up to case (``Omniscient`` beside ``omniscient``) are refused too (case_collisions,
in the words of same_up_to_case): on a case-insensitive file system (macOS, Windows) their results
would share one directory.
"""

from __future__ import annotations

import re
from collections import defaultdict

ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
MAX_LENGTH = 100
PERIODIC_REPEATS = 20  # snakemake.io.PeriodicityDetector's min_repeat
_PERIODIC = re.compile(rf"(.+?)\1{{{PERIODIC_REPEATS - 1},}}$")  # the detector's regex, searched
RULE = (f"letters, digits, '.', '_' and '-', starting with a letter or a digit (one path component), "
        f"at most {MAX_LENGTH} characters, not ending in one piece repeated {PERIODIC_REPEATS} times or more "
        "(Snakemake refuses such a wildcard value)")


def check_id(kind: str, value: object, fix: str) -> str:
    """``value`` if it is a valid id; otherwise ValueError naming the ``kind``, the id, the rule
    and the ``fix`` (e.g. "rename the directory")."""
    if not isinstance(value, str) or not re.fullmatch(ID_PATTERN, value) or len(value) > MAX_LENGTH:
        raise ValueError(f"{kind} id {shown(value)} is not a valid id: use {RULE}; {fix}")
    if problem := periodic(value):
        raise ValueError(f"{kind} id {shown(value)} is not a valid id: {problem}; {fix}")
    return value


def periodic(value: str) -> str | None:
    """Why Snakemake's periodic-wildcard check refuses ``value`` as a wildcard value (it ends in
    one piece repeated PERIODIC_REPEATS times or more), or None if it does not."""
    if match := _PERIODIC.search(value):
        piece, tail = match.group(1), match.group(0)
        return (f"it ends in {piece!r} repeated {len(tail) // len(piece)} times, and Snakemake refuses a wildcard "
                f"value ending in one piece repeated {PERIODIC_REPEATS} times or more (its periodic-wildcard check)")
    return None


def case_collisions(names) -> list[list[str]]:
    """The groups of distinct ``names`` (two or more each, in the given order) equal up to case,
    which share one file on a case-insensitive file system; a name given twice is no collision
    (the callers refuse repeated names with a message of their own)."""
    groups = defaultdict(dict)
    for name in names:
        groups[name.casefold()][name] = None
    return [list(group) for group in groups.values() if len(group) > 1]


def same_up_to_case(names: str, fix: str) -> str:
    """The refusal of ``names`` (shown and joined by 'and': ids, or the config keys naming them)
    that are equal up to case, with the ``fix``; every such refusal reads so."""
    return (f"{names}: equal up to case; on a case-insensitive file system (macOS, Windows) their results would "
            f"share one directory. Fix: {fix}")


def check_case_distinct(kind: str, names, fix: str) -> None:
    """ValueError naming the ``kind``'s ids equal up to case and the ``fix`` (same_up_to_case), if any are."""
    if collisions := case_collisions(names):
        raise ValueError("; ".join(same_up_to_case(f"{kind} ids {' and '.join(map(repr, group))}", fix)
                                   for group in collisions))


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error message, a long string cut to its start and its length (a
    5,000-character value would bury the message)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    return repr(value)
