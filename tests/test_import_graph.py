"""The package's import graph: no circles, no upward arrows.

Every import counts, module-level and function-local alike (an import inside a function is a
dependency all the same); only imports under ``if TYPE_CHECKING:`` are left out, as they never
run. An arrow goes from a file to the most specific package file it names (``from gym_motion.a
import b`` is an arrow to ``a/b.py`` when that file exists, else to ``a/__init__.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gym_motion"

# Layers, lowest first: a file may import files of its own layer (without circles) and of the
# layers below it, never above. The first matching prefix (a module path, "/"-separated,
# without ".py") gives a file's layer.
LAYERS = (
    ("core", ("config_values", "atomic", "gl", "curriculum", "robots", "kernels", "motion",
              "backends")),
    ("env", ("managers", "envs", "render", "__init__")),
    ("policies", ("policy", "evaluate", "video", "play", "viewer", "deploy", "bench")),
    ("adapters", ("adapters",)),
    ("training", ("training",)),
    ("cli", ("cli",)),
)  # fmt: skip


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _files() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _targets(node: ast.AST, module: str, is_package: bool, files: dict[str, Path]) -> list[str]:
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            parts = parts if is_package else parts[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
    out = []
    for name in names:
        while name and name not in files:  # `import gym_motion.a.b.c as x` -> the deepest file
            name = name.rpartition(".")[0]
        if name.startswith("gym_motion"):
            out.append(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (all imports but TYPE_CHECKING ones)."""
    files = _files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_lines(tree)
        edges = graph.setdefault(module, set())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and node.lineno not in skip:
                edges.update(_targets(node, module, path.name == "__init__.py", files))
        edges.discard(module)
    return graph


def _layer(module: str) -> int:
    rel = module.removeprefix("gym_motion").lstrip(".").replace(".", "/") or "__init__"
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(rel == p or rel.startswith(p + "/") for p in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer of tests/test_import_graph.py")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_function_local_imports():
    graph = import_graph()
    # `gym_motion.cli.train` imports the training skeleton only inside its run function
    assert "gym_motion.training.skeleton" in graph["gym_motion.cli.train"] or (
        "gym_motion.training" in graph["gym_motion.cli.train"]
    )
    assert "gym_motion.envs.tracking" in graph["gym_motion.training.skeleton"]


def test_no_import_circles():
    assert _cycles(import_graph()) == []


def test_no_upward_imports():
    graph = import_graph()
    upward = sorted(
        f"{a} ({LAYERS[_layer(a)][0]}) -> {b} ({LAYERS[_layer(b)][0]})"
        for a, targets in graph.items()
        for b in targets
        if _layer(b) > _layer(a)
    )
    assert upward == []


@pytest.mark.parametrize("module", ["gym_motion.policy", "gym_motion.curriculum"])
def test_the_lowest_modules_import_nothing_of_the_package(module):
    # the curriculum terms check their params as every config does
    allowed = {"gym_motion.config_values"} if module == "gym_motion.curriculum" else set()
    assert import_graph()[module] == allowed
