"""docs/configuration.md's key reference, generated from the config schema so that the two cannot
drift apart.

Every key of ``config/schemas/config.schema.yaml`` becomes one row, key path, type, default and
description, one table per top-level key. Paths join keys with ``.``; a mapping of named entries
(a model, a curriculum, a case) reads ``<name>``, and a key of one alternative of a value that may
take several forms (``anyOf``: a backend name or a mapping with options) keeps the parent's path.
``$ref``s are followed (the referring node's own keys win). The doc holds the table between the two
MARKERS; the prose around them is hand-written and left alone:

    python -m worldmemory.workflow.config_doc --write docs/configuration.md   # rewrite the block
    python -m worldmemory.workflow.config_doc --check docs/configuration.md   # exit 1 if it differs

tests/test_configuration_doc.py fails when the doc's block is not what the schema generates.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

SCHEMA = Path(__file__).resolve().parents[3] / "config" / "schemas" / "config.schema.yaml"
COMMAND = "python -m worldmemory.workflow.config_doc --write docs/configuration.md"
MARKERS = (f"<!-- config-keys:begin (generated: {COMMAND}) -->", "<!-- config-keys:end -->")


def resolve(node: dict, root: dict) -> dict:
    """``node`` with its ``$ref`` (a JSON pointer into ``root``) merged under its own keys."""
    while isinstance(node, dict) and "$ref" in node:
        pointer = node["$ref"]
        if not pointer.startswith("#/"):
            raise ValueError(f"$ref {pointer!r}: only references inside the schema (#/...) are supported")
        target = root
        for part in pointer[2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def type_of(node: dict, root: dict) -> str:
    """The node's type in words: its type(s), an enum's values, an array's items, alternatives."""
    node = resolve(node, root)
    if "enum" in node:
        return " | ".join(json.dumps(v) for v in node["enum"])
    if "const" in node:
        return json.dumps(node["const"])
    alternatives = node.get("anyOf") or node.get("oneOf")
    if alternatives:
        return " or ".join(dict.fromkeys(type_of(a, root) for a in alternatives))
    kind = node.get("type", "any")
    kind = " | ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and "items" in node:
        return f"array of {type_of(node['items'], root)}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
        return f"mapping of {type_of(node['additionalProperties'], root)}"
    return kind


def cell(text: str) -> str:
    """One table cell: whitespace collapsed, pipes escaped."""
    return re.sub(r"\s+", " ", str(text)).strip().replace("|", "\\|")


def rows(node: dict, root: dict, path: str = "", required: bool = False) -> list[tuple[str, str, str, str]]:
    """(key path, type, default, description) of ``node`` (unless it is the root) and of every key below."""
    node = resolve(node, root)
    found = []
    if path:
        default = "required" if required else ""
        if "default" in node:
            default = json.dumps(node["default"], ensure_ascii=False)
        found.append((path, type_of(node, root), default, node.get("description", "")))
    children = []
    for option in [node, *(resolve(a, root) for a in node.get("anyOf", []) + node.get("oneOf", []))]:
        needed = set(option.get("required", []))
        children += [(f"{path}.{key}" if path else key, child, key in needed)
                     for key, child in option.get("properties", {}).items()]
        entry = option.get("additionalProperties")
        if isinstance(entry, dict) and ("properties" in resolve(entry, root) or "anyOf" in resolve(entry, root)):
            children.append((f"{path}.<name>", entry, False))
    seen = {p for p, *_ in found}
    for child_path, child, needed in children:
        if child_path not in seen:  # an alternative repeating a key of the node's own properties
            seen.add(child_path)
            found += rows(child, root, child_path, needed)
    return found


def generate(schema: dict) -> str:
    """The generated block (without the markers): the top-level settings in one table, then a table
    per study (each top-level key with keys of its own)."""
    header = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    tables = {"Top-level settings": []}
    for key, node in schema["properties"].items():
        found = rows(node, schema, key)
        tables.setdefault(f"`{key}`" if len(found) > 1 else "Top-level settings", []).extend(found)
    lines = []
    for title, found in tables.items():
        lines += [f"### {title}", "", *header]
        lines += [f"| `{p}` | {cell(t)} | {cell(d)} | {cell(x)} |" for p, t, d, x in found]
        lines.append("")
    return "\n".join(lines)


def load_schema(path=SCHEMA) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


def block(text: str, doc_name: str = "the doc") -> tuple[str, str, str]:
    """``text`` split at the MARKERS: (before, the block, after)."""
    begin, end = MARKERS
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{doc_name} needs one line {begin} followed by one line {end}")
    head, rest = text.split(begin)
    inside, tail = rest.split(end)
    return head, inside, tail


def rewritten(text: str, schema: dict, doc_name: str = "the doc") -> str:
    head, _, tail = block(text, doc_name)
    return f"{head}{MARKERS[0]}\n\n{generate(schema)}\n{MARKERS[1]}{tail}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", default=str(SCHEMA), help="the config schema (default: the repository's)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", metavar="DOC", help="rewrite the generated block of this Markdown page")
    action.add_argument("--check", metavar="DOC", help="exit 1 when this page's block differs from the schema's")
    args = parser.parse_args(argv)
    schema = load_schema(args.schema)
    if not (args.write or args.check):
        sys.stdout.write(generate(schema))
        return
    path = Path(args.write or args.check)
    text = path.read_text()
    new = rewritten(text, schema, str(path))
    if args.write:
        path.write_text(new)
    elif new != text:
        raise SystemExit(f"{path}: its key reference differs from {args.schema}; run `{COMMAND}`")


if __name__ == "__main__":
    main()
