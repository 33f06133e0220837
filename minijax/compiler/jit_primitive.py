"""The ``jit`` primitive: what a jitted call is inside a trace, and how it runs.

``jit(f)`` (``jit.py``) traces ``f`` once per signature. Everywhere else the call is this
primitive: traced inside another function it is recorded as one equation,
``jit[name=f jaxpr={ ... }]``, whose body is the cached jaxpr; evaluated eagerly, its
``impl`` runs the compiled program. Its rules follow its definition: the derivative
rules (JVP, transpose, partial evaluation) and dead-code elimination transform the body
and bind ``jit`` again; batching does the same; lowering makes the body a function.

Running a body means compiling it: lowering it to a StableHLO module and handing that to
the backend that :func:`install_backend` installed (the NumPy backend installs itself;
it sits in a higher layer, so it is found here at call time rather than imported).
(Running a traced signature eagerly, as one job on the device's queue, is
``dispatch.py``'s.)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from minijax import core, flags
from minijax import pretty_printer as pp
from minijax.compiler import lowering
from minijax.core import Primitive, ShapedArray, Tracer
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.ad import Zero
from minijax.interpreters.transpose import backward_pass, is_undefined, transpose_rules
from minijax.jaxpr import (
    Atom,
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    PrintContext,
    inputs_as_consts,
    interleave,
    pick,
    pp_eqn_rules,
    pp_eqn_with_params,
    split_list,
)
from minijax.tracing import trace_to_jaxpr

# ---------------------------------------------------------------------------------------
# The primitive: outs = jit[name=f jaxpr={...}] *args
# ---------------------------------------------------------------------------------------


def _jit_rule(*avals: ShapedArray, jaxpr: ClosedJaxpr, **params: Any) -> list[ShapedArray]:
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
            (a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(avals, expected)):
        raise TypeError(f"jit of {params['name']} takes "
                        f"{[a.str_short() for a in expected]} but got "
                        f"{[a.str_short() for a in avals]}")
    return jaxpr.out_avals


def _jit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str, keep_unused: bool, **_: Any
              ) -> list[Any]:
    """Run on a device's worker thread: call the program compiled for ``jaxpr``."""
    return executable_for(jaxpr, name, keep_unused)(*args)


jit_p = Primitive("jit", multiple_results=True)
jit_p.def_abstract_eval(_jit_rule)
jit_p.def_impl(_jit_impl)


def _pp_jit(eqn: JaxprEqn, context: PrintContext) -> pp.Doc:
    """JAX's layout: ``name`` first; ``donated_invars`` and ``keep_unused`` only when they
    say something; the body printed with the caller's variable names."""
    params = eqn.params
    body = params["jaxpr"].jaxpr
    if body not in context.shared:
        context.suggest_names(body.invars, eqn.invars)
        context.suggest_names(body.outvars, eqn.outvars)
    items = [("name", params["name"])]
    if any(params["donated_invars"]):
        items.append(("donated_invars", params["donated_invars"]))
    items.append(("jaxpr", params["jaxpr"]))
    if params["keep_unused"]:
        items.append(("keep_unused", True))
    return pp_eqn_with_params(eqn, context, items)


pp_eqn_rules[jit_p] = _pp_jit


# ---------------------------------------------------------------------------------------
# Differentiating jit: JVP, transpose, partial evaluation and DCE rules
# ---------------------------------------------------------------------------------------
# Each rule transforms the *body*, as a jaxpr, and binds ``jit`` again with the result,
# so that what a transformation produces is still compiled code run as one job:
#
# * JVP: ``jit`` of the body's JVP, which takes the primals and the non-zero tangents
#   and returns the primal outputs and the non-zero output tangents.
# * Transposition, the second half of reverse mode: ``jit`` of the transposed body,
#   which takes the residuals and the output cotangents and returns the cotangents of
#   the linear inputs.
# * Partial evaluation, the first half: ``grad`` meets that JVP'd call with known
#   primals and unknown tangents. The body is split in two (see
#   ``partial_eval.partial_eval_jaxpr_nounits``): a *known* ``jit``, run at once, that
#   returns the primal outputs and the *residuals*, the known values the tangent
#   computation needs; and an *unknown* ``jit``, recorded into the linearization, that
#   takes the residuals and the tangents. Under eager ``grad`` the known half is
#   therefore one compiled job, not the body's operations one by one. A residual that
#   is merely a known input, a constant of the body or a primal output is not returned
#   by the known ``jit`` a second time: the unknown ``jit`` is handed that value
#   directly (JAX calls this forwarding, and its jaxprs show the same calls).
#
# Every body derived here is remembered per original body, for as long as that body
# lives (and ``jit``'s cache keeps it alive). ``grad(jit(f))`` called again with the same
# types thus neither retraces ``f`` (``jit``'s cache sees to that) nor re-derives or
# recompiles its known and transposed halves: they are the same jaxprs, whose compiled
# programs are cached too.

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


