"""docs/configuration.md's key reference is what the config schema generates
(worldmemory.workflow.config_doc), and the generator's known answers on a small schema."""

from pathlib import Path

import pytest
from worldmemory.workflow import config_doc

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "configuration.md"


def test_the_docs_key_reference_is_the_schemas():
    text = DOC.read_text()
    expected = config_doc.rewritten(text, config_doc.load_schema(), "docs/configuration.md")
    assert text == expected, f"docs/configuration.md differs from the config schema: run `{config_doc.COMMAND}`"


def test_every_schema_key_has_a_row():
    _, inside, _ = config_doc.block(DOC.read_text())
    for key in ("device", "permanence.models.<name>.source", "worldmembench.models.<name>.command",
                "worldmembench.perception.tracking.backend", "persistbench.sequences.schedule"):
        assert f"| `{key}` |" in inside, key


SMALL = {
    "type": "object",
    "properties": {
        "threads": {"type": "integer", "default": 2, "description": "threads\n  per job | one"},
        "study": {
            "type": "object", "required": ["models"], "description": "a study",
            "properties": {
                "models": {"type": "object", "additionalProperties": {"$ref": "#/$defs/model"}},
                "tracker": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["backend"],
                                                            "properties": {"backend": {"type": "string"}}}],
                            "default": "flow"},
            },
        },
    },
    "$defs": {"model": {"type": "object", "required": ["source"], "description": "one model",
                        "properties": {"source": {"enum": ["hf", "local"]},
                                       "ids": {"type": "array", "items": {"type": "string"}}}}},
}


def test_known_answers_on_a_small_schema():
    assert config_doc.generate(SMALL).splitlines() == [
        "### Top-level settings", "",
        "| key | type | default | description |", "| --- | --- | --- | --- |",
        "| `threads` | integer | 2 | threads per job \\| one |", "",
        "### `study`", "",
        "| key | type | default | description |", "| --- | --- | --- | --- |",
        "| `study` | object |  | a study |",
        "| `study.models` | mapping of object | required |  |",
        "| `study.models.<name>` | object |  | one model |",
        '| `study.models.<name>.source` | "hf" \\| "local" | required |  |',
        "| `study.models.<name>.ids` | array of string |  |  |",
        '| `study.tracker` | string or object | "flow" |  |',
        "| `study.tracker.backend` | string | required |  |",
    ]


def test_write_rewrites_the_block_only_and_check_names_the_command(tmp_path):
    schema = tmp_path / "schema.yaml"
    schema.write_text("type: object\nproperties:\n  threads: {type: integer, default: 2}\n")
    doc = tmp_path / "configuration.md"
    doc.write_text(f"# Configuration\n\nprose\n\n{config_doc.MARKERS[0]}\nold\n{config_doc.MARKERS[1]}\n\nafter\n")
    with pytest.raises(SystemExit, match="config_doc --write docs/configuration.md"):
        config_doc.main(["--schema", str(schema), "--check", str(doc)])
    config_doc.main(["--schema", str(schema), "--write", str(doc)])
    text = doc.read_text()
    assert text.startswith("# Configuration\n\nprose\n\n") and text.endswith(f"{config_doc.MARKERS[1]}\n\nafter\n")
    assert "| `threads` | integer | 2 |  |" in text and "old" not in text
    config_doc.main(["--schema", str(schema), "--check", str(doc)])  # now in step: no exit
    with pytest.raises(ValueError, match="needs one line"):
        config_doc.block("no markers")
