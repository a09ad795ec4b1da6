"""The package's layers (ARCHITECTURE.md, "Layout"): each layer imports only from the layers below it,
and no study imports another study; what two packages of one layer both need moves down a layer.

Bottom to top: common -> models, worlds, external, report -> perception -> the studies (permanence,
persistbench, worldmembench) -> workflow (the Snakefile's Python side). ARCHITECTURE.md lists
models, worlds, external and report side by side under perception, so they are one layer here and
do not import each other. Every import counts, at any depth (inside a function too), relative ones
resolved, and so does a string that is a whole module path (``worldmemory.x.y`` or
``worldmemory.x.y:attr``): what ``importlib`` loads by name (perception.registry's backends).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "scripts" / "worldmemory"
LAYERS = (("common",), ("models", "worlds", "external", "report"), ("perception",),
          ("permanence", "persistbench", "worldmembench"), ("workflow",))
RANK = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}
MODULE_PATH = re.compile(r"worldmemory(\.\w+)+(:\w+)?")


def imported(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every worldmemory module that the module ``module`` imports (dotted, a
    package's own as ``package.__init__``, so that a relative import resolves from its file)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative to the importing module's package
                parent = module.split(".")[:-node.level]
                base = ".".join(parent + ([node.module] if node.module else []))
            # `from worldmemory import perception` names the subpackage in the alias
            names = [f"{base}.{alias.name}" for alias in node.names] if base == "worldmemory" else [base]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_PATH.fullmatch(node.value):
            found.append((node.lineno, node.value.split(":")[0]))
    return [(line, name) for line, name in found if name.startswith("worldmemory.")]


def violations(package_dir: Path) -> list[str]:
    """Every import of ``package_dir``'s modules that reaches up or sideways, as 'file:line: a -> b (why)'."""
    problems = []
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if len(parts) < 3:  # the package's own __init__ belongs to no layer
            continue
        package = parts[1]
        if package not in RANK:
            problems.append(f"{path}: package {package!r} has no layer; add it to LAYERS (ARCHITECTURE.md)")
            continue
        for line, name in imported(ast.parse(path.read_text(), str(path)), ".".join(parts)):
            target = name.split(".")[1]
            if target == package:
                continue
            if target not in RANK:
                why = f"{target!r} has no layer"
            elif RANK[target] > RANK[package]:
                why = "a layer above"
            elif RANK[target] == RANK[package]:
                why = "the same layer: move what both need down a layer"
            else:
                continue
            problems.append(f"{path.relative_to(package_dir.parent)}:{line}: {package} imports {name} ({why})")
    return problems


def test_no_module_imports_from_a_layer_above_or_beside_it():
    assert violations(PACKAGE) == []


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(RANK)


def test_a_planted_import_up_or_sideways_is_found(tmp_path):
    """The checker itself: a world reaching up into a study from inside a function, a study reaching
    sideways into another by a relative import and by a registry string, a package with no layer."""
    root = tmp_path / "worldmemory"
    files = {
        "__init__.py": "",
        "common/geometry.py": "import numpy\n",
        "worlds/world360.py": "from worldmemory.common import geometry\n\n\ndef f():\n"
                              "    from worldmemory.persistbench.equirect import perspective\n",
        "persistbench/equirect.py": "from ..worldmembench import cases\nfrom . import plan\n",
        "persistbench/__init__.py": "from .plan import BACKEND\n",
        "persistbench/plan.py": "BACKEND = 'worldmemory.permanence.probe:Prober'\nTEXT = 'see worldmemory.workflow'\n",
        "workflow/launch.py": "import worldmemory.persistbench.plan\nfrom worldmemory import worlds\n",
        "extra/thing.py": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert violations(root) == [
        f"{root / 'extra/thing.py'}: package 'extra' has no layer; add it to LAYERS (ARCHITECTURE.md)",
        "worldmemory/persistbench/equirect.py:1: persistbench imports worldmemory.worldmembench "
        "(the same layer: move what both need down a layer)",
        "worldmemory/persistbench/plan.py:1: persistbench imports worldmemory.permanence.probe "
        "(the same layer: move what both need down a layer)",
        "worldmemory/worlds/world360.py:5: worlds imports worldmemory.persistbench.equirect (a layer above)",
    ]
