"""Jaxprs: minijax's intermediate representation, as plain data with a printer.

A jaxpr is a list of equations ``outvars = primitive[params] invars`` between typed
variables, with input variables, output atoms and *constvars* (arrays captured from
Python, passed in beside the inputs). An atom is a :class:`Var` or a :class:`Literal`
(a scalar constant written inline, like ``2.0:f32[]``). Control-flow primitives and
``jit`` carry jaxprs in their params, so the structure nests.

The printer reproduces JAX's format, e.g.::

    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }

Variables have no names of their own: the printer names them ``a, b, ..., z, ba, bb``
in order of first appearance, exactly as JAX does, with three refinements JAX also makes:

* a result nothing uses prints as ``_``;
* a nested jaxpr used by several equations (or a long one) is printed once, first, as
  ``let name = { ... } in``, and referred to by that name;
* the body of a ``jit`` equation is printed with its caller's names for its inputs and
  outputs (a primitive asks for this with a rule in :data:`pp_eqn_rules`).

:func:`check_jaxpr` (alias :func:`typecheck`) checks that a jaxpr is well formed.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from minijax import errors
from minijax import pretty_printer as pp
from minijax.core import Literal, Primitive, ShapedArray, eval_jaxpr

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


Atom = Var | Literal


class JaxprEqn:
    """One equation: ``outvars = primitive[params] invars``.

    ``source_info`` says where in the user's code the equation was recorded (see
    ``tracing.SourceInfo``); error messages about leaked tracers quote it.
    """

    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive: Primitive, invars: list[Atom], outvars: list[Var],
                 params: dict[str, Any], source_info: Any = None) -> None:
        self.primitive = primitive
        self.invars = invars
        self.outvars = outvars
        self.params = params
        self.source_info = source_info

    def __repr__(self) -> str:
        return str(pp_eqn(self, PrintContext()))


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
        return pp_toplevel_jaxpr(self).format(width)

    def __str__(self) -> str:
        return print_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars: a self-contained function."""

    __slots__ = ("jaxpr", "consts", "__weakref__")  # compiled programs are cached weakly

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]) -> None:
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def pretty_print(self, width: int = pp.WIDTH) -> str:
        return self.jaxpr.pretty_print(width)

    def __str__(self) -> str:
        return print_jaxpr(self.jaxpr)

    __repr__ = __str__


def jaxprs_in_params(params: dict[str, Any]) -> Iterator[Jaxpr]:
    """The jaxprs an equation carries (a ``cond``'s branches, a ``jit``'s body, ...)."""
    for value in params.values():
        for item in value if type(value) is tuple else (value,):
            if isinstance(item, ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, Jaxpr):
                yield item


# Primitives that do something besides computing their results (``debug_print``): they
# must run even if nothing uses their results, and in program order.
effectful_primitives: set[Primitive] = set()


def has_effects(jaxpr: Jaxpr) -> bool:
    """Does running ``jaxpr`` (or a jaxpr nested in it) do more than compute its outputs?"""
    return any(eqn.primitive in effectful_primitives
               or any(has_effects(inner) for inner in jaxprs_in_params(eqn.params))
               for eqn in jaxpr.eqns)


# ---------------------------------------------------------------------------------------
# Evaluation: bind each equation's primitive under whatever trace is current
# ---------------------------------------------------------------------------------------


def eval_closed_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# ---------------------------------------------------------------------------------------
# Printing in JAX's format
# ---------------------------------------------------------------------------------------


def _nth_name(n: int) -> str:
    letters = ""
    while True:
        n, digit = divmod(n, 26)
        letters = chr(ord("a") + digit) + letters
        if n == 0:
            return letters


