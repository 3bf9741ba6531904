"""The house as docs/architecture.md draws it: packages by concept in layers, no import running
back up (``if TYPE_CHECKING`` imports included), and one class per name across ``app/``.

Read from the source with ``ast``: nothing of the app is imported, so a cycle that Python would
only meet at run time in some order is found all the same."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"

# Top to bottom: a package may import only those on a lower row. Packages on one row are
# siblings and import neither each other. The top-level modules count as packages of their own.
LAYERS: list[set[str]] = [
    {"cli"},
    {"main"},
    {"web"},
    {"lectures", "lessons", "lti", "notebook"},
    {"sessions", "predict", "export", "settings"},
    {"db", "doctor"},
    {"log", "recorder"},
    {"engine"},
    {"spec"},
    {"torchlock"},
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package(module: str) -> str:
    """The room a module lives in: ``app.web.api`` is in ``web``, ``app.main`` is ``main``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def is_module(name: str) -> bool:
    path = APP.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports(path: Path) -> set[str]:
    """Every module of ``app`` this file imports, anywhere in it (functions, TYPE_CHECKING)."""
    this = module_name(path)
    here = this.split(".") if path.name == "__init__.py" else this.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "app"}
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target.split(".")[0] != "app":
                continue
            for alias in node.names:  # ``from app.x import y`` may import the module x.y
                sub = f"{target}.{alias.name}"
                found.add(sub if is_module(sub) else target)
    return found - {this}


def module_graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in sorted(APP.rglob("*.py"))}


def package_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, targets in module_graph().items():
        if module == "app":
            continue
        edges[package(module)] |= {package(t) for t in targets} - {package(module)}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def test_no_cycle_between_packages() -> None:
    assert cycles(package_graph()) == []


def test_no_cycle_between_modules_of_different_packages() -> None:
    graph = module_graph()
    mixed = [c for c in cycles(graph) if len({package(m) for m in c}) > 1]
    assert mixed == []


def test_no_cycle_inside_a_package() -> None:
    """Not even one a type hint makes: each module of a package reads only those below it."""
    assert cycles(module_graph()) == []


def test_no_module_over_400_lines() -> None:
    long = {
        str(p.relative_to(APP.parent)): n
        for p in sorted(APP.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}


def test_cycles_are_found() -> None:
    """The walk itself: a cycle, and one through a TYPE_CHECKING import, are seen."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_layers_import_only_downwards() -> None:
    rank = {name: row for row, names in enumerate(LAYERS) for name in names}
    edges = package_graph()
    assert set(edges) <= set(rank), f"a package not in the layers: {set(edges) - set(rank)}"
    upwards = sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if rank[target] <= rank[source]
    )
    assert upwards == []


def test_the_public_package_sits_on_top() -> None:
    """``loop_stepper`` (what a notebook imports) uses the app; nothing of the app uses it."""
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not [n for n in names if n.split(".")[0] == "loop_stepper"], path


def test_one_class_per_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(module_name(path))
    twice = {name: places for name, places in where.items() if len(places) > 1}
    assert twice == {}


def test_the_map_is_the_tree() -> None:
    """docs/architecture.md's map of the code names every package of app/, one line each."""
    text = (APP.parent / "docs" / "architecture.md").read_text()
    packages = sorted(p.parent.name for p in APP.glob("*/__init__.py"))
    missing = [p for p in packages if f"app/{p}/" not in text]
    assert missing == []
