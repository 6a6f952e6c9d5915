"""Which mutants change only the human message of an error, finding or hint.

A mutant is *message-only* when its function and the original parse to the same
syntax tree except for ``str`` constants, and every changed constant sits in a place
whose value can only become message text:

- the message argument of a call to a function or class of ``ptn/`` that takes one:
  a parameter (or dataclass field) named ``message``, ``why`` or ``hint``, found by
  reading ``ptn/`` itself (``PtnError(rule, message)``, ``Finding(..., message)``,
  ``Sink.add(rule, member, message, severity)``, ``_err(rule, where, message)``...);
- the value assigned to a variable named for message text (``hint``, ``message``...).

Everything else counts as behaviour: bytes, rule ids, severities, member names,
``struct``/``memoryview`` format codes, kind tags, dictionary keys. The check reads
syntax trees (``ast``), never tokens, so it gives the same verdict on every Python
(3.12 tokenizes f-strings differently from 3.11; their trees are the same).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

MESSAGE_PARAMS = frozenset({"message", "why", "hint"})
"""Parameter names that carry message text (the names ``ptn/`` uses)."""
MESSAGE_VARIABLES = frozenset({"message", "msg", "why", "hint", "hints", "detail"})
"""Local variables whose value only ever becomes message text."""


@dataclass
class Signatures:
    """Callee name -> the positions and keywords of its message argument."""

    positions: dict[str, set[int]] = field(default_factory=dict)
    keywords: dict[str, set[str]] = field(default_factory=dict)

    def add(self, name: str, position: int | None, keyword: str) -> None:
        if position is not None:
            self.positions.setdefault(name, set()).add(position)
        self.keywords.setdefault(name, set()).add(keyword)

    def message_args(self, call: ast.Call) -> Iterator[ast.expr]:
        """The arguments of ``call`` that are message text."""
        name = _callee(call)
        if name is None:
            return
        for i in self.positions.get(name, ()):
            if i < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:i]):
                yield call.args[i]
        for kw in call.keywords:
            if kw.arg is not None and kw.arg in self.keywords.get(name, ()):
                yield kw.value


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _message_param(args: ast.arguments, method: bool) -> tuple[int | None, str] | None:
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if method and positional and positional[0] in {"self", "cls"}:
        positional = positional[1:]
    for i, name in enumerate(positional):
        if name in MESSAGE_PARAMS:
            return i, name
    for a in args.kwonlyargs:
        if a.arg in MESSAGE_PARAMS:
            return None, a.arg
    return None


def _is_dataclass(node: ast.ClassDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id == "dataclass":
            return True
        if isinstance(target, ast.Attribute) and target.attr == "dataclass":
            return True
    return False


def signatures(sources: Iterable[str]) -> Signatures:
    """The message arguments of every function, method and class defined in ``sources``."""
    found = Signatures()
    bases: dict[str, list[str]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name != "__init__":
                hit = _message_param(node.args, method=True)
                if hit is not None:
                    found.add(node.name, *hit)
            if not isinstance(node, ast.ClassDef):
                continue
            bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
            init = next(
                (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
                None,
            )
            if init is not None:
                hit = _message_param(init.args, method=True)
                if hit is not None:
                    found.add(node.name, *hit)
            elif _is_dataclass(node):
                fields = [
                    n.target.id
                    for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                ]
                for i, name in enumerate(fields):
                    if name in MESSAGE_PARAMS:
                        found.add(node.name, i, name)
    # A class without its own __init__ takes its message where its base does.
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name in found.keywords:
                continue
            for parent in parents:
                if parent in found.keywords:
                    found.positions[name] = set(found.positions.get(parent, ()))
                    found.keywords[name] = set(found.keywords[parent])
                    changed = True
                    break
    return found


def ptn_signatures(root: Path) -> Signatures:
    """``signatures`` of every module under ``root/ptn``."""
    paths = sorted((root / "ptn").rglob("*.py"))
    return signatures(p.read_text(encoding="utf-8") for p in paths)


def _message_nodes(tree: ast.AST, sigs: Signatures) -> set[int]:
    """ids of the nodes of ``tree`` that lie inside message text."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            roots.extend(sigs.message_args(node))
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and all(
                isinstance(t, ast.Name) and t.id in MESSAGE_VARIABLES for t in targets
            ):
                roots.append(node.value)
    return {id(n) for root in roots for n in ast.walk(root)}


def _differences(old: ast.AST, new: ast.AST) -> Iterator[tuple[ast.AST, ast.AST] | None]:
    """Pairs of differing ``str`` constants; None for any other difference."""
    if type(old) is not type(new):
        yield None
        return
    if isinstance(old, ast.Constant) and isinstance(new, ast.Constant):
        if type(old.value) is not type(new.value):
            yield None
        elif old.value != new.value:
            yield (old, new) if isinstance(old.value, str) else None
        return
    for name in old._fields:
        a, b = getattr(old, name, None), getattr(new, name, None)
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                yield None
                continue
            for x, y in zip(a, b, strict=True):
                if isinstance(x, ast.AST) and isinstance(y, ast.AST):
                    yield from _differences(x, y)
                elif x != y:
                    yield None
        elif isinstance(a, ast.AST) and isinstance(b, ast.AST):
            yield from _differences(a, b)
        elif a != b:
            yield None


def message_only(old_source: str, new_source: str, sigs: Signatures) -> bool:
    """Whether ``new_source`` differs from ``old_source`` only in message text."""
    try:
        old, new = ast.parse(old_source), ast.parse(new_source)
    except SyntaxError:
        return False
    in_message = _message_nodes(old, sigs)
    diffs = list(_differences(old, new))
    return bool(diffs) and all(d is not None and id(d[0]) in in_message for d in diffs)
