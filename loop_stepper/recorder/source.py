"""A cell's source as the recorder reads it: its statements, which line belongs to which, the
names each one assigns and the loops around it, each loop's variables, and what a statement
does to a tensor in ways no version counter tells (``p.data += …``) or reads as ``.grad`` (read
once from the AST, before it runs)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

LOOPS = (ast.For, ast.AsyncFor, ast.While)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # each line, as ast splits them
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)  # their bodies run elsewhere
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
    line of each loop's header). ``touches``: the names whose objects it changes through an
    attribute, an item or an in-place method (``p.requires_grad = True``, ``p.data += …``,
    ``w.grad.zero_()``: ``p``, ``w``); ``data``: it changes a tensor through ``.data`` (which
    bumps no version of the tensor's own); ``grad``: it reads a ``.grad`` (not only to clear
    it); ``calls``: it calls something (which may change a tensor without a version, through
    ``.data``: a framework's step), where ``x = y[i]``, ``a, b = b, a + b`` or ``return a, b``
    call nothing that could."""

    first: int
    last: int
    code: str
    compound: bool
    assigns: tuple[str, ...] = ()
    loops: tuple[int, ...] = ()
    touches: tuple[str, ...] = ()
    data: bool = False
    grad: bool = False
    calls: bool = True


@dataclass
class Source:
    """The statements of ``text`` by line; a loop by its header's line, with the line of the
    first statement of its body (where each of its passes starts)."""

    text: str
    statements: dict[int, Statement] = field(default_factory=dict)  # by first line
    at_line: dict[int, Statement] = field(default_factory=dict)  # every line of each
    loop_starts: dict[int, int] = field(default_factory=dict)  # body's first line -> header
    loop_targets: dict[int, tuple[str, ...]] = field(default_factory=dict)  # header -> names
    loop_variables: frozenset[str] = frozenset()  # every name a loop of the source binds
    _lines: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def parse(cls, text: str) -> Source:
        """``text``'s statements; a SyntaxError is Python's own."""
        source = cls(text)
        tree = ast.parse(text)
        source._visit(tree.body, ())
        bound = {n for names in source.loop_targets.values() for n in names}
        for node in ast.walk(tree):
            if isinstance(node, ast.comprehension):
                bound |= _names(node.target)
        source.loop_variables = frozenset(bound)
        return source

    def _visit(self, body: list[ast.stmt], loops: tuple[int, ...]) -> None:
        if not self._lines:
            self._lines = _LINE.findall(self.text)
        for node in body:
            first, last = node.lineno, node.end_lineno or node.lineno
            compound = isinstance(node, COMPOUND)
            code = self._lines[first - 1].strip() if compound else _segment(self._lines, node)
            statement = Statement(
                first,
                last,
                code,
                compound,
                _assigned(node),
                loops,
                *_touched(node, compound),
                calls=compound or any(isinstance(sub, ast.Call) for sub in ast.walk(node)),
            )
            self.statements[first] = statement
            # a compound statement owns only its header's lines; its body's lines are its
            # statements' own (visited after, so they overwrite)
            header_end = _header_end(node) if compound else last
            for line in range(first, header_end + 1):
                self.at_line[line] = statement
            inner = (*loops, first) if isinstance(node, LOOPS) else loops
            if isinstance(node, DEFINITIONS):
                inner = ()  # a def's body runs when called, in no loop of its own yet
            if isinstance(node, ast.For | ast.AsyncFor):
                self.loop_targets[first] = tuple(sorted(_names(node.target)))
            for child in _bodies(node):
                if child:
                    if isinstance(node, LOOPS) and child is node.body:
                        self.loop_starts[child[0].lineno] = first
                    self._visit(child, inner if child is getattr(node, "body", None) else loops)


def _segment(lines: list[str], node: ast.stmt) -> str:
    """``node``'s text, as ``ast.get_source_segment`` gives it (which splits the whole
    source again at each call: a cell of many statements took quadratic time)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset
    if end is None:
        return ""
    if first == last:
        return lines[first].encode()[start:end].decode()
    head = lines[first].encode()[start:].decode()
    return "".join([head, *lines[first + 1 : last], lines[last].encode()[:end].decode()])


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


def _names(target: ast.expr) -> set[str]:
    return {sub.id for sub in ast.walk(target) if isinstance(sub, ast.Name)}


def _base(node: ast.expr) -> str | None:
    """The name an attribute or item chain starts from (``p.data[0]``: ``p``)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _touched(node: ast.stmt, compound: bool) -> tuple[tuple[str, ...], bool, bool]:
    """``touches``, ``data`` and ``grad`` of a simple statement (see ``Statement``)."""
    if compound:
        return (), False, False
    changed: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        changed = [t for t in node.targets if isinstance(t, ast.Attribute | ast.Subscript)]
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        changed = [node.target] if isinstance(node.target, ast.Attribute | ast.Subscript) else []
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_"):  # add_, zero_, copy_
            changed = [func.value]
    names = tuple(dict.fromkeys(n for n in map(_base, changed) if n is not None))
    data = any(
        isinstance(sub, ast.Attribute) and sub.attr == "data"
        for t in changed
        for sub in ast.walk(t)
    )
    clears = {id(sub) for t in changed for sub in ast.walk(t)}  # p.grad.zero_() reads none
    grad = any(
        isinstance(sub, ast.Attribute)
        and sub.attr == "grad"
        and isinstance(sub.ctx, ast.Load)
        and id(sub) not in clears
        for sub in ast.walk(node)
    )
    return names, data, grad
