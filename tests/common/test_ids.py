import random
from pathlib import Path

import pytest
import yaml
from snakemake.io import PeriodicityDetector
from worldmemory.common.degrade import RECIPES
from worldmemory.common.ids import ID_PATTERN, MAX_LENGTH, case_collisions, check_case_distinct, check_id
from worldmemory.external.replays import CLEAN, replay_name
from worldmemory.worldmembench import cases

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schemas" / "config.schema.yaml"


@pytest.mark.parametrize("good", ["human_000", "vjepa2-vitl-fpc64-256", "a.b", "0", ("a" * 19 + "b") * 5,
                                  "m" + "0" * 19, "0" * 20 + "x"])
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


@pytest.mark.parametrize(("bad", "piece", "times"), [("m" + "0" * 20, "0", 20), ("a" * 25, "a", 25),
                                                     ("ab" * 20, "ab", 20), ("x" + "a.b" * 21, "a.b", 21),
                                                     ("a" * 100, "a", 100)])
def test_ids_snakemakes_periodic_wildcard_check_refuses_are_refused_first(bad, piece, times):
    """Snakemake's DAG refuses a wildcard value ending in one piece repeated 20 times or more
    (PeriodicWildcardError, before any project check); check_id refuses it naming the id, the
    piece, the rule and the fix."""
    assert PeriodicityDetector().is_periodic(bad) is not None
    with pytest.raises(ValueError, match=rf"^model id '{bad[:60]}'.* is not a valid id: it ends in {piece!r} "
                                         rf"repeated {times} times, and Snakemake refuses a wildcard value ending "
                                         r"in one piece repeated 20 times or more .*; rename the model$"):
        check_id("model", bad, "rename the model")


def _periodic_refusal(value: str) -> bool:
    try:
        check_id("model", value, "rename it")
    except ValueError as e:
        return "Snakemake refuses" in str(e)
    return False


def test_check_id_refuses_exactly_what_snakemakes_detector_refuses():
    """Known answers from Snakemake's own PeriodicityDetector (the one DAG.check_periodic_wildcards
    runs): ids from a small alphabet, of every length up to MAX_LENGTH, many near the threshold
    (19, 20 and 21 repeats of a piece after a prefix)."""
    rng = random.Random(0)
    detector = PeriodicityDetector()
    values = ["".join(rng.choice("ab") for _ in range(rng.randint(1, MAX_LENGTH))) for _ in range(2000)]
    for _ in range(2000):
        piece = "".join(rng.choice("a0.-") for _ in range(rng.randint(1, 4)))
        value = rng.choice("xb") + piece * rng.choice([18, 19, 20, 21]) + rng.choice(["", "", piece[:1], "z"])
        values.append(value[:MAX_LENGTH])
    values = [v for v in values if v[0].isalnum()]
    refused = [v for v in values if _periodic_refusal(v)]
    assert 500 < len(refused) < len(values) - 500  # both answers well represented
    assert refused == [v for v in values if detector.is_periodic(v) is not None]


def test_the_runs_an_accepted_id_becomes_are_accepted_by_snakemake():
    """A replay run <model>.replay[-<recipe>] is a wildcard value too: for ids check_id accepts,
    built to come closest to periodic (a piece repeated 19 times, the suffix's own characters),
    Snakemake's detector accepts every replay name."""
    detector = PeriodicityDetector()
    suffixes = [replay_name("", recipe) for recipe in [CLEAN, *RECIPES]]
    ids = [("x" + piece * 19)[:MAX_LENGTH] for suffix in suffixes for piece in
           {suffix, suffix[1:], suffix[-1], suffix[-2:], suffix[-7:]} if piece]
    ids += [("x" + suffix * 20)[-MAX_LENGTH:].lstrip(".-") for suffix in suffixes]
    accepted = [i for i in ids if not _periodic_refusal(i)]
    assert len(accepted) > 20
    for model in accepted:
        for recipe in [CLEAN, *RECIPES]:
            assert detector.is_periodic(replay_name(model, recipe)) is None, (model, recipe)


def test_names_equal_up_to_case_are_found_and_refused():
    assert case_collisions(["omniscient", "amnesic", "Omniscient", "OMNISCIENT", "b", "b"]) == [
        ["omniscient", "Omniscient", "OMNISCIENT"]]
    check_case_distinct("case", ["a", "b", "a"], "rename one")  # repeated names are refused elsewhere
    with pytest.raises(ValueError, match=r"^case ids 'human_000' and 'Human_000': equal up to case; on a "
                                         r"case-insensitive file system \(macOS, Windows\) .*\. Fix: rename one$"):
        check_case_distinct("case", ["human_000", "Human_000"], "rename one")