def _forget_derived() -> None:
    """A piece was installed or reset: derived bodies and compiled programs made with the
    previous pieces (a JVP rule, a lowering rule, ...) are made again."""
    _derived.clear()
    _executables.clear()


flags.on_pieces_change(_forget_derived)


def _bind_derived(body: ClosedJaxpr, args: Sequence[Any], params: dict[str, Any],
                  donated: Sequence[bool]) -> list[Any]:
    """Bind ``jit`` with a derived body, named like the original call. Captured tracers of
    enclosing transformations are passed as leading operands, as ``jit`` itself does.
    Evaluated eagerly, the body is compiled here, before the job is queued, so that a
    failure to compile is raised by this call rather than by a later read of a result."""
    body, operands = tracer_consts_as_inputs(body)
    if core.current_trace() is core.eval_trace:
        executable_for(body, params["name"], params["keep_unused"])
    return jit_p.bind(*operands, *args, jaxpr=body, name=params["name"],
                      donated_invars=(False,) * len(operands) + tuple(donated),
                      keep_unused=params["keep_unused"])


def _jvp_body(body: ClosedJaxpr, nonzeros: tuple[bool, ...]) -> tuple[ClosedJaxpr, list[bool]]:
    jaxpr, consts, out_nonzeros = ad.jvp_jaxpr(body, nonzeros, [False] * len(body.out_avals))
    return inputs_as_consts(jaxpr, consts), out_nonzeros


def _jit_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: ClosedJaxpr,
             **params: Any) -> tuple[list[Any], list[Any]]:
    """One ``jit`` computing the primal outputs and their tangents."""
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    body, out_nonzeros = _memoized(jaxpr, ("jvp", nonzeros), lambda: _jvp_body(jaxpr, nonzeros))
    given = pick(tangents, nonzeros)
    outs = _bind_derived(body, [*primals, *given], params,
                         [*params["donated_invars"], *[False] * len(given)])
    primals_out, tangents_out = split_list(outs, len(jaxpr.out_avals))
    zeros = [Zero.like(p) for p, nz in zip(primals_out, out_nonzeros) if not nz]
    return primals_out, interleave(out_nonzeros, tangents_out, zeros)


ad.jvp_rules[jit_p] = _jit_jvp


class _Transposed(NamedTuple):
    """A transposed body. It takes those residuals and given output cotangents that it
    uses (``used_inputs`` says which) and returns the cotangents of the linear inputs,
    except those that are symbolically zero (``nonzero`` says which it returns)."""

    body: ClosedJaxpr
    used_inputs: list[bool]
    nonzero: list[bool]


def _transpose_body(body: ClosedJaxpr, linear: tuple[bool, ...], given: tuple[bool, ...]
                    ) -> _Transposed:
    res_avals = pick(body.in_avals, linear, keep=False)
    zero_cts = [Zero(a) for a in pick(body.out_avals, given, keep=False)]
    n_linear = linear.count(True)
    nonzero: list[bool] = []

    def transposed(*args: Any) -> list[Any]:
        residuals, cts = split_list(args, len(res_avals))
        cts_in = backward_pass(body.jaxpr, body.consts, linear,
                               interleave(linear, [None] * n_linear, residuals),
                               interleave(given, cts, zero_cts))
        cts_in = pick(cts_in, linear)
        nonzero[:] = [type(ct) is not Zero for ct in cts_in]
        return pick(cts_in, nonzero)

    closed = trace_to_jaxpr(transposed, [*res_avals, *pick(body.out_avals, given)])
    closed, used = pe.dce_jaxpr(closed, True)
    return _Transposed(closed, used, nonzero)


