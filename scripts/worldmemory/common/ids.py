"""Ids that become file names: one path component, never '.' or '..', never an option.

Case, sequence and model ids name directories and files under results/ and reach command lines;
an id such as '..' or 'a/b' would write outside its study's folder, one starting with '-' would
read as an option. The config schema (model names) and the case schema use the same pattern.
"""

from __future__ import annotations

import re

ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
RULE = "letters, digits, '.', '_' and '-', starting with a letter or a digit (one path component)"


def check_id(kind: str, value: object, fix: str) -> str:
    """``value`` if it is a valid id; otherwise ValueError naming the ``kind``, the id, the rule
    and the ``fix`` (e.g. "rename the directory")."""
    if not isinstance(value, str) or not re.fullmatch(ID_PATTERN, value):
        raise ValueError(f"{kind} id {value!r} is not a valid id: use {RULE}; {fix}")
    return value
