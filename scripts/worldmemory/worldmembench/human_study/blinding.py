"""Blinding of the human study's pages (Appendix F): which texts would name a model. The page
build refuses a study set whose free texts (an instance's event, its questions) name a model of
its key (pages.py); the config check refuses, before any job, a human-study model named by a word
of the embedded cases' texts, which every dynamic page shows (workflow/config_checks.py). The
pages' own words (static, reference, clip, media, A, B) are never checked: they are the same for
every model, so a model may be named any of them. Kept light: the config check imports it."""

from __future__ import annotations

import re

from worldmemory.worldmembench.cases import EVENTS


def named_in(model: str, text: str) -> bool:
    """Whether ``text`` holds the model's name as a word (any case; '-' is part of a word)."""
    return re.search(rf"(?<![\w-]){re.escape(model)}(?![\w-])", text, flags=re.IGNORECASE) is not None


def embedded_texts() -> list[str]:
    """The texts the dynamic page shows of the embedded cases (cases.EVENTS: each event's initial
    state, action, expected next state and questions)."""
    return [t for initial, action, expected, questions in EVENTS.values()
            for t in (initial, action, expected, *questions.values())]
