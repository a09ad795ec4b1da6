"""The environments jobs run in.

The conda environments: every package pinned, dependencies included, to the version the CI's
virtual environment installs from its lock (requirements.lock; for envs/perception.yaml
requirements-perception.lock, .venv-perception/'s), so a conda run and a plain run compute with
the same libraries, a `conda:` directive on every rule, and each rule's environment holding every
third-party package its Python modules import.

The package installs like a package: pyproject.toml declares what it imports, the virtual
environment ./run.sh makes runs `python -m worldmemory...` without PYTHONPATH, so does each conda
environment (through its post-deploy script), and the workflow runs as a Snakemake module of
another repository."""

import ast
import os
import re
import subprocess
import sys
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
ENVS = sorted((REPO / "envs").glob("*.yaml"))
RULE_FILES = sorted((REPO / "rules").glob("*.smk"))
PACKAGE = REPO / "scripts"
# import name -> distribution name, where they differ
DISTRIBUTION = {"yaml": "pyyaml", "PIL": "pillow", "imageio_ffmpeg": "imageio-ffmpeg", "cv2": "opencv-python-headless",
                "huggingface_hub": "huggingface-hub", "sklearn": "scikit-learn"}
# the lock each env is pinned to, where it is not requirements.lock
LOCKS = {"perception.yaml": "requirements-perception.lock"}
# left out of requirements-perception.lock (its header says why): pyiqa requires it
LEFT_OUT = {"facexlib"}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(name: str) -> str | None:
    """Version of a distribution in the running (CI) environment, without a local tag (+cpu)."""
    try:
        return metadata.version(name).split("+")[0]
    except metadata.PackageNotFoundError:
        return None


def dependency_closure(names) -> set[str]:
    """The distributions ``names`` need, themselves included, as installed here (extras off)."""
    seen, stack = set(), list(names)
    while stack:
        name = normal(stack.pop())
        if name in seen or name in LEFT_OUT:
            continue
        seen.add(name)
        for requirement in metadata.distribution(name).requires or []:
            req = Requirement(requirement)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                stack.append(req.name)
    return seen