def _jit_transpose(cts: list[Any], *args: Any, jaxpr: ClosedJaxpr, **params: Any
                   ) -> list[Any]:
    """Cotangents of the linear operands, computed by one ``jit``."""
    linear = tuple(is_undefined(x) for x in args)
    given = tuple(type(ct) is not Zero for ct in cts)
    transposed = _memoized(jaxpr, ("transpose", linear, given),
                           lambda: _transpose_body(jaxpr, linear, given))
    operands = pick([*pick(args, linear, keep=False), *pick(cts, given)],
                    transposed.used_inputs)
    nonzero = transposed.nonzero
    outs = _bind_derived(transposed.body, operands, params, [False] * len(operands)) \
        if any(nonzero) else []
    zeros = [Zero(x.aval) for x, nz in zip(pick(args, linear), nonzero) if not nz]
    return interleave(linear, interleave(nonzero, outs, zeros), [None] * linear.count(False))


transpose_rules[jit_p] = _jit_transpose


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
    known, unknown, unknown_outputs, num_res = pe.partial_eval_jaxpr_nounits(
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


def _jit_partial_eval(trace: pe.PartialEvalTrace, args: tuple, params: dict[str, Any]
                      ) -> list[Any]:
    """Run the known half of the call now (with the parent trace) and record the unknown
    half on the residuals and the unknown operands. The known half is bound even when it
    computes nothing, as JAX does (its jaxprs show it)."""
    body = params["jaxpr"]
    unknown = tuple(trace.is_unknown(x) for x in args)
    split = _memoized(body, ("partial_eval", unknown), lambda: _split_body(body, unknown))
    known_args = pick(args, unknown, keep=False)
    with core.set_current_trace(trace.parent):
        computed = _bind_derived(split.known, known_args, params,
                                 pick(params["donated_invars"], unknown, keep=False))
    values = {"input": known_args, "computed": computed}

    def value(kind: str, x: Any) -> Any:
        return x if kind == "const" else values[kind][x]

    known_outs = [value(*s) for s in split.outputs]
    unknown_outs = []
    if any(split.unknown_outputs):
        operands = [*(value(*s) for s in split.residuals), *pick(args, unknown)]
        unknown_outs = trace.record(jit_p, operands, dict(
            params, jaxpr=split.unknown, donated_invars=(False,) * len(operands)))
    return interleave(split.unknown_outputs, unknown_outs, known_outs)


pe.partial_eval_rules[jit_p] = _jit_partial_eval


def _jit_dce(eqn: JaxprEqn, used_outputs: list[bool]) -> JaxprEqn:
    """The call with only the used outputs: its body loses what computed the others, and
    the call the operands the body no longer reads (even with ``keep_unused``, as in
    JAX: that option is about the arguments of a compiled call, not about a nested one)."""
    body, used_inputs = pe.dce_jaxpr(eqn.params["jaxpr"], used_outputs)
    params = dict(eqn.params, jaxpr=body,
                  donated_invars=tuple(pick(eqn.params["donated_invars"], used_inputs)))
    return JaxprEqn(jit_p, pick(eqn.invars, used_inputs), pick(eqn.outvars, used_outputs),
                    params, eqn.source_info)


pe.dce_rules[jit_p] = _jit_dce


def _jit_lowering(ctx: lowering.RuleContext, *args: Any, jaxpr: ClosedJaxpr, name: str = "jit",
         **params: Any) -> list[Any]:
    """A nested ``jit`` becomes a private function (one per jaxpr) and a call."""
    func = ctx.b.module.jaxpr_function(name, jaxpr)
    return ctx.b.call(func, args)


lowering.lowering_rules[jit_p] = _jit_lowering


# ---------------------------------------------------------------------------------------
# vmap: batching rules (jit of the batched body)
# ---------------------------------------------------------------------------------------

def _jit_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                  jaxpr: ClosedJaxpr, donated_invars: tuple[bool, ...], **params: Any
                  ) -> tuple[list[Any], list[int | None]]:
    """One ``jit`` of the batched body, taking the batches where they are (as JAX's rule:
    no batch axis is moved on the way in). The batched body is remembered like the
    derived bodies above: ``vmap(jit(f))`` called again neither re-batches nor recompiles."""
    key = ("batch", axis_data, tuple(dims))
    body, out_dims = _memoized(jaxpr, key,
                               lambda: batching.batch_jaxpr(jaxpr, axis_data, tuple(dims)))
    body, captured = tracer_consts_as_inputs(body)
    outs = jit_p.bind(*captured, *vals, jaxpr=body,
                      donated_invars=(False,) * len(captured) + donated_invars, **params)
    return outs, out_dims


