"""The jobs that run in the core environment (envs/core.yaml: no decord, OpenCV or torch) import
only what it has: the perception-agreement tables of both benchmarks; IntPhys's Tables 1 and 10
(pairs, rules and bootstrap in permanence.intphys_scoring, apart from the torch scoring job); and
the config checks, which Snakemake runs while it plans (its own environment need not have them)."""

import subprocess
import sys

import pytest

CORE_JOBS = ["worldmemory.worldmembench.agreement", "worldmemory.persistbench.agreement",
             "worldmemory.worldmembench.stress", "worldmemory.persistbench.stress",
             "worldmemory.permanence.intphys_tables", "worldmemory.workflow.config_checks"]
# an import finder that behaves as if these packages were not installed
ABSENT = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"decord", "cv2", "torch", "transformers"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Absent())
"""


@pytest.mark.parametrize("module", CORE_JOBS)
def test_a_core_job_imports_without_the_video_and_learning_stack(module):
    result = subprocess.run([sys.executable, "-c", f"{ABSENT}\nimport {module}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
