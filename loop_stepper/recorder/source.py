"""A cell's source as the recorder reads it: its statements, which line belongs to which, the
names each one assigns and the loops around it (read once from the AST, before it runs)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

LOOPS = (ast.For, ast.AsyncFor, ast.While)
# a statement holding others: its line runs (a loop's next pass, an if's test) but what it
# does is its body's statements, each a moment of its own
COMPOUND = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


@dataclass(frozen=True)
class Statement:
    """One statement of the source: its lines (1-based, both included), its text, the names it
    assigns (``out = model(x)``: ``out``) and the loops it is in, innermost last (by the
    line of each loop's header)."""

    first: int
    last: int
    code: str
    compound: bool
    assigns: tuple[str, ...] = ()
    loops: tuple[int, ...] = ()


@dataclass
class Source:
    """The statements of ``text`` by line; a loop by its header's line, with the line of the
    first statement of its body (where each of its passes starts)."""

    text: str
    statements: dict[int, Statement] = field(default_factory=dict)  # by first line
    at_line: dict[int, Statement] = field(default_factory=dict)  # every line of each
    loop_starts: dict[int, int] = field(default_factory=dict)  # body's first line -> header

    @classmethod
    def parse(cls, text: str) -> Source:
        """``text``'s statements; a SyntaxError is Python's own."""
        source = cls(text)
        source._visit(ast.parse(text).body, ())
        return source

    def _visit(self, body: list[ast.stmt], loops: tuple[int, ...]) -> None:
        for node in body:
            first, last = node.lineno, node.end_lineno or node.lineno
            compound = isinstance(node, COMPOUND)
            code = (
                self.text.splitlines()[first - 1].strip()
                if compound
                else ast.get_source_segment(self.text, node) or ""
            )
            statement = Statement(first, last, code, compound, _assigned(node), loops)
            self.statements[first] = statement
            # a compound statement owns only its header's lines; its body's lines are its
            # statements' own (visited after, so they overwrite)
            header_end = _header_end(node) if compound else last
            for line in range(first, header_end + 1):
                self.at_line[line] = statement
            inner = (*loops, first) if isinstance(node, LOOPS) else loops
            for child in _bodies(node):
                if child:
                    if isinstance(node, LOOPS) and child is node.body:
                        self.loop_starts[child[0].lineno] = first
                    self._visit(child, inner if child is getattr(node, "body", None) else loops)


def _bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside ``node``, the loop's body first."""
    found: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            found.append(value)
    for handler in getattr(node, "handlers", []):
        found.append(handler.body)
    for case in getattr(node, "cases", []):
        found.append(case.body)
    return found


def _header_end(node: ast.stmt) -> int:
    """The last line of a compound statement's header (the line before its body)."""
    bodies = _bodies(node)
    if not bodies:
        return node.lineno
    return max(node.lineno, min(b[0].lineno for b in bodies) - 1)


def _assigned(node: ast.stmt) -> tuple[str, ...]:
    """The plain names a simple statement binds (``a, b = …``, ``x += …``, ``y: T = …``)."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    names: list[str] = []
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and sub.id not in names:
                names.append(sub.id)
    return tuple(names)
