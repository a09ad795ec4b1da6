"""The two workflow benchmarks (docs/performance.md) run in a small mode, so that they keep running
as the config and the workflow change: dag_benchmark plans config/paper.yaml's settings with every
estimator's files stood in (config_inputs.estimator_files), failure_benchmark runs one failure of
an external model and its rerun for real."""

import re

import pytest
from worldmemory.workflow import dag_benchmark, failure_benchmark

pytestmark = pytest.mark.workflow


def test_the_dag_benchmark_plans_the_papers_settings(capsys):
    dag_benchmark.main(["--models", "1", "--repeats", "1", "--small"])
    out = capsys.readouterr().out
    jobs = int(re.search(r"dry run .*; (\d+) jobs", out).group(1))
    submissions = int(re.search(r"SLURM dry run: .*; (\d+) submissions", out).group(1))
    assert 0 < submissions < jobs
    assert "group wmb_rollouts:" in out and "group pb_rollouts:" in out


def test_the_dag_benchmark_stands_in_every_estimator_file():
    """Every file paper.yaml's estimators name gets a stand-in: a file added to paper.yaml (its
    MUSIQ weights were missing from a hand-kept list) is covered without editing the benchmark."""
    files = set(dag_benchmark.estimator_files(dag_benchmark.paper_size_config(1)).values())
    assert {"resources/musiq/musiq_spaq_ckpt-358bb6af.pth", "resources/laion/sa_0_4_vit_l_14_linear.pth",
            *dag_benchmark.FACES.values()} <= files


def test_the_failure_benchmark_keeps_all_but_the_failed_rollout(capsys):
    failure_benchmark.main(["--per-family", "1"])
    out = capsys.readouterr().out
    assert "it fails on environment_000/LRUD (exit status of the first run: 1)" in out
    survived, total = map(int, re.search(r"(\d+) of (\d+) survive", out).groups())
    assert survived == total - 1
    assert "the model was run again on: environment_000/LRUD\n" in out and "(exit status 0)" in out
