from pathlib import Path

import pytest
import yaml
from worldmemory.common.ids import ID_PATTERN, check_id
from worldmemory.worldmembench import cases

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schemas" / "config.schema.yaml"


@pytest.mark.parametrize("good", ["human_000", "vjepa2-vitl-fpc64-256", "a.b", "0", "a" * 100])
def test_valid_ids_pass(good):
    assert check_id("case", good, "rename it") == good


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "/abs", "-rf", ".hidden", "_x", "a b", "", "x\n", None, "a" * 101])
def test_ids_that_leave_their_folder_or_read_as_options_are_refused(bad):
    with pytest.raises(ValueError, match=r"sequence id .* is not a valid id: .*one path component.*rename"):
        check_id("sequence", bad, "rename the directory")


def test_every_schema_uses_the_one_id_pattern():
    """Model names (config schema) and case ids (case schema) follow the same rule as check_id."""
    config = yaml.safe_load(SCHEMA.read_text())["properties"]
    patterns = {config[s]["properties"]["models"]["propertyNames"]["pattern"]
                for s in ("permanence", "worldmembench", "persistbench")}
    patterns.add(cases.SCHEMA["properties"]["id"]["pattern"])
    assert patterns == {ID_PATTERN}


def test_a_long_id_is_shown_by_its_start_and_length():
    with pytest.raises(ValueError, match=r"^case id 'a+'\.\.\. \(5000 characters\) is not a valid id: .* at most 100"):
        check_id("case", "a" * 5000, "rename the directory")
