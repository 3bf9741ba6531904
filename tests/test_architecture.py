"""The house as docs/architecture.md draws it: two packages, ``app`` (the classroom server) above
``loop_stepper`` (what runs in the user's own Python), each of packages by concept in layers, no
import running back up (``if TYPE_CHECKING`` imports included), and one class per name across
both.

Read from the source with ``ast``: nothing of either is imported, so a cycle that Python would
only meet at run time in some order is found all the same."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
LIBRARY = ROOT / "loop_stepper"
PACKAGES = (APP, LIBRARY)

# Top to bottom: a package may import only those on a lower row. Packages on one row are
# siblings and import neither each other. The top-level modules count as packages of their own;
# ``loop_stepper`` alone is its facade (``loop_stepper/__init__.py``). The server sits above the
# library, which never imports it.
LAYERS: list[set[str]] = [
    {"app.cli"},
    {"app.main"},
    {"app.web"},
    {"app.lectures", "app.lessons", "app.lti"},
    {"app.sessions", "app.predict", "app.export", "app.settings"},
    {"app.db"},
    {"app.log"},
    {"app.engine"},
    {"app.spec"},
    {"app.torchlock"},
    {"loop_stepper.__main__"},
    {"loop_stepper.cli"},
    {"loop_stepper"},
    {"loop_stepper.notebook"},
    {"loop_stepper.doctor"},
    {"loop_stepper.recorder"},
    {"loop_stepper.stores"},
]
# What the library may import beyond the standard library: torch and numpy (the lean install),
# IPython and anywidget (the notebook extra). Never the server's stack.
LIBRARY_MAY_IMPORT = {"torch", "numpy", "IPython", "anywidget", "traitlets"}


def sources() -> list[Path]:
    return sorted(p for root in PACKAGES for p in root.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package(module: str) -> str:
    """The room a module lives in: ``app.web.api`` is in ``app.web``, ``app.main`` is
    ``app.main``, ``loop_stepper`` (the facade) is ``loop_stepper``."""
    return ".".join(module.split(".")[:2])


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imported_names(path: Path) -> set[str]:
    """Every module name this file imports, anywhere in it (functions, TYPE_CHECKING), with
    relative imports made absolute; ``from a.b import c`` gives ``a.b.c`` where that is a
    module of ours, else ``a.b``."""
    this = module_name(path)
    here = this.split(".") if path.name == "__init__.py" else this.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if is_module(sub) else target)
    return found


def imports(path: Path) -> set[str]:
    """Every module of ``app`` or ``loop_stepper`` this file imports."""
    ours = {"app", "loop_stepper"}
    return {n for n in imported_names(path) if n.split(".")[0] in ours} - {module_name(path)}


def module_graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in sources()}


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
        str(p.relative_to(ROOT)): n
        for p in sources()
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


def test_the_library_never_imports_the_server() -> None:
    """``loop_stepper`` runs in a student's Colab or an engineer's project: no import of ``app``
    (whose name a user's own project may hold), nor of the server's stack."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    foreign = {
        str(path.relative_to(ROOT)): sorted(outside)
        for path in sorted(LIBRARY.rglob("*.py"))
        if (
            outside := {
                top
                for n in imported_names(path)
                if (top := n.split(".")[0]) not in stdlib | LIBRARY_MAY_IMPORT | {"loop_stepper"}
            }
        )
    }
    assert foreign == {}


def test_one_class_per_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(module_name(path))
    twice = {name: places for name, places in where.items() if len(places) > 1}
    assert twice == {}


def test_the_map_is_the_tree() -> None:
    """docs/architecture.md's map of the code names every package of app/ and loop_stepper/,
    one line each."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(
        f"{root.name}/{p.parent.name}/" for root in PACKAGES for p in root.glob("*/__init__.py")
    )
    missing = [p for p in packages if p not in text]
    assert missing == []
