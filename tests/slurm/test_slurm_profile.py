"""profiles/slurm for real: a one-node SLURM cluster on this machine (tests/slurm/cluster.py) runs
tests/config/tiny_worldmembench.yaml, two models of four cases each, through the profile to its
tables. The jobs went through sbatch; the cases' renders travelled as one SLURM job, the models'
rollouts as several (two cases per job here), which ran at the same time, the scores of every
case as one and the three table jobs as one (the profile's groups); the per-model lists ran where
Snakemake runs; the tables are byte-identical to a local run of the same config.

The cluster test needs root and Debian's munge, slurmctld, slurmd and slurm-client (.ci/run
installs them when it runs as root) and is skipped without them; the profile checks above it need
only the plugin.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
TINY = REPO / "tests" / "config" / "tiny_worldmembench.yaml"
TARGETS = ["results/table2.csv", "results/worldmembench/figure5.png", "results/worldmembench/table12.csv"]
MODELS = ["omniscient", "camera-error"]  # two of the tiny config's models: the run stays short
CASES = ["dynamic_000", "environment_000", "human_000", "object_000"]
FAMILIES = ["quality", "static", "dynamic", "camera"]
# Every table and figure of the run and the per-model scores; the provenance sidecars (.json)
# record times and hosts.
COMPARED = ["results/table2.csv", "results/worldmembench/figure5.png", "results/worldmembench/figure5.pdf",
            *(f"results/worldmembench/{name}.csv" for name in (
                "table5", "table2_nan_reasons", "table8", "table9", "table10", "table11", "table12", "table13")),
            *(f"results/worldmembench/scores/{m}/{f}.csv" for m in MODELS for f in FAMILIES)]

# The helper beside this file (tests are imported with --import-mode=importlib: no sys.path entry).
_spec = importlib.util.spec_from_file_location("slurm_test_cluster", Path(__file__).with_name("cluster.py"))
cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cluster)

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]


def _python_env():
    """This interpreter's bin directory (the .venv) first on PATH, as the rules' `python` needs."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _test_profile(directory, partition=cluster.PARTITION, cores=None, cluster_settings=False, rollouts_per_job=None):
    """The profile as a user runs it, with only what this machine needs changed:

    * no `--sdm conda` (the profile leaves conda to the command line): no conda channel is
      reachable from here, and the compute node is this machine, whose .venv has every package;
    * this cluster's partition, and no account: the plugin checks an account with sacctmgr or
      sshare, which need the accounting database this cluster does not run;
    * with ``cluster_settings``: job status from squeue (sacct has no database to ask), checked
      soon after submission so that the test stays short (the plugin then waits 10 s longer
      after every check that finds nothing finished), and SLURM's log of every job kept, to be
      read below; ``cores``: no job asks for more CPUs than this node has.
    """
    profile = yaml.safe_load(PROFILE.read_text())
    profile["default-resources"] = [f'slurm_partition="{partition}"' if r.startswith("slurm_partition=") else r
                                    for r in profile["default-resources"] if not r.startswith("slurm_account=")]
    for resources in profile["set-resources"].values():
        if "slurm_partition" in resources:
            resources["slurm_partition"] = partition
    if cores is not None:
        profile["cores"] = cores
    if rollouts_per_job is not None:
        profile["group-components"]["wmb_rollouts"] = rollouts_per_job
    if cluster_settings:
        profile.update({"slurm-status-command": "squeue", "slurm-init-seconds-before-status-checks": 5,
                        "seconds-between-status-checks": 5, "slurm-keep-successful-logs": True})
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return directory


