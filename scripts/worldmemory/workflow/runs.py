"""What a benchmark study runs, known before anything runs: its cases and its runs.

The rules plan one job per (run, case) from these; ``./run.sh plan`` and ``./run.sh progress``
count the jobs Snakemake builds from them (worldmemory.workflow.dag). ``block`` is a
study's config block with the schema's defaults filled in.
"""

from __future__ import annotations

import shlex

from worldmemory.common.rollout_index import RESERVED
from worldmemory.external.replays import CLEAN, REPLAY, replay_name, replay_recipe
from worldmemory.external.stress import SOURCES, stress_name
from worldmemory.persistbench.plan import sequence_plan
from worldmemory.worldmembench.cases import embedded_plan, user_cases

REPLAY_KEY = {"worldmembench": "{case}/{trajectory_name}", "persistbench": "{sequence}"}


def comparison_variants(block: dict) -> dict[str, dict]:
    """The models that exist only for a comparison (``comparisons.<name>.variants``; WorldMemBench
    Table 3), id -> spec, in config order: rolled out and scored like the study's models, never
    rows of its main tables, never replayed."""
    return {name: spec for comparison in block.get("comparisons", {}).values()
            for name, spec in comparison.get("variants", {}).items()}


def benchmark_runs(study: str, block: dict) -> dict[str, dict]:
    """Every run of a benchmark study, name -> spec: its models, its comparisons' variants
    (comparison_variants) and, with ``agreement`` on, each
    reference model replayed as an external model (``<model>.replay``, worldmemory.external.replay),
    which reaches scoring without truth channels: the configured estimators score the same
    pixels as the oracle (the perception-agreement tables); and replayed degraded by each recipe
    of ``agreement_degradations`` (``<model>.replay-<recipe>``, common.degrade), whose
    ``degradation`` names the recipe ("clean" for the plain replay). The stress models
    (stress_models) are external runs ``stress.<model>`` (worldmemory.external.stress) with the
    replays their expectations read. ``sources``: the models whose rollouts a run's command reads."""
    runs = {**block["models"], **comparison_variants(block)}
    replays = {(name, recipe) for name, spec in block["models"].items()
               if block["agreement"] and spec["kind"] == "reference"
               for recipe in [CLEAN, *block["agreement_degradations"]]}
    stress = stress_models(study, block)
    replays |= set(stress_references(study, block, stress).values())
    for name, recipe in sorted(replays):
        spec = block["models"][name]
        source = shlex.quote(f"results/{study}/rollouts/{name}")
        command = (f"python -m worldmemory.external.replay --source {source} --key {REPLAY_KEY[study]}"
                   f" --degrade {recipe} --request {{request}}")
        runs[replay_name(name, recipe)] = {
            "kind": "external", "replays": name, "sources": [name], "degradation": recipe, "command": command,
            "trajectory_params": spec.get("trajectory_params", {}), "gpu": 0, "mem_mb": 2000, "runtime": 30}
    for model, sources in stress.items():
        args = [f"--source {kind}={shlex.quote(f'results/{study}/rollouts/{name}')}" for kind, name in sources.items()]
        if study == "persistbench":
            args.append("--sequence results/persistbench/sequences/{sequence}")
        command = (f"python -m worldmemory.external.stress --study {study} --model {model} {' '.join(args)}"
                   f" --key {REPLAY_KEY[study]} --request {{request}}")
        trajectory = block["models"][sources["omniscient"]] if "omniscient" in sources else {}
        runs[stress_name(model)] = {
            "kind": "external", "stress": model, "sources": sorted(set(sources.values())), "command": command,
            "trajectory_params": trajectory.get("trajectory_params", {}), "gpu": 0, "mem_mb": 2000, "runtime": 30}
    return runs


def reference_models(block: dict) -> dict[str, str]:
    """Reference (its ``reference:``) -> the study's first model (by name) of that reference."""
    found = {}
    for name, spec in sorted(block["models"].items()):
        if spec["kind"] == "reference":
            found.setdefault(spec["reference"], name)
    return found


def stress_models(study: str, block: dict) -> dict[str, dict[str, str]]:
    """The study's stress models (``<study>.stress.models``; by default every one whose sources
    are configured reference models), model -> {reference: the model read}, in SOURCES order. A
    listed one whose source is missing is refused by config_checks."""
    references = reference_models(block)
    listed = block.get("stress", {}).get("models")
    chosen = [m for m in SOURCES[study] if (m in listed if listed is not None
                                            else set(SOURCES[study][m]) <= set(references))]
    return {m: {kind: references[kind] for kind in SOURCES[study][m] if kind in references} for m in chosen}


def stress_references(study: str, block: dict, stress: dict) -> dict[str, tuple[str, str]]:
    """The reference rows the stress models' expectations read (``<reference>.replay[-<recipe>]``
    in the expectations), each the (model, recipe) of the replay that gives it; only those whose
    reference is configured."""
    from worldmemory.report.stress import expectations

    references = reference_models(block)
    rows = {e.reference for e in expectations(study) if e.reference and e.model in stress}
    return {row: (references[row.split(REPLAY)[0]], replay_recipe(row)) for row in sorted(rows)
            if row.split(REPLAY)[0] in references}


def worldmembench_cases(block: dict) -> dict[str, dict]:
    """Case id -> {family, category, trajectories, trajectory_params}: the embedded plan of the
    config, or a user directory's validated cases (trajectory_params: the case's own, from its
    case.json, which its rollouts build with; an embedded case's set only the translation side,
    decided when it renders); sorted by id."""
    cases = block["cases"]
    if cases["source"] == "embedded":
        plan = embedded_plan(cases["per_family"], cases["per_category"])
        found = {c: {"family": f, "category": g, "trajectories": cases["trajectories"][f], "trajectory_params": {}}
                 for c, f, g in plan}
    else:
        found = {c: {"family": m["family"], "category": m.get("category"), "trajectories": m["trajectories"],
                     "trajectory_params": m.get("trajectory_params", {})}
                 for c, m in user_cases(cases["source"]).items()}
    return dict(sorted(unreserved("case", found).items()))


def persistbench_sequences(block: dict) -> list[str]:
    """The sequence ids, in preparation order (persistbench.plan)."""
    return unreserved("sequence", sequence_plan(block["sequences"]["source"], block["sequences"]["per_kind"]))


def unreserved(kind: str, ids):
    """``ids`` unless one is the name of a model's own file beside its units' directories."""
    taken = sorted(set(ids) & set(RESERVED))
    if taken:
        raise ValueError(f"{kind} id {taken[0]!r} is the name of a file the workflow writes beside each {kind}'s "
                         f"results ({', '.join(RESERVED)}); rename that {kind}'s directory")
    return ids
