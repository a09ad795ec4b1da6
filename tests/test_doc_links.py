"""Every relative link of the README and of docs/*.md leads somewhere: to a file or folder of the
repository and, where it names a #section of a Markdown page, to one of that page's headings.

A heading's anchor follows GitHub's rule (github-slugger, as github.com renders a page): the
heading's text as rendered (code spans, links and emphasis reduced to their text), lower-cased,
every character dropped but letters, marks, decimal and letter numbers, connector punctuation
('_'), '-' and spaces, each space made '-'; a
repeated anchor gets '-1', '-2', ... in page order. ``<a id=...>`` / ``name=`` anchors count too.
Links in code blocks and code spans are text, not links; web links (scheme:...) are not checked
here (no network in the test suite).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
ATX = re.compile(r"^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:id|name)=[\"']([^\"']+)[\"']", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
WORD = {"Nd", "Nl", "Pc"}  # with letters and marks: Ruby's \p{Word}, which GitHub keeps


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            lines.append((number, line))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link and image, inline or by reference, outside code."""
    found = []
    for number, line in prose(text):
        line = CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
        targets += [m.group(1) for m in REFERENCE.finditer(line)]
        found += [(number, target.strip("<>")) for target in targets]
    return found


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's Markdown text (module docstring)."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link or image: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    kept = "".join(c for c in text if c in "- " or _word(c))
    return kept.replace(" ", "-")


def _word(c: str) -> bool:
    category = unicodedata.category(c)
    return category[0] in "LM" or category in WORD


def anchors(text: str) -> set[str]:
    """The anchors a page offers: its headings' (ATX and setext) and its HTML anchors."""
    found, seen, previous = set(), {}, None
    for number, line in prose(text):
        found.update(HTML_ANCHOR.findall(line))
        heading = None
        if (match := ATX.match(line)) is not None:
            heading = match.group(1) or ""
        elif SETEXT.match(line) and previous is not None and previous[0] == number - 1 and previous[1].strip():
            heading = previous[1].strip()
        previous = (number, line)
        if heading is None:
            continue
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(page: Path, repo: Path) -> list[str]:
    """'page:line: target (why)' for every relative link of ``page`` that leads nowhere."""
    problems = []
    for number, target in links(page.read_text()):
        if SCHEME.match(target):
            continue
        path, _, anchor = unquote(target).partition("#")
        where = (repo / path.lstrip("/")) if path.startswith("/") else (page.parent / path if path else page)
        where = where.resolve()
        name = f"{page.relative_to(repo)}:{number}: {target}"
        if not where.is_relative_to(repo.resolve()):
            problems.append(f"{name} (outside the repository)")
        elif not where.exists():
            problems.append(f"{name} (no such file: {where.relative_to(repo.resolve())})")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where.read_text()):
            problems.append(f"{name} (no heading with the anchor #{anchor} in {where.relative_to(repo.resolve())})")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    assert broken(page, REPO) == []


@pytest.mark.parametrize("heading, anchor", [
    ("Memory in video world models — a reference workflow", "memory-in-video-world-models--a-reference-workflow"),
    ("Paper scale: one job per case, many GPUs", "paper-scale-one-job-per-case-many-gpus"),
    ("Your own world model on `WorldMemBench`", "your-own-world-model-on-worldmembench"),
    ("[Tables](docs/targets.md) and *figures* (2.1)", "tables-and-figures-21"),
    ("config_checks.py: snake_case stays", "config_checkspy-snake_case-stays"),
    ("Überblick & Ödeme, x² ½", "überblick--ödeme-x-"),
])
def test_headings_give_githubs_anchors(heading, anchor):
    assert slug(heading) == anchor


def test_a_planted_broken_link_is_found(tmp_path):
    """The checker itself, on a small repository: a missing file, a missing anchor, a repeated heading's
    second anchor, a link in a code block (not a link), a link out of the repository."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "config.yaml").write_text("")
    (tmp_path / "docs" / "usage.md").write_text("# Usage\n\n## Run\n\n## Run\n\nSetext\n------\n")
    readme = tmp_path / "README.md"
    readme.write_text("\n".join([
        "# Title",
        "See [usage](docs/usage.md#run-1), [setext](docs/usage.md#setext), [config](config.yaml) and ![x](/docs/).",
        "[here](#title) [web](https://example.org/x#y) `[code](nowhere.md)`",
        "[missing](docs/output.md) [anchor](docs/usage.md#run-2)",
        "```",
        "[in a block](nowhere.md)",
        "```",
        "[out](../elsewhere.md)",
        "[ref]: docs/usage.md#nope",
    ]) + "\n")
    assert broken(readme, tmp_path) == [
        "README.md:4: docs/output.md (no such file: docs/output.md)",
        "README.md:4: docs/usage.md#run-2 (no heading with the anchor #run-2 in docs/usage.md)",
        "README.md:8: ../elsewhere.md (outside the repository)",
        "README.md:9: docs/usage.md#nope (no heading with the anchor #nope in docs/usage.md)",
    ]