def _snakemake(workdir, *args, env, targets=TARGETS, config=TINY):
    """Start Snakemake on this workflow in ``workdir``; ``_wait`` for it."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), *targets, *args]
    if config is not None:
        cmd += ["--configfile", str(config)]
    return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(process, timeout=600):
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
    if process.returncode:
        raise AssertionError(f"{' '.join(process.args)} failed:\n{out[-8000:]}")
    return out


# -- the profile, without a cluster ----------------------------------------------------------------

def test_profile_settings():
    profile = yaml.safe_load(PROFILE.read_text())
    # conda is `--sdm conda` on the command line: a profile's method cannot be undone there
    assert profile["executor"] == "slurm" and "software-deployment-method" not in profile
    assert {"jobs", "latency-wait", "retries", "rerun-incomplete"} <= set(profile)
    defaults = dict(r.split("=", 1) for r in profile["default-resources"])
    assert {"slurm_partition", "slurm_account"} <= set(defaults)
    # GPUs go through the plugin's gpu/gpu_model resources; it rejects GPU flags in slurm_extra.
    every = [*defaults.items(), *(kv for r in profile["set-resources"].values() for kv in r.items())]
    assert not [v for k, v in every if k == "slurm_extra" and re.search("--gpus|--gres", str(v))]
    for rule, group in profile["groups"].items():
        assert group in profile["group-components"], rule
        # a group of siblings runs one job at a time: each holds the one serial slot
        if profile["group-components"][group] > 1:
            assert profile["set-resources"][rule] == {"serial": 1}, rule
    # one slot within each SLURM job, not across them: group jobs run at once
    assert profile["resources"] == ["serial=1"] and profile["set-resource-scopes"] == ["serial=local"]
    # the rollouts of a model never travel as one job per model: a few cases per SLURM job
    assert profile["groups"]["worldmembench_rollout"] != profile["groups"]["worldmembench_perceive"]
    assert profile["group-components"][profile["groups"]["worldmembench_rollout"]] <= 4


def _gres(resources):
    """The GPU flags of the plugin's sbatch call for a job with these resources."""
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    class Resources(dict):
        __getattr__ = dict.get

    return set_gres_string(SimpleNamespace(resources=Resources(resources))).strip()


