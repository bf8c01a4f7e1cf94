"""The import graph of the three packages: no cycles (counting imports inside functions and
under ``TYPE_CHECKING``), arrows between the top-level folders point one way, and the pure core
imports nothing that does I/O. Read from the source with ``ast``, so an import that only runs in
one code path still counts."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"kconfigs": "kconfigs", "enforcement": "kconfigs_enforcement", "spark_analysis": "kconfigs_analysis"}
# compiled modules (no .py source) that are imported by name
EXTENSIONS = {"kconfigs_enforcement._native"}
# lower layers first: a package may import only those before it
LAYERS = ["kconfigs", "kconfigs_enforcement", "kconfigs_analysis"]
# values plus now_ms in, values or a kconfigs error out (docs/ARCHITECTURE.md)
PURE_CORE = [
    "kconfigs.errors",
    "kconfigs.sanitize",
    "kconfigs.model",
    "kconfigs.keys",
    "kconfigs.javafmt",
    "kconfigs.config_grammar",
    "kconfigs_enforcement.stats",
    "kconfigs_enforcement.sensors",
    "kconfigs_enforcement.throttle",
    "kconfigs_enforcement.token_bucket",
    "kconfigs_enforcement.resolution",
    "kconfigs_enforcement.quota_manager",
    "kconfigs_enforcement.fleet_share",
    "kconfigs_analysis.rollup",
    "kconfigs_analysis.top_model",
    "kconfigs_analysis.traffic_model",
]
IO_MODULES = {
    "os",
    "io",
    "socket",
    "ssl",
    "asyncio",
    "selectors",
    "subprocess",
    "threading",
    "time",
    "sqlite3",
    "logging",
    "pathlib",
    "shutil",
    "tempfile",
    "http",
    "urllib.request",
    "kazoo",
    "kafka",
    "pyspark",
    "click",
    "rich",
    "yaml",
    "tomllib",
    "prometheus_client",
}


# (module, import): the one environment read below the adapters: which rate implementation runs
# (native or pure Python) is chosen once per process at import, like the extension's presence
ALLOWED_IO = {("kconfigs_enforcement.rates", "os")}


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for folder, name in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [name, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name ``module`` imports anywhere in its source, made absolute."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)
            names.add(base)
    return names


def _direct_targets(module: str, path: Path, known: set[str]) -> set[str]:
    """What ``module`` really imports: ``from pkg import sub`` counts as ``pkg.sub`` when sub is a
    module, else as ``pkg``."""
    targets: set[str] = set()
    for name in _imported_names(module, path):
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            targets.add(name)
    return targets


@functools.lru_cache(maxsize=None)
def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules) | EXTENSIONS
    graph = {}
    for module, path in modules.items():
        targets = _direct_targets(module, path, known)
        # a "from pkg import name" also yields "pkg"; drop it when every name it imports is a submodule
        graph[module] = {t for t in targets if not _only_submodules_of(t, module, path, known)}
    return graph


def _only_submodules_of(package: str, module: str, path: Path, known: set[str]) -> bool:
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and _absolute(node, module, path) == package:
            if any(f"{package}.{alias.name}" not in known for alias in node.names):
                return False
        elif isinstance(node, ast.Import) and any(alias.name == package for alias in node.names):
            return False
    return True


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    base = node.module or ""
    if not node.level:
        return base
    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(anchor + ([base] if base else []))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_no_module_imports_another_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_cycle_finder_counts_imports_inside_functions(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from kconfigs import model\n    import kconfigs.keys\n")
    assert _imported_names("kconfigs.m", source) >= {"kconfigs.model", "kconfigs.keys"}


def test_arrows_between_the_top_level_packages_point_one_way():
    upward = sorted(f"{m} -> {t}" for m, targets in import_graph().items() for t in targets if _layer(t) > _layer(m))
    assert upward == []


@pytest.mark.parametrize("module", PURE_CORE)
def test_pure_core_imports_nothing_with_io(module):
    graph = import_graph()
    modules = _modules()
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        if current in seen or current not in modules:
            continue
        seen.add(current)
        todo.extend(graph[current])
    used = set()
    for current in seen:
        for name in _imported_names(current, modules[current]):
            if (name.split(".")[0] in IO_MODULES or name in IO_MODULES) and (current, name) not in ALLOWED_IO:
                used.add(f"{current}: {name}")
    assert sorted(used) == []


def test_every_package_folder_is_installed_under_the_projects_names():
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {installed: folder for folder, installed in FOLDERS.items()}
    assert setuptools["package-dir"] == folders
    packages = {module for module, path in _modules().items() if path.name == "__init__.py"}
    assert sorted(setuptools["packages"]) == sorted(packages)
    assert all(name.split(".")[0].startswith("kconfigs") for name in packages)


def test_nothing_imports_a_folder_by_a_name_that_is_not_installed():
    uninstalled = {folder for folder, installed in FOLDERS.items() if folder != installed}
    found = sorted(
        f"{module}: {name}"
        for module, path in _modules().items()
        for name in _imported_names(module, path)
        if name.split(".")[0] in uninstalled
    )
    assert found == []
