"""Transposition: running a linear jaxpr backwards. This is reverse-mode AD.

A linearization (``partial_eval.py``) is a jaxpr ``t_out = L(t_in)`` that is linear in its
inputs. Reverse mode needs the transpose, ``ct_in = Lᵀ(ct_out)``: given a cotangent for
every output, the cotangent of every input. For a *vector-Jacobian product* that is all
there is to it, because ``vᵀ J = (Jᵀ v)ᵀ``.

Transposition walks the equations from last to first. Each linear equation
``y = prim(x, c)`` (``x`` linear, ``c`` a constant) is replaced by its transpose rule,
which turns the cotangent of ``y`` into a cotangent for ``x``: for ``y = x * c`` it is
``ct_x = ct_y * c``; for ``y = x₁ + x₂`` both inputs receive ``ct_y``. A variable used
twice receives two contributions, which are added (``add_any``).

Transpose rules (in ``transpose_rules.py``) see their linear inputs as
:class:`UndefinedPrimal` objects: "the value you would be multiplying is unknown, only its
type is known".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minijax.core import Primitive, ShapedArray, get_aval
from minijax.interpreters.ad import Zero, add_tangents
from minijax.interpreters.partial_eval import dependent_vars
from minijax.jaxpr import Jaxpr, Literal, Var

# primitive -> rule(cotangent(s) of the outputs, *inputs, **params) -> cotangents of the
# inputs, one per input (``None`` for inputs that are not linear). Linear inputs arrive as
# ``UndefinedPrimal``; cotangents may be ``Zero``.
transpose_rules: dict[Primitive, Callable[..., Sequence[Any]]] = {}


class UndefinedPrimal:
    """Marks a linear input of an equation being transposed: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], linear_inputs: Sequence[bool],
                  args: Sequence[Any], cotangents_out: Sequence[Any],
                  starts: Sequence[Any] = ()) -> list[Any]:
    """Cotangents of the linear inputs of ``jaxpr``, given cotangents of its outputs.

    ``args`` holds a value for every non-linear input (ignored for linear ones).
    Equations that do not depend on linear inputs are evaluated forwards first: they
    compute constants the transposed equations need. The result has one entry per input:
    a cotangent (possibly ``Zero``) for linear inputs, ``None`` for the others.

    ``starts`` may give a linear input's cotangent a starting point other than a zero of
    its variable's type (``None`` keeps that): a value that its cotangents are added to
    as they arrive, or a ``Zero`` of another type. Either way, the input is seen with the
    starting point's type (``_scan_transpose`` says why a scan needs this).
    """
    linear = dependent_vars(jaxpr, linear_inputs)
    cotangents: dict[Var, Any] = {v: s for v, s in zip(jaxpr.invars, starts) if s is not None}
    start_avals = {v: s.aval if type(s) is Zero else get_aval(s)
                   for v, s in cotangents.items()}
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    for var, value, is_linear in zip(jaxpr.invars, args, linear_inputs):
        if not is_linear:
            env[var] = value
    for eqn in jaxpr.eqns:  # the forward part: constants only
        if not any(v in linear for v in eqn.outvars):
            outs = eqn.primitive.bind(*[_read(env, a) for a in eqn.invars], **eqn.params)
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))

    for var, ct in zip(jaxpr.outvars, cotangents_out):
        if type(var) is Var and var in linear:
            cotangents[var] = add_tangents(cotangents.get(var, Zero(var.aval)), ct)
    for eqn in reversed(jaxpr.eqns):
        if not any(v in linear for v in eqn.outvars):
            continue
        cts_out = [cotangents.pop(v, Zero(v.aval)) for v in eqn.outvars]
        if all(type(ct) is Zero for ct in cts_out):
            continue
        inputs = [UndefinedPrimal(start_avals.get(a, a.aval)) if type(a) is Var and a in linear
                  else _read(env, a) for a in eqn.invars]
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' "
                "not implemented"
            )
        cts_in = rule(cts_out if eqn.primitive.multiple_results else cts_out[0], *inputs,
                      **eqn.params)
        for var, ct in zip(eqn.invars, cts_in):
            if type(var) is Var and var in linear and ct is not None:
                cotangents[var] = add_tangents(cotangents.get(var, Zero(var.aval)), ct)
    return [cotangents.get(v, Zero(start_avals.get(v, v.aval))) if is_linear else None
            for v, is_linear in zip(jaxpr.invars, linear_inputs)]


def _read(env: dict[Var, Any], atom: Any) -> Any:
    return atom.value if type(atom) is Literal else env[atom]


def deftranspose(primitive: Primitive, rule: Callable[..., list[Any]]) -> None:
    """Register ``rule`` for a single-result primitive; a ``Zero`` cotangent gives ``Zero``
    cotangents without calling it."""

    def transpose(ct: Any, *inputs: Any, **params: Any) -> list[Any]:
        if type(ct) is Zero:
            return [Zero(x.aval) if is_undefined(x) else None for x in inputs]
        return rule(ct, *inputs, **params)

    transpose_rules[primitive] = transpose