class PrintContext:
    """The state of printing one top-level jaxpr: variable names, shared by all the jaxprs
    nested in it, and the names of the jaxprs printed once at the top (``let g = ...``).

    Fresh variable names skip the names of shared jaxprs, so that ``g`` always means one
    thing in the printout.
    """

    def __init__(self, names: dict[Var, str] | None = None) -> None:
        self.names: dict[Var, str] = dict(names or {})
        self.shared: dict[Jaxpr, str] = {}
        self._next = 0

    def share(self, jaxpr: Jaxpr, name: str) -> None:
        """Print ``jaxpr`` as ``name`` from now on (its body is printed at the top)."""
        self.shared[jaxpr] = name

    def name(self, var: Var) -> str:
        name = self.names.get(var)
        if name is None:
            name = self.names[var] = self._fresh_name()
        return name

    def _fresh_name(self) -> str:
        while True:
            name = _nth_name(self._next)
            self._next += 1
            if name not in self.shared.values():
                return name

    def suggest_names(self, inner: Sequence[Atom], outer: Sequence[Atom]) -> None:
        """Name the variables ``inner`` like the ``outer`` atoms they stand for, where
        both are variables and the inner one has no name yet (each outer name is lent
        once). This is how a ``jit`` body shows its caller's names."""
        if len(inner) != len(outer):
            return
        lent: set[Var] = set()
        for inner_var, outer_var in zip(inner, outer):
            if (type(inner_var) is Var and type(outer_var) is Var and outer_var not in lent
                    and inner_var not in self.names):
                lent.add(outer_var)
                self.names[inner_var] = self.name(outer_var)


def pp_atom(atom: Atom, context: PrintContext) -> str:
    if type(atom) is Literal:
        return atom.text()
    return context.name(atom)


def _pp_list(items: list[str], separator: str = "") -> pp.Doc:
    """Words that fill each line before breaking (variable lists: ``a:f32[] b:f32[]``)."""
    words = [pp.text(item) for item in items]
    return pp.nest(2, pp.group(pp.join(pp.text(separator) + pp.group(pp.brk()), words)))


def pp_binders(variables: Sequence[Var], context: PrintContext) -> pp.Doc:
    """Variables where they are defined, with their types: ``b:f32[3] c:i32[]``."""
    return _pp_list([f"{context.name(v)}:{v.aval.str_short()}" for v in variables])


# Primitives whose params print differently from ``name=value`` in sorted order register
# a function here: params -> list of (name, value) pairs to print, in order.
pp_param_rules: dict[Primitive, Callable[[dict[str, Any]], list[tuple[str, Any]]]] = {}

# Primitives that print their whole equation in their own way register a function here:
# (equation, context) -> document. ``jit`` uses it to lend its caller's names to its body.
pp_eqn_rules: dict[Primitive, Callable[[JaxprEqn, PrintContext], pp.Doc]] = {}


def pp_param_value(value: Any, context: PrintContext) -> pp.Doc:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        return pp_jaxpr(value if isinstance(value, Jaxpr) else value.jaxpr, context)
    if isinstance(value, tuple) and value and all(
        isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value
    ):
        inner = [pp_param_value(v, context) for v in value]
        return pp.group(pp.concat([
            pp.nest(2, pp.concat([pp.text("("), pp.brk(""), pp.join(pp.brk(), inner)])),
            pp.brk(""), pp.text(")"),
        ]))
    if isinstance(value, np.dtype):
        return pp.text(value.name)
    if isinstance(value, type) and issubclass(value, np.generic):
        return pp.text(np.dtype(value).name)
    return pp.text(str(value))


def pp_params(items: Sequence[tuple[str, Any]], context: PrintContext) -> pp.Doc:
    if not items:
        return pp.text("")
    docs = [pp.text(f"{key}=") + pp_param_value(value, context) for key, value in items]
    return pp.group(pp.concat([
        pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), docs)])),
        pp.brk(""), pp.text("]"),
    ]))


