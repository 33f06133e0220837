"""Partial evaluation: compute what is known now, record what is not.

:class:`PartialEvalTrace` is the trace that turns forward-mode AD into a *linearization*.
Its own tracers stand for values that are not known yet (tangents). For every primitive:

* if none of the inputs is one of its tracers, every input is known: the primitive is
  simply applied by the parent trace (eagerly, or by an outer transformation);
* otherwise the primitive is *recorded* as an equation of a jaxpr, and the known inputs
  it uses become constants of that jaxpr -- the *residuals* of reverse mode.

Run a JVP with tangents that are unknown, and primal computations happen at once while
tangent computations are recorded: the recording is a jaxpr that maps input tangents to
output tangents, linear by construction. ``transpose.py`` runs it backwards.

The module also holds jaxpr-level tools: dead-code elimination (:func:`dce_jaxpr`, the
one every transformation and lowering use) and splitting a jaxpr into a known and an
unknown part (for the AD of ``jit`` and control flow).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any

from minijax import core, flags
from minijax.core import Primitive, Trace
from minijax.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Var,
    consts_as_inputs,
    eval_closed_jaxpr,
    has_effects,
    interleave,
    pick,
)
from minijax.tracing import JaxprTrace, JaxprTracer, trace_to_jaxpr

# primitive -> rule(trace, args, params) for primitives that can do better than being
# recorded whole when some inputs are known (e.g. cond and scan split their bodies).
partial_eval_rules: dict[Primitive, Callable[..., Any]] = {}


class PartialEvalTrace(JaxprTrace):
    """Applies known computations with ``parent`` and records unknown ones."""

    def __init__(self, parent: Trace) -> None:
        super().__init__(parent.tracing_context)
        self.parent = parent

    def is_unknown(self, x: Any) -> bool:
        return isinstance(x, JaxprTracer) and x._trace is self

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        if not any(map(self.is_unknown, args)):
            with core.set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        rule = partial_eval_rules.get(primitive)
        if rule is not None:
            return rule(self, args, params)
        return super().process_primitive(primitive, args, params)

    def record(self, primitive: Primitive, args: Sequence[Any], params: dict) -> Any:
        """Record ``primitive`` as an equation whatever its inputs (for partial-eval rules).
        (``super()``: the base class, even while a learner's ``JaxprTrace`` is installed.)"""
        return super().process_primitive(primitive, tuple(args), params)


# ---------------------------------------------------------------------------------------
# Jaxpr-level tools
# ---------------------------------------------------------------------------------------


# primitive -> rule(eqn, used_outputs) -> smaller eqn, for equations that carry jaxprs
# (jit, cond, scan): they drop the outputs nobody uses, what computes them inside, and
# then the operands nothing needs any more. A rule is only asked about an equation that
# stays (some output is used, or it has effects); the operands of the equation it
# returns are the ones it needs.
dce_rules: dict[Primitive, Callable[[JaxprEqn, list[bool]], JaxprEqn]] = {}

# closed jaxpr -> {(used_outputs, instantiate): (smaller jaxpr, used_inputs)}, while the
# jaxpr lives. A body called twice (one jitted function called in two places) is cut
# into one object, so lowering still emits a single function for both calls.
_dce_memo: weakref.WeakKeyDictionary[ClosedJaxpr, dict[tuple, tuple[ClosedJaxpr, tuple]]] = \
    weakref.WeakKeyDictionary()
flags.on_pieces_change(_dce_memo.clear)  # a nested body may have been cut by a learner's DCE


def dce_jaxpr(closed: ClosedJaxpr, used_outputs: bool | Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[ClosedJaxpr, list[bool]]:
    """``closed`` with only the outputs marked in ``used_outputs`` and what they need.

    Equations whose results nobody uses go (inside nested jaxprs too, by
    :data:`dce_rules`), then the constants and the inputs nothing reads, except the
    inputs marked in ``instantiate``. Equations with effects (debug printing, maybe
    inside a nested jaxpr) stay. Returns the smaller jaxpr and which inputs it kept.
    A flag stands for one per output (or input), as in JAX's ``pe.dce_jaxpr``.
    """
    jaxpr = closed.jaxpr
    key = (_flags(used_outputs, len(jaxpr.outvars)), _flags(instantiate, len(jaxpr.invars)))
    memo = _dce_memo.setdefault(closed, {})
    if key not in memo:
        memo[key] = _dce(closed, *key)
    smaller, used_inputs = memo[key]
    return smaller, list(used_inputs)


def _flags(flags: bool | Sequence[bool], count: int) -> tuple[bool, ...]:
    return (flags,) * count if isinstance(flags, bool) else tuple(flags)


def _dce(closed: ClosedJaxpr, used_outputs: tuple[bool, ...], instantiate: tuple[bool, ...]
         ) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """Walk the equations backwards, keeping those that compute a live variable."""
    jaxpr = closed.jaxpr
    outvars = list(compress(jaxpr.outvars, used_outputs))
    live = {v for v in outvars if type(v) is Var}
    kept: list[JaxprEqn] = []
    for eqn in reversed(jaxpr.eqns):
        used = [v in live for v in eqn.outvars]
        if not any(used) and not has_effects(Jaxpr([], [], [], [eqn])):
            continue
        rule = dce_rules.get(eqn.primitive)
        if rule is not None:
            eqn = rule(eqn, used)
        kept.append(eqn)
        live.update(v for v in eqn.invars if type(v) is Var)
    used_inputs = tuple(v in live or keep for v, keep in zip(jaxpr.invars, instantiate))
    used_consts = [v in live for v in jaxpr.constvars]
    smaller = Jaxpr(list(compress(jaxpr.constvars, used_consts)),
                    list(compress(jaxpr.invars, used_inputs)), outvars, kept[::-1])
    return ClosedJaxpr(smaller, list(compress(closed.consts, used_consts))), used_inputs


def without_dead_code(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` without the equations (inside nested jaxprs too) and constants that no
    output needs; its inputs are kept."""
    return dce_jaxpr(closed, True, instantiate=True)[0]


def dependent_vars(jaxpr: Jaxpr, inputs: Sequence[bool]) -> set[Var]:
    """The variables that depend on the selected inputs: the unknown values of a partial
    evaluation, or the linear values of a transposition."""
    dependent = {v for v, selected in zip(jaxpr.invars, inputs) if selected}
    for eqn in jaxpr.eqns:
        if any(type(v) is Var and v in dependent for v in eqn.invars):
            dependent.update(eqn.outvars)
    return dependent


def partial_eval_jaxpr(closed: ClosedJaxpr, unknown_inputs: Sequence[bool]
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split a jaxpr into what can be computed from its known inputs and what cannot.

    Returns ``(known, unknown, unknown_outputs, num_residuals)``:

    * ``known`` takes the known inputs and returns the known outputs followed by the
      residuals (known values the unknown part needs);
    * ``unknown`` takes the residuals followed by the unknown inputs and returns the
      unknown outputs.

    An equation is known if all its inputs are. This is the offline twin of
    :class:`PartialEvalTrace`, needed where a whole jaxpr must be split at once (the
    body of a ``scan``, say).
    """
    jaxpr = closed.jaxpr
    unknown = dependent_vars(jaxpr, unknown_inputs)
    known_eqns = [e for e in jaxpr.eqns if not any(v in unknown for v in e.outvars)]
    unknown_eqns = [e for e in jaxpr.eqns if any(v in unknown for v in e.outvars)]
    unknown_outputs = [type(v) is Var and v in unknown for v in jaxpr.outvars]

    needed_by_unknown: list[Var] = []
    for eqn in unknown_eqns:
        for v in eqn.invars:
            if type(v) is Var and v not in unknown and v not in needed_by_unknown:
                needed_by_unknown.append(v)
    residuals = [v for v in needed_by_unknown if v not in jaxpr.constvars]
    res_consts = [v for v in needed_by_unknown if v in jaxpr.constvars]

    known_in = [v for v, u in zip(jaxpr.invars, unknown_inputs) if not u]
    known_out = [v for v, u in zip(jaxpr.outvars, unknown_outputs) if not u]
    known = Jaxpr(jaxpr.constvars, known_in, known_out + residuals, known_eqns)

    res_vars = [Var(v.aval) for v in residuals]
    rename = dict(zip(residuals, res_vars))
    unknown_in = [v for v, u in zip(jaxpr.invars, unknown_inputs) if u]
    unk = Jaxpr(res_consts, res_vars + unknown_in,
                [rename.get(v, v) if type(v) is Var else v
                 for v, u in zip(jaxpr.outvars, unknown_outputs) if u],
                [_renamed(e, rename) for e in unknown_eqns])
    const_values = dict(zip(jaxpr.constvars, closed.consts))
    return (ClosedJaxpr(known, closed.consts),
            ClosedJaxpr(unk, [const_values[v] for v in res_consts]),
            unknown_outputs, len(residuals))


def partial_eval_jaxpr_nounits(closed: ClosedJaxpr, unknown_inputs: Sequence[bool],
                               instantiate: Sequence[bool]
                               ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split a jaxpr into a known and an unknown part, by running it under partial
    evaluation while tracing the known part: how the partial-evaluation rules of
    primitives that carry jaxprs (``jit``, ``cond``, the loops) split their bodies.

    Returns ``(known, unknown, unknown_outputs, num_residuals)`` like
    :func:`partial_eval_jaxpr`; unlike it, equations that have their own
    partial-evaluation rule are split too (a ``cond`` inside a ``scan`` body), and the
    outputs marked in ``instantiate`` are made unknown even where they could be computed
    now (branches of a ``cond`` must agree on which outputs are unknown, and so must a
    loop's carry from one iteration to the next): the known part computes such an output
    as one more residual, which the unknown part returns.

    How: the known part is traced into a jaxpr; inside that trace, a
    :class:`PartialEvalTrace` evaluates the jaxpr, handing known operations to the
    tracing (they become the known jaxpr) and recording unknown ones. The known values
    the unknown recording captured are the residuals.
    """
    known_avals = pick(closed.in_avals, unknown_inputs, keep=False)
    unknown_avals = pick(closed.in_avals, unknown_inputs)
    split: dict[str, Any] = {}

    def known_fun(*known_args: Any) -> list[Any]:
        trace = PartialEvalTrace(core.current_trace())
        try:
            unknown_args = [trace.new_arg(a) for a in unknown_avals]
            with core.set_current_trace(trace):
                outs = eval_closed_jaxpr(closed, *interleave(unknown_inputs, unknown_args,
                                                             known_args))
            out_uk = [trace.is_unknown(o) or force for o, force in zip(outs, instantiate)]
            split["unknown"] = trace.to_jaxpr(pick(outs, out_uk))
            split["out_uk"] = out_uk
        finally:
            trace.invalidate()
        return [*pick(outs, out_uk, keep=False), *split["unknown"].consts]

    known = trace_to_jaxpr(known_fun, known_avals)
    unknown, residuals = consts_as_inputs(split["unknown"])
    known = dce_jaxpr(known, True, instantiate=True)[0]
    return known, unknown, split["out_uk"], len(residuals)


def _renamed(eqn: JaxprEqn, rename: dict[Var, Var]) -> JaxprEqn:
    invars = [rename.get(v, v) if type(v) is Var else v for v in eqn.invars]
    return JaxprEqn(eqn.primitive, invars, eqn.outvars, eqn.params)

