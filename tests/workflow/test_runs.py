"""What a benchmark runs, known before any job (workflow/runs.py): the embedded and a user's cases,
the replays of the agreement table, and the names a case or a sequence may not take."""

import json
from pathlib import Path

import pytest
from worldmemory.workflow.runs import benchmark_runs, persistbench_sequences, worldmembench_cases
from worldmemory.worldmembench.cases import write_embedded_case

MODELS = {"omniscient": {"kind": "reference", "reference": "omniscient"},
          "mine": {"kind": "external", "command": "run {request}"}}


def test_the_embedded_cases_follow_from_the_config():
    cases = {"source": "embedded", "per_family": {"human": 1}, "per_category": {"dynamic": 1},
             "trajectories": {"human": ["LRLR"], "object": [], "environment": [], "dynamic": ["LR-Hold"]}}
    found = worldmembench_cases({"cases": cases})
    assert list(found) == sorted(found) and len(found) == 1 + 7  # one human case, one per mechanism
    assert found["human_000"] == {"family": "human", "category": None, "trajectories": ["LRLR"],
                                  "trajectory_params": {}}
    assert found["dynamic_melt_000"]["category"] == "melt"


def test_a_users_cases_are_listed_with_their_own_trajectories(tmp_path):
    write_embedded_case(tmp_path / "human_000", "human_000", "human", None, 64, 48, ["LRLR", "LRUD"])
    found = worldmembench_cases({"cases": {"source": str(tmp_path)}})
    assert found == {"human_000": {"family": "human", "category": "multi_person", "trajectories": ["LRLR", "LRUD"],
                                   "trajectory_params": {}}}


def test_a_reference_model_gets_a_replay_per_degradation_when_agreement_is_on():
    runs = benchmark_runs("worldmembench", {"models": MODELS, "agreement": True,
                                            "agreement_degradations": ["h264", "black"]})
    stress = {"stress.frozen", "stress.mirrored", "stress.content-out-of-frame"}  # those omniscient alone makes
    assert set(runs) == {"omniscient", "omniscient.replay", "omniscient.replay-h264", "omniscient.replay-black", "mine",
                         *stress}
    replay = runs["omniscient.replay"]
    assert replay["replays"] == "omniscient" and replay["kind"] == "external" and replay["gpu"] == 0
    assert replay["degradation"] == "clean" and runs["omniscient.replay-h264"]["degradation"] == "h264"
    assert ("--source results/worldmembench/rollouts/omniscient --key {case}/{trajectory_name} --degrade clean"
            in replay["command"])
    assert "--degrade black --request {request}" in runs["omniscient.replay-black"]["command"]
    # agreement off: no degraded replay, only the stress models and the clean replay their expectations read
    block = {"models": MODELS, "agreement": False, "agreement_degradations": ["h264"]}
    stress = {"stress.input-copy", "stress.black", "stress.black-after-exit", "stress.black-window"}
    assert set(benchmark_runs("persistbench", block)) == {"omniscient", "mine", "omniscient.replay", *stress}
    assert set(benchmark_runs("persistbench", {"models": MODELS, "agreement": False, "agreement_degradations": [],
                                               "stress": {"models": []}})) == {"omniscient", "mine"}


def test_a_comparisons_variants_are_runs_but_never_replayed():
    """Table 3's variants are rolled out and scored like the models, and not replayed."""
    slow = {"kind": "reference", "reference": "drifting", "params": {"rate": 0.01}}
    comparisons = {"rate": {"models": ["omniscient", "slow"], "baseline": "omniscient", "variants": {"slow": slow}}}
    runs = benchmark_runs("worldmembench", {"models": MODELS, "agreement": True, "agreement_degradations": [],
                                            "comparisons": comparisons})
    stress = {"stress.frozen", "stress.mirrored", "stress.content-out-of-frame", "omniscient.replay-black"}
    assert set(runs) == {"omniscient", "omniscient.replay", "mine", "slow", *stress} and runs["slow"] == slow


@pytest.mark.parametrize("name", ["manifest.json", "costs.csv"])
def test_a_case_or_sequence_may_not_take_the_name_of_a_models_file(tmp_path, name):
    (tmp_path / name).mkdir()
    (tmp_path / name / "video.json").write_text(json.dumps({"kind": "static", "target": 1}))
    with pytest.raises(ValueError, match=f"sequence id '{name}' is the name of a file the workflow writes"):
        persistbench_sequences({"sequences": {"source": str(tmp_path), "per_kind": 1}})


def test_the_schemas_degradations_are_the_recipes():
    """The config's choices and default for agreement_degradations are common.degrade's recipes."""
    import yaml
    from worldmemory.common.degrade import RECIPES

    schema = yaml.safe_load((Path(__file__).parents[2] / "config" / "schemas" / "config.schema.yaml").read_text())
    for study in ("worldmembench", "persistbench"):
        key = schema["properties"][study]["properties"]["agreement_degradations"]
        assert tuple(key["items"]["enum"]) == RECIPES and tuple(key["default"]) == RECIPES