def pp_eqn(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
    rule = pp_eqn_rules.get(eqn.primitive)
    if rule is not None:
        return rule(eqn, context)
    param_rule = pp_param_rules.get(eqn.primitive)
    items = param_rule(eqn.params) if param_rule else sorted(eqn.params.items())
    return pp_eqn_with_params(eqn, context, items)


def pp_eqn_with_params(eqn: JaxprEqn, context: PrintContext,
                       items: Sequence[tuple[str, Any]]) -> pp.Doc:
    """``outs = name[params] ins``, printing the given (key, value) params in order."""
    lhs = pp_binders(eqn.outvars, context)
    rhs = [pp.text(eqn.primitive.name), pp_params(items, context),
           pp.text(" ") + _pp_list([pp_atom(a, context) for a in eqn.invars])]
    if not eqn.outvars:  # an equation with no results (debug_print) has no "="
        return pp.concat(rhs)
    return pp.concat([lhs, pp.text(" = "), *rhs])


def pp_jaxpr(jaxpr: Jaxpr, context: PrintContext) -> pp.Doc:
    """``{ lambda consts ; ins. let eqns in outs }``, or just its name if it is shared."""
    shared_name = context.shared.get(jaxpr)
    if shared_name is not None:
        return pp.text(shared_name)
    return _pp_jaxpr_body(jaxpr, context)


def _pp_jaxpr_body(jaxpr: Jaxpr, context: PrintContext) -> pp.Doc:
    constvars = pp_binders(jaxpr.constvars, context)
    invars = pp_binders(jaxpr.invars, context)
    eqns = pp.join(pp.brk("; "), [pp_eqn(e, context) for e in jaxpr.eqns])
    outs = [pp_atom(a, context) for a in jaxpr.outvars]
    outvars = pp.concat([pp.text("("), _pp_list(outs, ","),
                         pp.text(",)" if len(outs) == 1 else ")")])
    return pp.group(pp.nest(2, pp.concat([
        pp.text("{ lambda "), constvars, pp.text("; "), invars, pp.text(". let"),
        pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in "), outvars,
    ])) + pp.text(" }"))


def _unused_results(jaxpr: Jaxpr) -> dict[Var, str]:
    """Results of the top-level jaxpr's equations that nothing reads: they print as ``_``."""
    used = {a for a in jaxpr.outvars if type(a) is Var}
    unused = {}
    for eqn in reversed(jaxpr.eqns):
        unused.update((v, "_") for v in eqn.outvars if v not in used)
        used.update(a for a in eqn.invars if type(a) is Var)
    return unused


# Nested jaxprs with more equations than this are printed at the top, like shared ones.
LONG_JAXPR = 10


def _shared_jaxprs(top: Jaxpr) -> list[tuple[str, Jaxpr]]:
    """The nested jaxprs to print once at the top: those used more than once, and long
    ones. Each is named after the ``name`` param of the equation that first carries it
    (``jit[name=f ...]`` -> ``f``; ``<lambda>`` -> ``lambda``), else ``jaxpr``; repeated
    names get a number (``f``, ``f1``, ...). Found breadth first, so in that order."""
    uses: Counter[Jaxpr] = Counter()
    names: dict[Jaxpr, str] = {}
    queue = deque([top])
    while queue:
        jaxpr = queue.popleft()
        uses[jaxpr] += 2 if jaxpr is not top and len(jaxpr.eqns) > LONG_JAXPR else 1
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            for inner in jaxprs_in_params(eqn.params):
                queue.append(inner)
                if isinstance(name, str):
                    names.setdefault(inner, name.strip("<>"))
    taken: Counter[str] = Counter()
    shared = []
    for jaxpr, count in uses.items():
        if count > 1:
            name = names.get(jaxpr, "jaxpr")
            if taken[name]:
                taken[name] += 1
                name = f"{name}{taken[name] - 1}"
            taken[name] += 1
            shared.append((name, jaxpr))
    return shared


def pp_toplevel_jaxpr(jaxpr: Jaxpr) -> pp.Doc:
    """The whole printout: shared jaxprs first (``let name = { ... } in``), then ``jaxpr``."""
    context = PrintContext(_unused_results(jaxpr))
    shared = _shared_jaxprs(jaxpr)
    for name, inner in shared:
        context.share(inner, name)
    docs = []
    for name, inner in shared:
        docs += [pp.text(f"let {name} = "), _pp_jaxpr_body(inner, context), pp.text(" in"),
                 pp.brk()]
    return pp.concat([*docs, pp_jaxpr(jaxpr, context)])


def print_jaxpr(jaxpr: Jaxpr) -> str:
    """``str(jaxpr)``: the printout at JAX's width. A function of its own so that a learner
    can write the printer as a function to a string (``minijax.pieces``, chapter 06)."""
    return pp_toplevel_jaxpr(jaxpr).format()


# ---------------------------------------------------------------------------------------
# Type checking
# ---------------------------------------------------------------------------------------


def _printed_names(top: Jaxpr) -> PrintContext:
    """The names ``top``'s variables get when it is printed on its own."""
    context = PrintContext(_unused_results(top))
    pp_jaxpr(top, context)
    return context


def _type_error(message: str, top: Jaxpr, eqn: JaxprEqn | None = None) -> errors.JaxprTypeError:
    """JAX's layout: the problem, the equation, where it came from, the whole jaxpr."""
    context = PrintContext(_unused_results(top))
    whole = pp_jaxpr(top, context).format()
    if eqn is not None:
        message += f"\n\nin equation:\n\n{pp_eqn(eqn, context).format()}"
        if eqn.source_info is not None:
            message += f"\n\nfrom source: {eqn.source_info}"
    return errors.JaxprTypeError(f"{message}\n\nwhile checking jaxpr:\n\n{whole}")


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Weak types may differ: they change how a value promotes, not what it is."""
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Check that ``jaxpr`` is well formed, or raise ``JaxprTypeError`` naming the equation.

    Every variable must be defined once, before it is used; each equation's inputs must
    be accepted by its primitive's shape rule, and its results must have the types the
    rule gives; nested jaxprs are checked too.
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise errors.JaxprTypeError(
                f"ClosedJaxpr has {len(jaxpr.jaxpr.constvars)} constvars but "
                f"{len(jaxpr.consts)} consts")
        jaxpr = jaxpr.jaxpr
    _check(jaxpr)


def _check(top: Jaxpr) -> None:
    defined: set[Var] = set()

    def define(var: Var, eqn: JaxprEqn | None) -> None:
        if var in defined:
            name = _printed_names(top).name(var)
            raise _type_error(f"Variable '{name}' already bound", top, eqn)
        defined.add(var)

    def read(atom: Atom, eqn: JaxprEqn | None) -> ShapedArray:
        if type(atom) is Var and atom not in defined:
            name = _printed_names(top).name(atom)
            raise _type_error(f"Variable '{name}' not defined", top, eqn)
        return atom.aval

    for var in [*top.constvars, *top.invars]:
        define(var, None)
    for eqn in top.eqns:
        in_avals = tuple(read(a, eqn) for a in eqn.invars)
        for inner in jaxprs_in_params(eqn.params):
            _check(inner)
        try:
            out_avals = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        except Exception as err:  # noqa: BLE001 - any rejection, reported with the equation
            raise _type_error(f"{type(err).__name__}: {err}", top, eqn) from err
        if not eqn.primitive.multiple_results:
            out_avals = [out_avals]
        if len(out_avals) != len(eqn.outvars):
            raise _type_error(f"{eqn.primitive.name} gives {len(out_avals)} results but the "
                              f"equation binds {len(eqn.outvars)}", top, eqn)
        for var, aval in zip(eqn.outvars, out_avals):
            if not _same_type(var.aval, aval):
                name = _printed_names(top).name(var)
                raise _type_error(
                    f"Value for variable '{name}' inconsistently typed as "
                    f"{aval.str_short()} for let-binder of type {var.aval.str_short()}",
                    top, eqn)
            define(var, eqn)
    for atom in top.outvars:
        read(atom, None)


typecheck = check_jaxpr


# ---------------------------------------------------------------------------------------
# Jaxpr surgery: the operands of control flow, and values a jaxpr passes through
# ---------------------------------------------------------------------------------------


def split_list(values: Sequence[Any], *sizes: int) -> list[list[Any]]:
    """``values`` cut into consecutive pieces of the given sizes, plus the rest: how the
    flat operands of a control-flow primitive (consts, carry, xs, ...) are taken apart."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(list(values[start:start + size]))
        start += size
    return [*pieces, list(values[start:])]

def pick(values: Sequence[Any], mask: Sequence[bool], keep: bool = True) -> list[Any]:
    """The values whose mask entry equals ``keep``: the known operands of an equation,
    say, or its linear ones."""
    return [v for v, m in zip(values, mask, strict=True) if m == keep]

def interleave(mask: Sequence[bool], if_true: Sequence[Any], if_false: Sequence[Any]
               ) -> list[Any]:
    """Two lists back into one, taking from ``if_true`` where ``mask`` is set: the inverse
    of :func:`pick` (``interleave(m, pick(v, m), pick(v, m, False)) == v``)."""
    t, f = iter(if_true), iter(if_false)
    return [next(t) if m else next(f) for m in mask]

def consts_as_inputs(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """Turn the captured constants into leading inputs: ``(jaxpr without consts, consts)``.

    A control-flow primitive receives the constants as operands, so that captured tracers
    of an enclosing trace become ordinary inputs of its equation.
    """
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], [*j.constvars, *j.invars], j.outvars, j.eqns), []), closed.consts

