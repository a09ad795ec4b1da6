"""Ids that become file names: one path component, never '.' or '..', never an option.

Case, sequence and model ids name directories and files under results/ and reach command lines;
an id such as '..' or 'a/b' would write outside its study's folder, one starting with '-' would
read as an option. The config schema (model names) and the case schema use the same pattern.
An id has at most MAX_LENGTH characters: a file name holds at most 255 bytes, and ids are
joined with suffixes (``<model>.replay-blur-noise``, ``<case>.csv``) and with each other.
"""

from __future__ import annotations

import re

ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
MAX_LENGTH = 100
RULE = (f"letters, digits, '.', '_' and '-', starting with a letter or a digit (one path component), "
        f"at most {MAX_LENGTH} characters")


def check_id(kind: str, value: object, fix: str) -> str:
    """``value`` if it is a valid id; otherwise ValueError naming the ``kind``, the id, the rule
    and the ``fix`` (e.g. "rename the directory")."""
    if not isinstance(value, str) or not re.fullmatch(ID_PATTERN, value) or len(value) > MAX_LENGTH:
        raise ValueError(f"{kind} id {shown(value)} is not a valid id: use {RULE}; {fix}")
    return value


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error message, a long string cut to its start and its length (a
    5,000-character value would bury the message)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    return repr(value)
