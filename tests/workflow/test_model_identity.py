"""A model changed in place is rolled out again (issue 38, item 4): the real rules on one
PersistBench sequence of tests/config/tiny_persistbench.yaml with an external model whose
``files`` are its script and its "checkpoint". Editing the checkpoint reruns the rollout job
(the digest is a param of the rule) and the new video is used, not the stored one (the digest is
part of the rollout's identity); the same command unchanged reruns nothing; a new ``version``
reruns the rollout too; ./run.sh forget brings it back to be made."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from worldmemory.common.video import read_video

REPO = Path(__file__).resolve().parents[2]
SEQUENCE = "static_000"
TARGET = f"results/persistbench/rollouts/mine/{SEQUENCE}"
pytestmark = pytest.mark.workflow

MODEL = """import sys
from worldmemory.common.video import read_video, write_video
frames = read_video(sys.argv[1])
if open("ckpt.txt").read().strip() == "invert":
    frames = 255 - frames
write_video(sys.argv[2], frames, 8)
with open("calls.txt", "a") as f:
    f.write("call\\n")
"""


def write_config(work: Path, **entry) -> Path:
    config = yaml.safe_load((REPO / "tests" / "config" / "tiny_persistbench.yaml").read_text())
    config["persistbench"]["agreement"] = False
    config["persistbench"]["models"]["mine"] = {
        "kind": "external", "command": f"python {shlex.quote(str(work / 'model.py'))} {{input_video}} {{video}}",
        "files": ["model.py", "ckpt.txt"], **entry}
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_edited_model_file_reruns_its_rollout_and_nothing_else(tmp_path, snakemake, job_counts):
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.py").write_text(MODEL)
    (work / "ckpt.txt").write_text("copy")
    config = write_config(work)

    def run(*args):  # Snakemake's log (its job stats go to stderr in a real run)
        result = snakemake(work, config, TARGET, *args)
        return result.stdout + result.stderr

    def video():
        return read_video(next((work / TARGET).glob("video.*"))).astype(int)

    assert job_counts(run()) == {"persistbench_sequence": 1, "persistbench_rollout": 1}
    first = video()
    assert "Nothing to be done" in run()  # the same command, nothing changed
    (work / "ckpt.txt").write_text("invert")  # the checkpoint edited in place
    assert job_counts(run()) == {"persistbench_rollout": 1}
    assert np.abs(video() - (255 - first)).mean() < 3  # the new model's video, not the stored one
    assert (work / "calls.txt").read_text().count("call") == 2
    assert "Nothing to be done" in run()
    config = write_config(work, version="2")  # a new version, same files
    assert job_counts(run("-n")) == {"persistbench_rollout": 1}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    forget = subprocess.run([str(REPO / "run.sh"), "forget", "mine", "--directory", str(work)],
                            capture_output=True, text=True, env=env)
    assert forget.returncode == 0 and f"removed {work}/results/persistbench/rollout_store/mine/" in forget.stdout
    assert not (work / TARGET).exists()
