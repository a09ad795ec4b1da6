"""Every command in the code blocks of the README and of docs/*.md works as written (each distinct
command once, in the order the pages list them).

Snakemake commands run as dry runs (-n) in a fresh working directory, each with a path from the
repository as it is written there; ./run.sh's own subcommands too (`./run.sh test` excepted: it
is this suite; `./run.sh preflight` checks the weights only, its units needing the config's GPU).
A command that needs what this machine lacks (conda for the SLURM profile's
--sdm conda, built tables for --report) is read by Snakemake's own argument parser instead: its
config files must exist and its targets must be targets, so that none is swallowed by
--configfile. `python -m worldmemory...` commands must name a module whose --help works.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.workflow


def page_commands(page: Path) -> list[str]:
    """The shell commands of a Markdown page's bash code blocks (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S)
    lines = [line.split(" #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_COMMANDS = page_commands(REPO / "README.md")
COMMANDS = list(dict.fromkeys(c for page in PAGES for c in page_commands(page)))  # each once: dry runs cost seconds


def test_the_readme_has_the_commands_this_test_runs():
    assert "./run.sh snakemake results/permanence/table3.csv --configfile config/paper.yaml" in README_COMMANDS
    slurm = [c for c in README_COMMANDS if "profiles/slurm" in c]  # with and without conda, through ./run.sh
    assert any("--sdm conda" in c for c in slurm) and any("--sdm" not in c for c in slurm)
    assert all(c.startswith("./run.sh snakemake") for c in slurm), slurm
    assert any("config/examples/my_world_model.yaml" in c for c in README_COMMANDS)
    assert all(c.split()[0] in ("./run.sh", "snakemake", ".venv/bin/python") for c in COMMANDS), COMMANDS


def test_the_docs_pages_commands_are_collected():
    assert len(PAGES) > 1 and "./run.sh snakemake results/worldmembench/perception_agreement_degraded.csv " \
        "results/persistbench/perception_agreement_degraded.csv" in COMMANDS


def snakemake_arguments(words: list[str]) -> list[str] | None:
    """The Snakemake arguments of a command, or None when it runs no Snakemake."""
    if words[0] == "snakemake":
        return words[1:]
    if words[:2] == ["./run.sh", "snakemake"]:
        return words[2:]
    if words == ["./run.sh"] or words[:2] == ["./run.sh", "main"]:
        return words[2:]
    return None


def needs_what_is_missing(args: list[str]) -> str | None:
    if "--report" in args:
        return "--report needs built tables"
    if "--sdm" in args and "conda" in args and shutil.which("conda") is None:
        return "--sdm conda needs conda, which this machine lacks"
    return None


def parse_only(args: list[str]) -> None:
    from snakemake.cli import parse_args

    _, parsed = parse_args(args)
    for config in parsed.configfile or []:
        assert (REPO / config).suffix in (".yaml", ".json") and (REPO / config).is_file(), config
    for target in parsed.targets or []:
        assert target.startswith("results/") or target.startswith("resources/"), target


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_works_as_written(command, tmp_path):
    words = shlex.split(command)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if words[:2] == ["./run.sh", "test"]:
        pytest.skip("this is the test suite itself")
    if words[0] == ".venv/bin/python":
        module = words[words.index("-m") + 1]
        result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, env=env,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return
    if words[:2] == ["./run.sh", "preflight"]:
        words += ["--only", "weights"]  # its units run on the GPU node the config names (device: cuda)
    args = snakemake_arguments(words)
    if args is not None and needs_what_is_missing(args):
        parse_only(args)
        return
    if args is not None:  # a dry run in a fresh working directory, paths as written
        words = [*words, "-n", "--directory", str(tmp_path)]
        if words[0] == "snakemake":
            words = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), *words[1:]]
        elif words == ["./run.sh", "-n", "--directory", str(tmp_path)]:
            words = ["./run.sh", "main", *words[1:]]
    result = subprocess.run(words, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
