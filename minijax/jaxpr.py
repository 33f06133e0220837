"""Jaxprs: minijax's intermediate representation, as plain data with a printer.

A jaxpr is a list of equations ``outvars = primitive[params] invars`` between typed
variables, with input variables, output atoms and *constvars* (arrays captured from
Python, passed in beside the inputs). An atom is a :class:`Var` or a :class:`Literal`
(a scalar constant written inline, like ``2.0:f32[]``). Control-flow primitives carry
jaxprs in their params, so the structure nests.

The printer reproduces JAX's format, e.g.::

    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }

Variables have no names of their own: the printer names them ``a, b, ..., z, ba, bb``
in order of appearance, exactly as JAX does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import pretty_printer as pp
from minijax.core import Primitive, ShapedArray

# ---------------------------------------------------------------------------------------
# The data
# ---------------------------------------------------------------------------------------


class Var:
    """A variable of a jaxpr. Identity is the object itself; names come from the printer."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation, e.g. ``2.0:f32[]``."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, aval: ShapedArray) -> None:
        self.value = value
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({_literal_text(self)})"


Atom = Var | Literal


class JaxprEqn:
    """One equation: ``outvars = primitive[params] invars``."""

    __slots__ = ("primitive", "invars", "outvars", "params")

    def __init__(self, primitive: Primitive, invars: list[Atom], outvars: list[Var],
                 params: dict[str, Any]) -> None:
        self.primitive = primitive
        self.invars = invars
        self.outvars = outvars
        self.params = params

    def __repr__(self) -> str:
        return str(pp_eqn(self, _Names()))


class Jaxpr:
    """A function in equations: ``{ lambda constvars ; invars . let eqns in outvars }``."""

    __slots__ = ("constvars", "invars", "outvars", "eqns")

    def __init__(self, constvars: list[Var], invars: list[Var], outvars: list[Atom],
                 eqns: list[JaxprEqn]) -> None:
        self.constvars = constvars
        self.invars = invars
        self.outvars = outvars
        self.eqns = eqns

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def pretty_print(self, width: int = pp.WIDTH) -> str:
        return pp_jaxpr(self, _Names()).format(width)

    def __str__(self) -> str:
        return self.pretty_print()

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars: a self-contained function."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]) -> None:
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def pretty_print(self, width: int = pp.WIDTH) -> str:
        return self.jaxpr.pretty_print(width)

    def __str__(self) -> str:
        return self.pretty_print()

    __repr__ = __str__


