"""The jobs of a run as Snakemake itself plans them: what ``./run.sh plan`` and ``./run.sh progress`` count.

Both ask Snakemake (its Python API, in this process) to read the workflow and build the DAG of the
requested targets, exactly as ``./run.sh snakemake -n TARGETS --configfile F...`` does: the same
config (several ``--configfile``s deep-merged by Snakemake's own ``update_config``, the embedded
default where none is given, then the Snakefile's schema validation, defaults and check_config),
the same jobs (only those the targets need: no degraded replay that no target builds) and the
same rerun decisions (profiles/default's ``rerun-triggers`` and ``rerun-incomplete``), so a rollout
made under another config (other frames, another command) counts as to be done. Nothing runs; like
any dry run, reading the workflow writes the config stamp where none exists (rules/common.smk).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
PROFILE = REPO / "profiles" / "default" / "config.yaml"


@dataclass(frozen=True)
class Job:
    """One job of the DAG: its rule, wildcards, evaluated resources, whether it is still to run, and
    (for the preflight) its input and output paths, its named inputs and params, its benchmark file."""

    rule: str
    wildcards: dict
    resources: dict
    needrun: bool
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    benchmark: str | None = None
    named_inputs: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)


def rerun_settings() -> dict:
    """profiles/default's rerun triggers and rerun-incomplete, which ``./run.sh snakemake`` runs with."""
    from snakemake.settings.enums import RerunTrigger

    profile = yaml.safe_load(PROFILE.read_text())
    triggers = {RerunTrigger.parse_choice(t) for t in profile.get("rerun-triggers", [])} or RerunTrigger.all()
    return {"rerun_triggers": frozenset(triggers), "force_incomplete": bool(profile.get("rerun-incomplete"))}


def snakemake_dag(configfiles: list[Path], targets: list[str], directory: Path) -> tuple[dict, list[Job]]:
    """(the config as the workflow read it, every job of the DAG of ``targets`` (the default target
    where none)) for a run in ``directory`` with ``configfiles`` (none: the embedded default).
    A config or workflow error raises ValueError with Snakemake's message."""
    from snakemake.api import SnakemakeApi
    from snakemake.exceptions import RuleException, WorkflowError
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    output = OutputSettings(dryrun=True, quiet={Quietness.ALL})
    try:
        with SnakemakeApi(output) as api:
            workflow_api = api.workflow(snakefile=REPO / "Snakefile", workdir=Path(directory).absolute(),
                                        config_settings=ConfigSettings(configfiles=[Path(f) for f in configfiles]),
                                        resource_settings=ResourceSettings(cores=1))
            workflow_api.dag(DAGSettings(targets=frozenset(targets), **rerun_settings()))
            workflow = workflow_api._workflow  # the API offers no public DAG; Snakemake is pinned (requirements.lock)
            workflow._prepare_dag(forceall=False, ignore_incomplete=False, lock_warn_only=True, nolock=True)
            workflow._build_dag()
            dag = workflow.dag
            jobs = [Job(job.rule.name, dict(job.wildcards_dict), dict(job.resources), dag.needrun(job),
                        tuple(map(str, job.input)), tuple(map(str, job.output)),
                        str(job.benchmark) if job.benchmark else None, dict(job.input.items()),
                        dict(job.params.items()))
                    for job in dag.jobs]
            return copy.deepcopy(dict(workflow.config)), jobs
    except (WorkflowError, RuleException, ValueError) as error:
        raise ValueError(str(error).strip()) from None