batching.batching_rules[jit_p] = _jit_batching


# ---------------------------------------------------------------------------------------
# Compiling a jaxpr
# ---------------------------------------------------------------------------------------

_executables: weakref.WeakKeyDictionary[ClosedJaxpr, Callable[..., list[Any]]] = \
    weakref.WeakKeyDictionary()


def executable_for(closed: ClosedJaxpr, name: str = "jit", keep_unused: bool = False
                   ) -> Callable[..., list[Any]]:
    """The program compiled from ``closed`` (compiled on first use, then remembered for
    as long as the jaxpr lives): a function of NumPy arrays returning NumPy arrays."""
    executable = _executables.get(closed)
    if executable is None:
        executable = _executables[closed] = compile_jaxpr(closed, name, keep_unused)
    return executable


class Backend(NamedTuple):
    """A compiler for lowered programs: ``compile_module`` takes a StableHLO module in
    memory, ``compile_text`` its text; both return an executable, a function of NumPy
    arrays returning a list of NumPy arrays (with ``.as_text()``, its generated code)."""

    compile_module: Callable[[Any], Callable[..., list[Any]]]
    compile_text: Callable[[str], Callable[..., list[Any]]]


_backend: Backend | None = None


def install_backend(backend: Backend) -> None:
    """Make ``backend`` the compiler of every ``jit``. The NumPy backend (the mini-XLA)
    installs itself when it is imported: it sits above this module, and knows nothing
    of jaxprs, so ``jit`` finds it here at call time rather than importing it."""
    global _backend
    _backend = backend


def backend() -> Backend:
    if _backend is None:
        raise RuntimeError("no backend installed: import minijax (or a backend module)")
    return _backend


def compile_jaxpr(closed: ClosedJaxpr, name: str, keep_unused: bool = False
                  ) -> Callable[..., list[Any]]:
    """Compile ``closed`` into a function of NumPy arrays (all of the jaxpr's inputs):
    lower it to a StableHLO module and hand the module to the backend (in memory: the
    text is the contract with real XLA, and the mini-XLA would only parse it back).
    The program takes only the inputs it uses, so the others are dropped on the way in."""
    module, used = lowering.lower_to_module(closed, module_name=lowering.module_name(name),
                                            keep_unused=keep_unused)
    return with_used_inputs(backend().compile_module(module), None if keep_unused else used)


def with_used_inputs(executable: Callable[..., list[Any]], used: Sequence[bool] | None
                     ) -> Callable[..., list[Any]]:
    """``executable``, called with all the inputs but passing on only the ``used`` ones."""
    if used is None or all(used):
        return executable
    return lambda *args: executable(*(a for a, u in zip(args, used) if u))


def use_executable(closed: ClosedJaxpr, executable: Callable[..., list[Any]]) -> None:
    """Run ``executable`` for ``closed`` from now on (ahead-of-time compilation)."""
    _executables[closed] = executable





# ---------------------------------------------------------------------------------------
# Captured tracers
# ---------------------------------------------------------------------------------------


def tracer_consts_as_inputs(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """Captured tracers of an enclosing trace become leading inputs of the jaxpr (the
    equation then receives them as operands); captured arrays stay constants."""
    j = closed.jaxpr
    is_tracer = [isinstance(c, Tracer) for c in closed.consts]
    if not any(is_tracer):
        return closed, []
    moved = [v for v, t in zip(j.constvars, is_tracer) if t]
    kept = [v for v, t in zip(j.constvars, is_tracer) if not t]
    jaxpr = Jaxpr(kept, [*moved, *j.invars], j.outvars, j.eqns)
    return (ClosedJaxpr(jaxpr, [c for c, t in zip(closed.consts, is_tracer) if not t]),
            [c for c, t in zip(closed.consts, is_tracer) if t])


__all__ = ["Backend", "executable_for", "install_backend", "jit_p"]