@pytest.mark.parametrize("device, gpu", [("cuda", 1), ("cpu", 0)])
def test_gpu_rules_request_a_gpu_through_the_plugin(tmp_path, device, gpu):
    """The profile's GPU rules on the embedded default (a dry run): gpu=1 on device: cuda, which
    the plugin turns into --gpus=1 (--gpus=<model>:1 with a gpu_model), and gpu=0 on cpu, which
    requests nothing; both go to the GPU rules' partition."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    profile = _test_profile(tmp_path / "profile", partition="gpu-test")
    out = _wait(_snakemake(tmp_path, "--profile", str(profile), "--workflow-profile", "none", "-n",
                           "--config", f"device={device}", targets=["results/permanence/table3.csv"],
                           config=None, env=_python_env()))
    for rule in ("permanence_train", "permanence_probe"):
        block = out.split(f"rule {rule}:")[1].split("\n\n")[0]
        resources = dict(kv.split("=", 1) for kv in re.search(r"resources: (.*)", block).group(1).split(", "))
        assert resources["gpu"] == str(gpu) and resources["slurm_partition"] == "gpu-test", (rule, resources)
        assert _gres({"gpu": int(resources["gpu"])}) == ("--gpus=1" if gpu else "")
    assert _gres({"gpu": 1, "gpu_model": "a100"}) == "--gpus=a100:1"


# -- the profile on a one-node cluster -------------------------------------------------------------

def _skip_reason():
    if missing := cluster.missing_binaries():
        return (f"SLURM is not installed (missing {', '.join(missing)}): "
                "apt-get install slurmctld slurmd slurm-client munge")
    if os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd for the test cluster needs root"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed (requirements.lock pins it)"
    return None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if reason := _skip_reason():
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("slurm")
    slurm = cluster.SlurmCluster(root / "cluster").start()
    try:
        profile = _test_profile(root / "profile", cores=slurm.cpus, cluster_settings=True, rollouts_per_job=2)
        on_slurm, local = root / "slurm_run", root / "local_run"
        config = yaml.safe_load(TINY.read_text())
        config["worldmembench"]["models"] = {m: config["worldmembench"]["models"][m] for m in MODELS}
        two = root / "two_models.yaml"
        two.write_text(yaml.safe_dump(config))
        on_slurm.mkdir()
        local.mkdir()
        # Jobs inherit this environment (the plugin submits with sbatch --export=ALL): SLURM_CONF,
        # the srun shim and the .venv first on PATH; the rules' shell prefix sets PYTHONPATH.
        env = _python_env()
        env["SLURM_CONF"] = str(slurm.conf)
        env["PATH"] = f"{slurm.bin_dir}{os.pathsep}{env['PATH']}"
        # --workflow-profile none: else Snakemake adds profiles/default (found beside the
        # Snakefile), whose local settings override the SLURM profile's.
        submitted = _snakemake(on_slurm, "--profile", str(profile), "--workflow-profile", "none", env=env,
                               config=two)
        # The local run of the same config goes alongside: the SLURM run mostly waits for its
        # status checks.
        here = _snakemake(local, "--cores", "2", env=_python_env(), config=two)
        try:
            _wait(submitted)
        finally:
            _wait(here)
        queue = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T|%j"],
                               env=env, capture_output=True, text=True, check=True).stdout
        jobs = {}  # SLURM's record of every job: what it was given, when it ran
        for line in subprocess.run(["scontrol", "show", "job", "--oneliner"], env=env, capture_output=True,
                                   text=True, check=True).stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            jobs[fields["JobId"]] = fields
        yield {"slurm": on_slurm, "local": local, "queue": queue, "jobs": jobs}
    finally:
        slurm.stop()


def _submissions(workdir):
    """(Snakemake job, SLURM job id, SLURM log) of every sbatch call, from Snakemake's log."""
    (log,) = (workdir / ".snakemake" / "log").glob("*.snakemake.log")
    return re.findall(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", log.read_text())


def test_the_jobs_went_through_sbatch(runs):
    submitted = _submissions(runs["slurm"])
    # the four cases' renders in one, the 2 x 4 rollouts two cases a job, the 8 score jobs of the two
    # models' cases in one, the three table jobs in one; the per-model lists (localrules) in none
    assert len(submitted) == 1 + 4 + 1 + 1, submitted
    queue = {i: (state, name) for i, state, name in (row.split("|") for row in runs["queue"].split())}
    for _, jobid, log in submitted:
        assert queue[jobid][0] == "COMPLETED", (jobid, queue.get(jobid))
        assert Path(log).name == f"{jobid}.log" and Path(log).exists(), log
    assert len({queue[jobid][1] for _, jobid, _ in submitted}) == 1  # the run's id names every job
    # The plugin's log directory names the rule, or the group and its rules.
    logs = runs["slurm"] / ".snakemake" / "slurm_logs"
    kinds = sorted(Path(log).relative_to(logs).parts[0] for _, _, log in submitted)
    assert kinds == ["group_wmb_cases_worldmembench_case", "group_wmb_evaluation_worldmembench_score",
                     *["group_wmb_rollouts_worldmembench_rollout"] * 4,
                     "group_wmb_tables_worldmembench_qualification_worldmembench_revisits_worldmembench_table2"]


def test_the_short_jobs_ran_one_after_another_inside_their_group_jobs(runs):
    """Each group was one SLURM job sized for its jobs run one at a time: one job's CPU and
    memory, the jobs' runtimes added (2 models' score jobs: 30 min for each static case, 15 for
    the dynamic one; 3 table jobs of 10 min; 2 rollouts of 60 min)."""
    logs = runs["slurm"] / ".snakemake" / "slurm_logs"
    (scores,) = logs.glob("group_wmb_evaluation_*/*.log")
    assert all(f"scores/{m}/cases/{c}" in scores.read_text() for m in MODELS for c in CASES)
    (tables,) = logs.glob("group_wmb_tables_*/*.log")
    assert all(f"rule {rule}:" in tables.read_text() for rule in (
        "worldmembench_table2", "worldmembench_revisits", "worldmembench_qualification"))
    rollouts = sorted(logs.glob("group_wmb_rollouts_*/*.log"))
    sized = [(scores, ("4000M", "03:30:00")), (tables, ("2000M", "00:30:00")),
             *((log, ("4000M", "02:00:00")) for log in rollouts)]
    for log, (memory, time_limit) in sized:
        job = runs["jobs"][log.stem]
        assert (job["NumCPUs"], job["MinMemoryNode"], job["TimeLimit"]) == ("1", memory, time_limit), job


def test_group_jobs_run_at_the_same_time(runs):
    """The serial slot limits each SLURM job, not the run: rollout jobs of several cases ran at once."""
    logs = runs["slurm"] / ".snakemake" / "slurm_logs"
    spans = sorted((runs["jobs"][log.stem]["StartTime"], runs["jobs"][log.stem]["EndTime"])
                   for log in logs.glob("group_wmb_rollouts_*/*.log"))
    assert any(b_start < a_end for (_, a_end), (b_start, _) in zip(spans, spans[1:])), spans


def test_outputs_are_byte_identical_to_a_local_run(runs):
    for name in COMPARED:
        assert (runs["slurm"] / name).read_bytes() == (runs["local"] / name).read_bytes(), name