# ---------------------------------------------------------------------------------------
# Evaluation: bind each equation's primitive under whatever trace is current
# ---------------------------------------------------------------------------------------


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Run ``jaxpr`` on ``args``: a tiny interpreter that binds every equation.

    Because it *binds* (rather than computing with NumPy), evaluating a jaxpr under a
    transformation transforms it: this is how control-flow bodies get differentiated,
    traced again or evaluated eagerly, with one function.
    """
    env: dict[Var, Any] = {}

    def read(atom: Atom) -> Any:
        return atom.value if type(atom) is Literal else env[atom]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[var] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[var] = value
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for var, value in zip(eqn.outvars, outs, strict=True):
            env[var] = value
    return [read(atom) for atom in jaxpr.outvars]


def eval_closed_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# ---------------------------------------------------------------------------------------
# Printing in JAX's format
# ---------------------------------------------------------------------------------------


class _Names:
    """Hands out ``a, b, ..., z, ba, bb, ...`` to variables in order of first appearance."""

    def __init__(self) -> None:
        self.names: dict[Var, str] = {}

    def __getitem__(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = _nth_name(len(self.names))
        return self.names[var]


def _nth_name(n: int) -> str:
    letters = ""
    while True:
        n, digit = divmod(n, 26)
        letters = chr(ord("a") + digit) + letters
        if n == 0:
            return letters


def _literal_text(lit: Literal) -> str:
    value = np.asarray(lit.value, dtype=lit.aval.dtype)[()]
    return f"{value}:{lit.aval.str_short()}"


def pp_atom(atom: Atom, names: _Names) -> str:
    if type(atom) is Literal:
        return _literal_text(atom)
    return names[atom]


def pp_binder(var: Var, names: _Names, used: set[Var] | None = None) -> str:
    """A variable where it is defined, with its type: ``b:f32[3]`` (``_`` if never used)."""
    if used is not None and var not in used:
        return f"_:{var.aval.str_short()}"
    return f"{names[var]}:{var.aval.str_short()}"


# Primitives whose params print differently from ``name=value`` in sorted order register
# a function here: params -> list of (name, value) pairs to print, in order.
pp_param_rules: dict[Primitive, Callable[[dict[str, Any]], list[tuple[str, Any]]]] = {}


def pp_param_value(value: Any, names: _Names) -> pp.Doc:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        inner = value if isinstance(value, Jaxpr) else value.jaxpr
        return pp_jaxpr(inner, names, top_level=False)
    if isinstance(value, tuple) and value and all(
        isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value
    ):
        inner = [pp_param_value(v, names) for v in value]
        return pp.group(pp.concat([
            pp.text("("), pp.nest(2, pp.concat([pp.brk(""), pp.join(pp.brk(), inner)])),
            pp.brk(""), pp.text(")"),
        ]))
    if isinstance(value, np.dtype):
        return pp.text(value.name)
    if isinstance(value, type) and issubclass(value, np.generic):
        return pp.text(np.dtype(value).name)
    return pp.text(str(value))


def pp_params(eqn: JaxprEqn, names: _Names) -> pp.Doc:
    rule = pp_param_rules.get(eqn.primitive)
    items = rule(eqn.params) if rule else sorted(eqn.params.items())
    if not items:
        return pp.text("")
    docs = [pp.text(f"{key}=") + pp_param_value(value, names) for key, value in items]
    return pp.group(pp.concat([
        pp.text("["), pp.nest(2, pp.concat([pp.brk(""), pp.join(pp.brk(), docs)])),
        pp.brk(""), pp.text("]"),
    ]))


def pp_eqn(eqn: JaxprEqn, names: _Names, used: set[Var] | None = None) -> pp.Doc:
    lhs = " ".join(pp_binder(v, names, used) for v in eqn.outvars)
    args = " ".join(pp_atom(a, names) for a in eqn.invars)
    head = f"{lhs} = {eqn.primitive.name}" if lhs else eqn.primitive.name  # no outputs: no "="
    return pp.concat([pp.text(head), pp_params(eqn, names), pp.text(f" {args}")])


def _used_vars(jaxpr: Jaxpr) -> set[Var]:
    used = {a for a in jaxpr.outvars if type(a) is Var}
    for eqn in jaxpr.eqns:
        used.update(a for a in eqn.invars if type(a) is Var)
    return used


def pp_jaxpr(jaxpr: Jaxpr, names: _Names, top_level: bool = True) -> pp.Doc:
    """The jaxpr as a document. As in JAX, unused results print as ``_`` only at the top
    level, not inside the jaxprs that control-flow equations carry."""
    used = _used_vars(jaxpr) if top_level else None
    constvars = " ".join(pp_binder(v, names) for v in jaxpr.constvars)
    invars = " ".join(pp_binder(v, names) for v in jaxpr.invars)
    eqns = pp.join(pp.brk("; "), [pp_eqn(e, names, used) for e in jaxpr.eqns])
    outs = [pp_atom(a, names) for a in jaxpr.outvars]
    outvars = "(" + ", ".join(outs) + ("," if len(outs) == 1 else "") + ")"
    return pp.group(pp.concat([
        pp.text(f"{{ lambda {constvars}; {invars}. let"),
        pp.nest(2, pp.concat([
            pp.nest(2, pp.concat([pp.brk(), eqns])), pp.brk(), pp.text(f"in {outvars}"),
        ])),
        pp.text(" }"),
    ]))