def inputs_as_consts(closed: ClosedJaxpr, consts: Sequence[Any]) -> ClosedJaxpr:
    """The inverse of :func:`consts_as_inputs`: a jaxpr whose first inputs stand for
    ``consts``, closed over those values again (``jit`` keeps its constants inside its
    body, and :func:`merge_consts` reads them there)."""
    j = closed.jaxpr
    n = len(consts)
    return ClosedJaxpr(Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns), list(consts))

def merge_consts(closed_jaxprs: Sequence[ClosedJaxpr]) -> tuple[list[ClosedJaxpr], list[Any]]:
    """Give several jaxprs (the branches of a ``cond``) one shared list of constants.

    Every jaxpr gets the union of all constants as leading inputs (one per distinct
    value), ignoring those it does not use; the branches can then be called alike.
    """
    consts: list[Any] = []
    seen: set[int] = set()
    for closed in closed_jaxprs:
        for c in closed.consts:
            if id(c) not in seen:
                seen.add(id(c))
                consts.append(c)
    merged = []
    for closed in closed_jaxprs:
        j = closed.jaxpr
        own = {id(c): v for c, v in zip(closed.consts, j.constvars, strict=True)}
        constvars = [own.get(id(c)) or Var(c.aval) for c in consts]
        merged.append(ClosedJaxpr(Jaxpr([], [*constvars, *j.invars], j.outvars, j.eqns), []))
    return merged, consts

def forwarded_inputs(jaxpr: Jaxpr) -> list[int | None]:
    """For each output: the index of the input it simply returns, or None."""
    position = {v: i for i, v in enumerate(jaxpr.invars)}
    return [position.get(v) if type(v) is Var else None for v in jaxpr.outvars]

def keep_outputs(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """The jaxpr with only the outputs marked in ``keep`` (equations are left alone)."""
    j = closed.jaxpr
    outvars = [v for v, k in zip(j.outvars, keep, strict=True) if k]
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, outvars, j.eqns), closed.consts)

def move_inputs_to_front(closed: ClosedJaxpr, to_move: Sequence[bool]) -> ClosedJaxpr:
    """Reorder the inputs: those marked in ``to_move`` first, the others after them."""
    j = closed.jaxpr
    moved = [v for v, m in zip(j.invars, to_move, strict=True) if m]
    rest = [v for v, m in zip(j.invars, to_move, strict=True) if not m]
    return ClosedJaxpr(Jaxpr(j.constvars, moved + rest, j.outvars, j.eqns), closed.consts)
