"""A small Wadler-Lindig pretty printer, the kind JAX uses to print jaxprs.

A document is built from five pieces: ``text``, ``brk`` (a place where the line may
break), ``concat``, ``nest`` (indent whatever follows a break inside it) and ``group``
(lay out my content on one line if it fits in the width, otherwise break every ``brk``
that belongs directly to me). This is why a short jaxpr prints on one line and a long one
prints one equation per line, without the jaxpr printer ever measuring anything itself.

Reference: C. Lindig, *Strictly Pretty* (2000).
"""

from __future__ import annotations

from dataclasses import dataclass

WIDTH = 80


class Doc:
    def __add__(self, other: Doc) -> Doc:
        return concat([self, other])

    def format(self, width: int = WIDTH) -> str:
        return _format(self, width)

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class _Text(Doc):
    text: str


@dataclass(frozen=True)
class _Break(Doc):
    text: str  # what the break prints when its group is laid out flat


@dataclass(frozen=True)
class _Concat(Doc):
    children: tuple[Doc, ...]


@dataclass(frozen=True)
class _Nest(Doc):
    indent: int
    child: Doc


@dataclass(frozen=True)
class _Group(Doc):
    child: Doc


def text(s: str) -> Doc:
    return _Text(s)


def brk(s: str = " ") -> Doc:
    return _Break(s)


def concat(docs) -> Doc:
    return _Concat(tuple(docs))


def nest(indent: int, doc: Doc) -> Doc:
    return _Nest(indent, doc)


def group(doc: Doc) -> Doc:
    return _Group(doc)


def join(separator: Doc, docs) -> Doc:
    """``docs`` with ``separator`` between each pair."""
    out: list[Doc] = []
    for i, doc in enumerate(docs):
        if i:
            out.append(separator)
        out.append(doc)
    return concat(out)


def _fits(width: int, todo: list[tuple[int, bool, Doc]]) -> bool:
    """Does the group on top of ``todo`` fit on the rest of the line, laid out flat?"""
    stack = list(todo)
    while width >= 0:
        if not stack:
            return True
        indent, flat, doc = stack.pop()
        if isinstance(doc, _Text):
            width -= len(doc.text)
        elif isinstance(doc, _Break):
            if not flat:
                return True
            width -= len(doc.text)
        elif isinstance(doc, _Concat):
            stack.extend((indent, flat, child) for child in reversed(doc.children))
        elif isinstance(doc, _Nest):
            stack.append((indent + doc.indent, flat, doc.child))
        elif isinstance(doc, _Group):
            stack.append((indent, flat, doc.child))
    return False


def _format(doc: Doc, width: int) -> str:
    out: list[str] = []
    column = 0
    # Each entry: (indentation, laid out flat?, document)
    todo: list[tuple[int, bool, Doc]] = [(0, False, doc)]
    while todo:
        indent, flat, doc = todo.pop()
        if isinstance(doc, _Text):
            out.append(doc.text)
            column += len(doc.text)
        elif isinstance(doc, _Break):
            if flat:
                out.append(doc.text)
                column += len(doc.text)
            else:
                out.append("\n" + " " * indent)
                column = indent
        elif isinstance(doc, _Concat):
            todo.extend((indent, flat, child) for child in reversed(doc.children))
        elif isinstance(doc, _Nest):
            todo.append((indent + doc.indent, flat, doc.child))
        elif isinstance(doc, _Group):
            fits = flat or _fits(width - column, [(indent, True, doc.child)])
            todo.append((indent, fits, doc.child))
    return "".join(out)