def env_pins(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(conda pins, pip pins) of an environment file, name -> version ('' when unpinned)."""
    spec = yaml.safe_load(path.read_text())
    conda, pip = {}, {}
    for dep in spec["dependencies"]:
        if isinstance(dep, dict):
            for req in dep["pip"]:
                name, _, version = req.partition("==")
                pip[normal(name)] = version
        else:
            name, _, version = dep.partition("=")
            conda[normal(name)] = version
    return conda, pip


def lock_pins(path: Path) -> dict[str, str]:
    """name -> version of a lock file (requirements.lock's format: one name==version a line)."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    return {normal(name): version for name, _, version in
            (line.partition("==") for line in lines if line and not line.startswith("#"))}


def post_deploy_pins(path: Path) -> dict[str, str]:
    """name -> version of what an env's post-deploy script installs with pip (``pip install --no-deps``)."""
    script = path.with_name(path.stem + ".post-deploy.sh").read_text()
    return {normal(name): version for name, version in re.findall(r"pip install --no-deps ([\w.-]+)==(\S+)", script)}


def env_packages(path: Path) -> set[str]:
    """Every distribution an env holds: its conda and pip pins and its post-deploy installs."""
    conda, pip = env_pins(path)
    return set(conda) | set(pip) | set(post_deploy_pins(path))


def learned(path: Path):
    """``path`` as a test parameter, marked ``torchvision`` where its packages are those of
    .venv-perception/ (the metadata a closure reads is there, not in .venv/)."""
    return pytest.param(path, id=path.name, marks=[pytest.mark.torchvision] if path.name in LOCKS else [])


def rules() -> dict[str, str]:
    """Rule name -> its text, from every rules/*.smk, for the rules that run a job (aggregate
    targets such as `all`, with neither shell: nor run:, run nothing and need no environment)."""
    out = {}
    for path in RULE_FILES:
        for block in re.split(r"\n(?=rule |use rule )", path.read_text()):
            match = re.match(r"rule (\w+):", block)
            if match and re.search(r"\n    (shell|run|script):", block):
                out[match.group(1)] = block
    return out


def imports_of(module: str, seen: set[str] | None = None) -> set[str]:
    """Top-level names of the third-party packages ``module`` of worldmemory imports, directly
    or through the package's own modules (lazy imports inside functions included)."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    path = PACKAGE / Path(*module.split("."))
    source = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        for name in names:
            if name.startswith("worldmemory"):
                found |= imports_of(name if _is_module(name) else name.rsplit(".", 1)[0], seen)
            elif name.split(".")[0] not in sys.stdlib_module_names:
                found.add(name.split(".")[0])
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE / Path(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


@pytest.mark.parametrize("path", ENVS, ids=lambda p: p.name)
def test_every_package_is_pinned_to_the_version_ci_installs(path):
    """Against .venv/ as installed (requirements.lock, and setuptools, which pip freeze leaves out),
    or the env's own lock (LOCKS)."""
    conda, pip = env_pins(path)
    if path.name in LOCKS:
        where, expected = LOCKS[path.name], lock_pins(REPO / LOCKS[path.name]).get
    else:
        where, expected = "CI", installed
    assert conda.get("python") == "3.11" and conda.get("pip"), "python and pip are pinned"
    for name, version in (pip | post_deploy_pins(path)).items():
        assert version, f"{path.name}: {name} is not pinned"
        assert version == expected(name), f"{path.name}: {name}=={version}, {where} has {expected(name)}"


def test_the_perception_lock_keeps_the_main_lock_versions():
    """.venv-perception/ computes with the libraries of .venv/ plus torchvision and pyiqa's."""
    main, perception = lock_pins(REPO / "requirements.lock"), lock_pins(REPO / "requirements-perception.lock")
    differ = {name: (version, perception.get(name)) for name, version in main.items()
              if perception.get(name) != version}
    assert not differ, f"requirements-perception.lock differs from requirements.lock (main, perception): {differ}"
    assert {"torchvision", "pyiqa"} <= set(perception) and not LEFT_OUT & set(perception)


@pytest.mark.parametrize("path", [learned(path) for path in ENVS])
def test_dependencies_are_pinned_too(path):
    """pip would otherwise pick the newest release of an unpinned dependency at env creation."""
    _, pip = env_pins(path)
    pip |= post_deploy_pins(path)
    missing = sorted(dependency_closure(pip) - set(pip))
    assert not missing, f"{path.name}: dependencies without a pin: {missing}"


def test_the_rules_that_need_the_network_run_where_snakemake_runs():
    """A compute node often has no network: the prefetch rules are localrules (login node); the
    only others are the per-model lists of a benchmark's per-case files (seconds of reading)."""
    text = "".join(path.read_text() for path in RULE_FILES)
    local = {name for block in re.findall(r"localrules:\s*\n((?:[ \t]+\w+,\n?)+)", text)
             for name in re.findall(r"(\w+),", block)}
    prefetch = {name for name in rules() if name.startswith("prefetch")}
    assert prefetch == {"prefetch_model", "prefetch_dinov2", "prefetch_perception", "prefetch_cosmos"}
    assert local == prefetch | {"worldmembench_rollouts", "worldmembench_scores", "persistbench_sequences",
                                "persistbench_rollouts", "persistbench_scores"}


def test_every_rule_names_a_conda_environment_that_exists():
    found = rules()
    assert {"permanence_probe", "worldmembench_score", "worldmembench_qualification"} <= set(found)
    for name, text in found.items():
        match = re.search(r'conda:\s*\n\s*"\.\./(envs/[\w.]+\.yaml)"', text)
        assert match, f"rule {name} has no conda: directive"
        assert (REPO / match.group(1)).is_file(), f"rule {name}: {match.group(1)} is missing"


def test_each_rule_environment_holds_what_its_modules_import():
    """A rule whose module (or a module it reaches) imports a package its env lacks would fail
    only under --sdm conda; this catches it without conda."""
    for name, text in rules().items():
        env_file = re.search(r'"\.\./(envs/[\w.]+\.yaml)"', text).group(1)
        have = env_packages(REPO / env_file)
        for module in re.findall(r"python -m (worldmemory[\w.]*)", text):
            needed = {normal(DISTRIBUTION.get(n, n)) for n in imports_of(module)}
            for backend in registry_backends(module):  # imported by name, which the scan cannot follow
                needed |= {normal(DISTRIBUTION.get(n, n)) for n in imports_of(backend)}
            missing = sorted(needed - have)
            assert not missing, f"rule {name} runs {module} in {env_file}, which lacks {missing}"


def registry_backends(module: str) -> list[str]:
    """The perception backends a perceive step creates by name (perception.registry), for the
    capabilities it estimates."""
    if not module.endswith(".perceive"):
        return []
    from importlib import import_module

    from worldmemory.perception.registry import BACKENDS

    capabilities = import_module(module).CAPABILITIES
    return sorted({path.split(":")[0] for c in capabilities for path in BACKENDS[c].values()})


def test_the_import_scan_follows_the_package():
    """The scan itself: score.py reaches torch through the DINOv2 backend and PIL-free tables do not."""
    assert {"numpy", "pandas", "decord"} <= imports_of("worldmemory.worldmembench.score")
    assert "torch" not in imports_of("worldmemory.worldmembench.tables")


# -- the package ------------------------------------------------------------------------------------
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
MODULES = sorted(".".join(p.relative_to(REPO / "scripts").with_suffix("").parts)
                 for p in (REPO / "scripts" / "worldmemory").rglob("*.py") if p.name != "__init__.py")
NOT_PACKAGES = {"yte"}  # comes with snakemake (config_files reads YTE templates only when asked)


def declared(*extras: str) -> set[str]:
    names = [Requirement(r).name for r in PYPROJECT["dependencies"]]
    for extra in extras:
        names += [Requirement(r).name for r in PYPROJECT["optional-dependencies"][extra]]
    return {normal(n) for n in names}


def test_pyproject_declares_every_package_the_code_imports():
    for module in MODULES:
        needed = {normal(DISTRIBUTION.get(n, n)) for n in imports_of(module)} - NOT_PACKAGES
        extra = next((e for e in ("workflow", "perception") if module.startswith(f"worldmemory.{e}")), None)
        have = declared(extra) if extra else declared()
        assert needed <= have, f"{module} imports {sorted(needed - have)}, not in pyproject.toml"


def test_the_package_runs_without_pythonpath(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-m", "worldmemory.common.provenance", "--help"], cwd=tmp_path,
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"not installed in {sys.prefix} (./run.sh installs it): {result.stderr}"
    assert "Provenance sidecars" in result.stdout


def test_each_conda_environment_installs_the_package(tmp_path):
    """Snakemake runs <env>.post-deploy.sh inside each environment it creates; a bare virtual
    environment stands in for the conda one (no conda here)."""
    scripts = {env.name: env.with_name(env.stem + ".post-deploy.sh") for env in (REPO / "envs").glob("*.yaml")}
    assert scripts and all(s.is_file() for s in scripts.values()), scripts
    bare = tmp_path / "env"
    venv.create(bare, with_pip=False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PATH": f"{bare / 'bin'}{os.pathsep}{env['PATH']}", "WORLDMEMORY_CHECKOUT": str(REPO)}
    probe = [bare / "bin" / "python", "-c", "import worldmemory.common.ids as m; print(m.__file__)"]
    assert subprocess.run(probe, cwd=tmp_path, env=env, capture_output=True).returncode != 0
    subprocess.run(["bash", scripts["torch.yaml"]], cwd=tmp_path, env=env, check=True, capture_output=True)
    out = subprocess.run(probe, cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert Path(out.strip()) == REPO / "scripts" / "worldmemory" / "common" / "ids.py"


@pytest.mark.workflow
def test_the_workflow_runs_as_a_module_of_another_repository(tmp_path):
    (tmp_path / "config.yaml").write_text((REPO / "tests" / "config" / "tiny_worldmembench.yaml").read_text())
    (tmp_path / "Snakefile").write_text(
        'configfile: "config.yaml"\n\n\n'
        "module worldmemory:\n"
        f"    snakefile: {str(REPO / 'Snakefile')!r}\n"
        "    config: config\n\n\n"
        "use rule * from worldmemory as worldmemory_*\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "results/table2.csv"],
                            cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "rule worldmemory_worldmembench_table2:" in result.stdout
    assert "python -m worldmemory.worldmembench.cases --out results/worldmembench/cases" in result.stdout
    assert yaml.safe_load((tmp_path / "results" / "config" / "resolved.json").read_text())["worldmembench"]
