"""Differentiating ``jit``: its JVP, partial-evaluation and transpose rules.

A jitted call is one equation, ``jit[name=f jaxpr={ ... }]``, whose body is a jaxpr. Each
rule transforms the *body*, as a jaxpr, and binds ``jit`` again with the result, so that
what a transformation produces is still compiled code run as one job:

* **JVP**: ``jit`` of the body's JVP, which takes the primals and the non-zero tangents
  and returns the primal outputs and the non-zero output tangents.
* **Partial evaluation**, the first half of reverse mode: ``grad`` meets that JVP'd call
  with known primals and unknown tangents. The body is split in two (see
  ``control_flow_ad.partial_eval_jaxpr``): a *known* ``jit``, run at once, that returns
  the primal outputs and the *residuals*, the known values the tangent computation
  needs; and an *unknown* ``jit``, recorded into the linearization, that takes the
  residuals and the tangents. Under eager ``grad`` the known half is therefore one
  compiled job, not the body's operations one by one.
* **Transposition**, the second half: ``jit`` of the transposed body, which takes the
  residuals and the output cotangents and returns the cotangents of the linear inputs.

A residual that is merely a known input, a constant of the body or a primal output is
not returned by the known ``jit`` a second time: the unknown ``jit`` is handed that value
directly (JAX calls this forwarding, and its jaxprs show the same calls).

Every body derived here is remembered per original body, for as long as that body lives
(and ``jit``'s cache keeps it alive). ``grad(jit(f))`` called again with the same types
thus neither retraces ``f`` (``jit``'s cache sees to that) nor re-derives or recompiles
its known and transposed halves: they are the same jaxprs, whose compiled programs are
cached too.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from minijax import core
from minijax.compiler.jit import _tracer_consts_as_inputs, executable_for, jit_p
from minijax.core import Tracer
from minijax.interpreters import ad
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.ad import Zero
from minijax.interpreters.control_flow_ad import (
    _closed,
    _merge,
    _pick,
    jvp_jaxpr,
    partial_eval_jaxpr,
)
from minijax.interpreters.partial_eval import PartialEvalTrace
from minijax.interpreters.transpose import backward_pass, is_undefined, transpose_rules
from minijax.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, split_list
from minijax.tracing import trace_to_jaxpr

# ---------------------------------------------------------------------------------------
# Derived bodies, remembered per body
# ---------------------------------------------------------------------------------------

T = TypeVar("T")
_derived: weakref.WeakKeyDictionary[ClosedJaxpr, dict[tuple, Any]] = \
    weakref.WeakKeyDictionary()


def _memoized(body: ClosedJaxpr, key: tuple, derive: Callable[[], T]) -> T:
    """``derive()``, remembered for ``body`` and ``key`` while ``body`` lives. A result
    that captured a tracer of an enclosing transformation (a custom rule may close over
    one) belongs to that transformation alone and is not remembered."""
    table = _derived.setdefault(body, {})
    result = table.get(key)
    if result is None:
        result = derive()
        if not any(isinstance(c, Tracer) for j in result if isinstance(j, ClosedJaxpr)
                   for c in j.consts):
            table[key] = result
    return result


def _bind(body: ClosedJaxpr, args: Sequence[Any], params: dict[str, Any],
          donated: Sequence[bool]) -> list[Any]:
    """Bind ``jit`` with a derived body, named like the original call. Captured tracers of
    enclosing transformations are passed as leading operands, as ``jit`` itself does.
    Evaluated eagerly, the body is compiled here, before the job is queued, so that a
    failure to compile is raised by this call rather than by a later read of a result."""
    body, operands = _tracer_consts_as_inputs(body)
    if core.current_trace() is core.eval_trace:
        executable_for(body, params["name"], params["keep_unused"])
    return jit_p.bind(*operands, *args, jaxpr=body, name=params["name"],
                      donated_invars=(False,) * len(operands) + tuple(donated),
                      keep_unused=params["keep_unused"])


# ---------------------------------------------------------------------------------------
# JVP: jit of the JVP'd body
# ---------------------------------------------------------------------------------------


def _jvp_body(body: ClosedJaxpr, nonzeros: tuple[bool, ...]) -> tuple[ClosedJaxpr, list[bool]]:
    jaxpr, consts, out_nonzeros = jvp_jaxpr(body, nonzeros, [False] * len(body.out_avals))
    return _closed(jaxpr, consts), out_nonzeros


def _jit_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr,
             **params: Any) -> tuple[list[Any], list[Any]]:
    """One ``jit`` computing the primal outputs and their tangents."""
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    body, out_nonzeros = _memoized(jaxpr, ("jvp", nonzeros), lambda: _jvp_body(jaxpr, nonzeros))
    given = _pick(tangents, nonzeros)
    outs = _bind(body, [*primals, *given], params,
                 [*params["donated_invars"], *[False] * len(given)])
    primals_out, tangents_out = split_list(outs, len(jaxpr.out_avals))
    zeros = [Zero.like(p) for p, nz in zip(primals_out, out_nonzeros) if not nz]
    return primals_out, _merge(out_nonzeros, tangents_out, zeros)


# ---------------------------------------------------------------------------------------
# Partial evaluation: a known jit run now, an unknown jit recorded
# ---------------------------------------------------------------------------------------


class _Split(NamedTuple):
    """A body split for known and unknown inputs.

    ``known`` maps the known inputs to the values it has to compute; ``unknown`` maps
    the residuals, then the unknown inputs, to the unknown outputs. ``outputs`` (for the
    known outputs) and ``residuals`` say where each value comes from: ``("input", i)``
    the i-th known input, ``("const", value)`` a constant of the body, ``("computed",
    i)`` the i-th output of ``known``.
    """

    known: ClosedJaxpr
    unknown: ClosedJaxpr
    unknown_outputs: list[bool]
    outputs: list[tuple[str, Any]]
    residuals: list[tuple[str, Any]]


def _split_body(body: ClosedJaxpr, unknown_inputs: tuple[bool, ...]) -> _Split:
    known, unknown, unknown_outputs, num_res = partial_eval_jaxpr(
        body, unknown_inputs, [False] * len(body.out_avals))
    k = known.jaxpr
    outs, residual_vars = split_list(k.outvars, len(k.outvars) - num_res)
    inputs = {v: i for i, v in enumerate(k.invars)}
    consts = dict(zip(k.constvars, known.consts))
    computed: list[Atom] = []

    def source(v: Atom, is_residual: bool) -> tuple[str, Any]:
        """Known inputs are forwarded; a residual may also be a constant, or a value the
        known half already returns."""
        if v in inputs:
            return ("input", inputs[v])
        if is_residual and v in consts:
            return ("const", consts[v])
        if not (is_residual and v in computed):
            computed.append(v)
        return ("computed", computed.index(v))

    outputs = [source(v, False) for v in outs]
    residuals = [source(v, True) for v in residual_vars]
    known = ClosedJaxpr(Jaxpr(k.constvars, k.invars, computed, k.eqns), known.consts)
    return _Split(known, unknown, unknown_outputs, outputs, residuals)


def _jit_partial_eval(trace: PartialEvalTrace, args: tuple, params: dict[str, Any]
                      ) -> list[Any]:
    """Run the known half of the call now (with the parent trace) and record the unknown
    half on the residuals and the unknown operands. The known half is bound even when it
    computes nothing, as JAX does (its jaxprs show it)."""
    body = params["jaxpr"]
    unknown = tuple(trace.is_unknown(x) for x in args)
    split = _memoized(body, ("partial_eval", unknown), lambda: _split_body(body, unknown))
    known_args = _pick(args, unknown, keep=False)
    with core.set_current_trace(trace.parent):
        computed = _bind(split.known, known_args, params,
                         _pick(params["donated_invars"], unknown, keep=False))
    values = {"input": known_args, "computed": computed}

    def value(kind: str, x: Any) -> Any:
        return x if kind == "const" else values[kind][x]

    known_outs = [value(*s) for s in split.outputs]
    unknown_outs = []
    if any(split.unknown_outputs):
        operands = [*(value(*s) for s in split.residuals), *_pick(args, unknown)]
        unknown_outs = trace.record(jit_p, operands, dict(
            params, jaxpr=split.unknown, donated_invars=(False,) * len(operands)))
    return _merge(split.unknown_outputs, unknown_outs, known_outs)


# ---------------------------------------------------------------------------------------
# Transposition: jit of the transposed body
# ---------------------------------------------------------------------------------------


class _Transposed(NamedTuple):
    """A transposed body. It takes those residuals and given output cotangents that it
    uses (``used_inputs`` says which) and returns the cotangents of the linear inputs,
    except those that are symbolically zero (``nonzero`` says which it returns)."""

    body: ClosedJaxpr
    used_inputs: list[bool]
    nonzero: list[bool]


def _transpose_body(body: ClosedJaxpr, linear: tuple[bool, ...], given: tuple[bool, ...]
                    ) -> _Transposed:
    res_avals = _pick(body.in_avals, linear, keep=False)
    zero_cts = [Zero(a) for a in _pick(body.out_avals, given, keep=False)]
    n_linear = linear.count(True)
    nonzero: list[bool] = []

    def transposed(*args: Any) -> list[Any]:
        residuals, cts = split_list(args, len(res_avals))
        cts_in = backward_pass(body.jaxpr, body.consts, linear,
                               _merge(linear, [None] * n_linear, residuals),
                               _merge(given, cts, zero_cts))
        cts_in = _pick(cts_in, linear)
        nonzero[:] = [type(ct) is not Zero for ct in cts_in]
        return _pick(cts_in, nonzero)

    closed = trace_to_jaxpr(transposed, [*res_avals, *_pick(body.out_avals, given)])
    closed, used = pe.dce_jaxpr(closed, True)
    return _Transposed(closed, used, nonzero)


def _jit_transpose(cts: list[Any], *args: Any, jaxpr: ClosedJaxpr, **params: Any
                   ) -> list[Any]:
    """Cotangents of the linear operands, computed by one ``jit``."""
    linear = tuple(is_undefined(x) for x in args)
    given = tuple(type(ct) is not Zero for ct in cts)
    transposed = _memoized(jaxpr, ("transpose", linear, given),
                           lambda: _transpose_body(jaxpr, linear, given))
    operands = _pick([*_pick(args, linear, keep=False), *_pick(cts, given)],
                     transposed.used_inputs)
    nonzero = transposed.nonzero
    outs = _bind(transposed.body, operands, params, [False] * len(operands)) \
        if any(nonzero) else []
    zeros = [Zero(x.aval) for x, nz in zip(_pick(args, linear), nonzero) if not nz]
    return _merge(linear, _merge(nonzero, outs, zeros), [None] * linear.count(False))


# ---------------------------------------------------------------------------------------
# Dead-code elimination: a jit without the outputs nobody uses
# ---------------------------------------------------------------------------------------


def _jit_dce(eqn: JaxprEqn, used_outputs: list[bool]) -> JaxprEqn:
    """The call with only the used outputs: its body loses what computed the others, and
    the call the operands the body no longer reads (even with ``keep_unused``, as in
    JAX: that option is about the arguments of a compiled call, not about a nested one)."""
    body, used_inputs = pe.dce_jaxpr(eqn.params["jaxpr"], used_outputs)
    params = dict(eqn.params, jaxpr=body,
                  donated_invars=tuple(_pick(eqn.params["donated_invars"], used_inputs)))
    return JaxprEqn(jit_p, _pick(eqn.invars, used_inputs), _pick(eqn.outvars, used_outputs),
                    params, eqn.source_info)


ad.jvp_rules[jit_p] = _jit_jvp
pe.partial_eval_rules[jit_p] = _jit_partial_eval
transpose_rules[jit_p] = _jit_transpose
pe.dce_rules[jit_p] = _jit_dce
