"""``jit``: trace a function once per argument signature, compile it, run it as one job.

``jit(f)(x)`` does not run ``f`` on ``x``. It looks up the *signature* of the call -- the
pytree structure of the arguments, each leaf's shape, dtype and weak type, the values
of the static arguments -- in a cache. On a miss, it traces ``f`` to a jaxpr (running
the Python code once, on tracers) and compiles that jaxpr; on a hit, it skips Python
entirely and puts the compiled program on the device's queue as a single job. A new
signature (another shape, a Python int instead of a float, a different static value)
means a new trace: that is *retracing*.

Everywhere else a jitted call is the primitive ``jit``: traced inside another function
it is recorded as one equation, ``jit[name=f jaxpr={ ... }]``, whose body is the cached
jaxpr; evaluated eagerly, its ``impl`` runs the compiled program. Its rules follow its
definition: the derivative rules (JVP, transpose, partial evaluation) and dead-code
elimination transform the body and bind ``jit`` again; lowering makes it a function.

Two ways to jit a method (``self`` is the first argument):

* ``jit(Model.apply, static_argnums=0)``, or ``@partial(jit, static_argnums=0)`` on the
  method: ``self`` is static, so it must be hashable, and its fields become constants of
  the trace. Changing a field is *not* seen unless ``__hash__``/``__eq__`` reflect it.
* register the class as a pytree (``tree_util.register_pytree_node_class``): ``self``
  is then an ordinary argument whose array fields are traced, and a new value of a
  field is just a new input.

``donate_argnums``/``donate_argnames`` are accepted and recorded in the equation (as
``donated_invars``, like JAX) but ignored: minijax never reuses an input's memory.
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from minijax import core, tracing
from minijax import pretty_printer as pp
from minijax.array import Array
from minijax.compiler import lowering
from minijax.core import Primitive, ShapedArray, Tracer
from minijax.errors import check_callable
from minijax.flags import config
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
    eval_closed_jaxpr,
    has_effects,
    inputs_as_consts,
    interleave,
    pick,
    pp_eqn_rules,
    pp_eqn_with_params,
    split_list,
)
from minijax.runtime import _as_array, _placement
from minijax.shape_dtype import abstractify
from minijax.tracing import DebugInfo, argument_names, trace_function, trace_to_jaxpr
from minijax.tree_util import PyTreeDef, tree_flatten

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


def _bind_derived(body: ClosedJaxpr, args: Sequence[Any], params: dict[str, Any],
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

_batched_bodies: weakref.WeakKeyDictionary[ClosedJaxpr, dict[tuple, Any]] = \
    weakref.WeakKeyDictionary()


def _batched_body(body: ClosedJaxpr, axis_data: batching.AxisData, dims: tuple
                  ) -> tuple[ClosedJaxpr, list[int | None]]:
    """``body`` batched along ``dims``, remembered while ``body`` lives (``vmap(jit(f))``
    called again neither re-batches nor recompiles), unless it captured tracers."""
    table = _batched_bodies.setdefault(body, {})
    key = (axis_data, dims)
    if key not in table:
        batched = batching.batch_jaxpr(body, axis_data, dims)
        if any(isinstance(c, Tracer) for c in batched[0].consts):
            return batched
        table[key] = batched
    return table[key]


def _jit_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                  jaxpr: ClosedJaxpr, donated_invars: tuple[bool, ...], **params: Any
                  ) -> tuple[list[Any], list[int | None]]:
    """One ``jit`` of the batched body, taking the batches where they are (as JAX's rule:
    no batch axis is moved on the way in)."""
    body, out_dims = _batched_body(jaxpr, axis_data, tuple(dims))
    body, captured = _tracer_consts_as_inputs(body)
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


def dispatch(entry: CacheEntry, leaves: Sequence[Any]) -> list[Array]:
    """Run a traced signature eagerly: one job on the device's queue. The output arrays
    are returned at once and filled in when the worker gets to the job."""
    for leaf in leaves:
        if type(leaf) is not Array:
            leaves = [_as_array(x) for x in leaves]
            break
    device, committed = _placement(jit_p, leaves)
    program = entry.program
    if program is None:
        params = entry.params
        program = entry.program = Program(params["name"], executable_for(
            params["jaxpr"], params["name"], params["keep_unused"]))
    outs = [Array(aval, None, device, committed) for aval in entry.out_avals]
    device.enqueue((program, leaves, _NO_PARAMS, outs))
    if entry.has_effects:  # a debug print: let it happen before the call returns
        device.synchronize()
    return outs


_NO_PARAMS: dict[str, Any] = {}


# ---------------------------------------------------------------------------------------
# Static arguments
# ---------------------------------------------------------------------------------------


def _as_tuple(x: int | str | Sequence | None) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)


def _positional_names(signature: inspect.Signature | None) -> list[str] | None:
    """The names of the parameters that can be passed by position, or None when there is
    no limit (``*args``) or no signature."""
    if signature is None:
        return None
    names = []
    for name, param in signature.parameters.items():
        if param.kind is param.VAR_POSITIONAL:
            return None
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(name)
    return names


def _resolve_static(signature: inspect.Signature | None, argnums: tuple, argnames: tuple,
                    what: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Check ``static_argnums``/``static_argnames`` (or the donate_ pair) against the
    signature, and complete each from the other, as JAX does: a static argument is static
    whether it is passed by position or by keyword."""
    positional = _positional_names(signature)
    if positional is not None and argnums:
        if any(not -len(positional) <= i < len(positional) for i in argnums):
            raise ValueError(f"Jitted function has {what}_argnums={argnums}, but only "
                             f"accepts {len(positional)} positional arguments.")
        argnums = tuple(sorted({i % len(positional) for i in argnums}))
    if signature is not None and argnames:
        params = signature.parameters
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        invalid = {n for n in argnames if n not in params} if not takes_kwargs else set()
        if invalid:
            raise ValueError(f"Jitted function has invalid argnames {invalid} in "
                             f"{what}_argnames. Function does not take these args.")
    if positional is not None:
        argnames = tuple(dict.fromkeys(
            [*argnames, *(positional[i] for i in argnums)]))
        argnums = tuple(sorted({*argnums, *(positional.index(n) for n in argnames
                                            if n in positional)}))
    return argnums, argnames


def _check_hashable(value: Any) -> None:
    try:
        hash(value)
    except TypeError as err:
        raise ValueError(
            "Non-hashable static arguments are not supported. An error occurred while "
            f"trying to hash an object of type {type(value)}, {value}. The error was:\n"
            f"{type(err).__name__}: {err}\n") from err


# ---------------------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------------------


class CacheEntry:
    """One traced signature: the equation's params (which hold the jaxpr), the inputs'
    tree, types and names, the outputs' tree and types, whether the program prints (then
    a call waits for the device, so that the output appears in program order), and the
    compiled program (made on the first eager call)."""

    __slots__ = ("params", "in_tree", "in_avals", "arg_names", "out_avals", "out_tree",
                 "has_effects", "inline", "program")

    def __init__(self, params: dict[str, Any], in_tree: PyTreeDef,
                 arg_names: Sequence[str], out_tree: PyTreeDef, inline: bool) -> None:
        self.params = params
        self.in_tree = in_tree
        self.in_avals = params["jaxpr"].in_avals
        self.arg_names = tuple(arg_names)
        self.out_avals = params["jaxpr"].out_avals
        self.out_tree = out_tree
        self.has_effects = has_effects(params["jaxpr"].jaxpr)
        self.inline = inline
        self.program: Program | None = None

    def unflatten(self, outs: list[Any]) -> Any:
        return outs[0] if self.out_tree.node_data() is None else self.out_tree.unflatten(outs)


class Program(Primitive):
    """A compiled program packaged as a job for a device's worker, which runs a job by
    calling ``impl`` on the inputs' NumPy values (as it does for a primitive)."""

    def __init__(self, name: str, run: Callable[..., list[Any]]) -> None:
        super().__init__(name, multiple_results=True)
        # A NumPy-backend executable silences NumPy's warnings around its generated
        # function; a device runs its jobs with them off already, so call that directly.
        self.impl = getattr(run, "fn", run)  # type: ignore[method-assign]


# Flags that change what tracing produces are part of every signature. Reading them on
# every call would cost time, so they are copied here whenever one changes.
_config_state: tuple = ()


def _read_config() -> None:
    global _config_state
    _config_state = (config.jax_enable_x64, config.jax_numpy_dtype_promotion)


_read_config()
config.on_change(_read_config)


_shared_caches: weakref.WeakKeyDictionary[Callable, dict[tuple, tuple[dict, dict]]] = \
    weakref.WeakKeyDictionary()


def _caches(fun: Callable, options: tuple) -> tuple[dict, dict]:
    """The caches of ``fun`` jitted with ``options``: ``jit(f)(x)`` twice traces once."""
    try:
        by_options = _shared_caches.setdefault(fun, {})
    except TypeError:  # a callable that cannot be weakly referenced: its own caches
        return {}, {}
    return by_options.setdefault(options, ({}, {}))


class Jitted:
    """``jit(fun)``: call it like ``fun``. Also ``.trace(...)``, ``.lower(...)`` (ahead
    of time compilation, see ``minijax.compiler.stages``), ``.eval_shape(...)``."""

    def __init__(self, fun: Callable, static_argnums: tuple[int, ...],
                 static_argnames: tuple[str, ...], donate_argnums: tuple[int, ...],
                 donate_argnames: tuple[str, ...], keep_unused: bool, inline: bool) -> None:
        functools.update_wrapper(self, fun)
        self._fun = fun
        try:
            signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):
            signature = None
        self._static_argnums, self._static_argnames = _resolve_static(
            signature, static_argnums, static_argnames, "static")
        self._donate_argnums, self._donate_argnames = _resolve_static(
            signature, donate_argnums, donate_argnames, "donate")
        self._keep_unused = keep_unused
        self._inline = inline
        self._name = tracing.tracing_context(fun, "jit").fun_name
        options = (self._static_argnums, self._static_argnames, self._donate_argnums,
                   self._donate_argnames, keep_unused, inline)
        # Signature -> entry; and the same entries, for calls on arrays only, keyed by
        # their types alone. Shared by every jit of the same function with these options.
        self._cache, self._fast_cache = _caches(fun, options)

    # --- calling ----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The fast path, for eager calls on arrays with a known signature: one dictionary
        lookup keyed on the arrays' types, then one job on the device's queue."""
        if kwargs or self._static_argnums or core.current_trace() is not core.eval_trace:
            return self._call(args, kwargs)
        key = [_config_state]
        for arg in args:
            if type(arg) is not Array:
                return self._call_with_pytrees(args)
            key.append(arg.aval)
        entry = self._fast_cache.get(tuple(key))
        if entry is None:
            return self._call(args, kwargs)
        return entry.unflatten(dispatch(entry, args))

    def _call_with_pytrees(self, args: tuple) -> Any:
        """Almost as fast: positional pytrees of arrays, keyed by their structure too."""
        leaves, treedef = tree_flatten(args)
        key = [treedef, _config_state]
        for leaf in leaves:
            if type(leaf) is not Array:
                return self._call(args, {})
            key.append(leaf.aval)
        entry = self._fast_cache.get(tuple(key))
        if entry is None:
            return self._call(args, {})
        return entry.unflatten(dispatch(entry, leaves))

    def _call(self, args: tuple, kwargs: dict) -> Any:
        """The general path: static arguments, pytrees, Python scalars, tracing."""
        entry, leaves, consts = self._entry(args, kwargs)
        trace = core.current_trace()
        if trace is core.eval_trace and not consts:
            outs = dispatch(entry, leaves)
        elif entry.inline and trace is not core.eval_trace:
            outs = eval_closed_jaxpr(entry.params["jaxpr"], *consts, *leaves)
        else:
            outs = jit_p.bind(*consts, *leaves, **entry.params)
        return entry.unflatten(outs)

    # --- signatures -------------------------------------------------------------------
    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple, tuple, dict]:
        """(static positional, static keyword, dynamic positional, dynamic keyword); the
        static ones as (position or name, type, value)."""
        # A static value's type is part of the key: 1, 1.0 and True are equal, but a
        # function may well treat them differently.
        static_args = tuple((i, type(a), a) for i, a in enumerate(args)
                            if i in self._static_argnums)
        static_kwargs = tuple(sorted((k, type(v), v) for k, v in kwargs.items()
                                     if k in self._static_argnames))
        for *_, value in static_args + static_kwargs:
            _check_hashable(value)
        dynamic = tuple(a for i, a in enumerate(args) if i not in self._static_argnums)
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return static_args, static_kwargs, dynamic, dynamic_kwargs

    def _entry(self, args: tuple, kwargs: dict) -> tuple[CacheEntry, list[Any], list[Any]]:
        """The cache entry for this call (tracing on a miss), the flat dynamic arguments,
        and the values of tracers the function captured from an enclosing trace."""
        static_args, static_kwargs, dynamic, dynamic_kwargs = self._split(args, kwargs)
        leaves, treedef = tree_flatten((dynamic, dynamic_kwargs))
        avals = self._avals(leaves, args, kwargs)
        # The names (and sizes) vmap binds are part of the signature: psum(1, "i") is
        # the size of axis "i", fixed in the trace, and "i" unbound is an error.
        key = (treedef, *avals, _config_state, static_args, static_kwargs,
               batching.axis_env())
        entry = self._cache.get(key)
        if entry is not None:
            return entry, leaves, []
        entry, consts = self._trace(args, kwargs, avals, dynamic, dynamic_kwargs)
        if not consts:  # a trace that captured outer tracers belongs to that trace only
            self._cache[key] = entry
            if not kwargs and all(type(a) is Array for a in args):
                self._fast_cache[(_config_state, *avals)] = entry
            elif not kwargs and all(type(leaf) is Array for leaf in leaves):
                self._fast_cache[(tree_flatten(args)[1], _config_state, *avals)] = entry
        return entry, leaves, consts

    def _avals(self, leaves: list[Any], args: tuple, kwargs: dict) -> list[ShapedArray]:
        """The leaves' types; a leaf that is no array is reported by its argument's name."""
        avals = []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, (Array, Tracer)):
                avals.append(leaf.aval)
                continue
            try:
                avals.append(abstractify(leaf, self._fun, ""))
            except TypeError:  # say which argument (the names are only made now)
                names = argument_names(self._fun, args, kwargs, self._static_argnums)
                abstractify(leaf, self._fun, names[i] if i < len(names) else "")
                raise
        return avals

    def _trace(self, args: tuple, kwargs: dict, avals: list[ShapedArray], dynamic: tuple,
               dynamic_kwargs: dict) -> tuple[CacheEntry, list[Any]]:
        """Trace the function on ``avals`` (the dynamic leaves' types); returns the cache
        entry and the captured tracers of enclosing traces (which become leading inputs
        of the equation)."""
        static_positions = self._static_argnums

        def with_statics(*dyn_args: Any, **dyn_kwargs: Any) -> Any:
            filled = iter(dyn_args)
            full = [a if i in static_positions else next(filled) for i, a in enumerate(args)]
            return self._fun(*full, **{**kwargs, **dyn_kwargs})

        in_tree = tree_flatten((dynamic, dynamic_kwargs))[1]
        names = argument_names(self._fun, args, kwargs, static_positions) \
            or ("",) * in_tree.num_leaves
        arg_avals, kwarg_avals = in_tree.unflatten(avals)
        closed, out_tree = trace_function(with_statics, tuple(arg_avals),
                                          DebugInfo("jit", self._fun, names), kwarg_avals)
        closed, consts = _tracer_consts_as_inputs(closed)
        donated = (False,) * len(consts) + self._donated(in_tree, dynamic, dynamic_kwargs)
        params = {"jaxpr": closed, "name": self._name, "donated_invars": donated,
                  "keep_unused": self._keep_unused}
        return CacheEntry(params, in_tree, names, out_tree, self._inline), consts

    def _donated(self, in_tree: PyTreeDef, dynamic: tuple, dynamic_kwargs: dict
                 ) -> tuple[bool, ...]:
        """``donated_invars``: one flag per flattened input."""
        if not self._donate_argnums and not self._donate_argnames:
            return (False,) * in_tree.num_leaves
        positions = [i for i in range(len(dynamic) + len(self._static_argnums))
                     if i not in self._static_argnums]
        flags = []
        for i, arg in zip(positions, dynamic):
            flags += [i in self._donate_argnums] * tree_flatten(arg)[1].num_leaves
        for key in sorted(dynamic_kwargs):
            n = tree_flatten(dynamic_kwargs[key])[1].num_leaves
            flags += [key in self._donate_argnames] * n
        return tuple(flags)

    # --- methods, stages and bookkeeping ----------------------------------------------
    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """``@jit`` on a method: ``obj.method(x)`` calls the jitted function with ``obj``
        as its first argument (static only with ``static_argnums=0``)."""
        return self if instance is None else types.MethodType(self, instance)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """Ahead of time: trace for these arguments (arrays or ``ShapeDtypeStruct`` s)."""
        from minijax.compiler.stages import trace

        return trace(self, args, kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """Ahead of time: trace and lower to StableHLO (``.as_text()``, ``.compile()``)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """The output's types (``ShapeDtypeStruct`` s), without computing anything."""
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        self._cache.clear()
        self._fast_cache.clear()

    def _cache_size(self) -> int:
        return len(self._cache)

    def __repr__(self) -> str:
        return f"<PjitFunction of {self._fun!r}>"


def _tracer_consts_as_inputs(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
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


_NO_FUNCTION: Any = object()  # jit(...) without a function: a decorator (None is an error)


def jit(fun: Callable = _NO_FUNCTION, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        inline: bool = False, backend: str | None = None) -> Any:
    """Compile ``fun``: trace it once per argument signature and run the compiled program.

    ``static_argnums``/``static_argnames`` name arguments that are not traced but passed
    to ``fun`` as they are (they must be hashable: their values are part of the cache
    key). ``donate_argnums``/``donate_argnames`` are accepted and ignored. With
    ``inline=True`` a call inside another trace records ``fun``'s equations directly
    instead of a nested ``jit`` equation. Works as a decorator, with or without options
    (``@partial(jit, static_argnums=1)``). ``backend`` is deprecated in JAX and only
    ``"cpu"`` exists here: accepted with JAX's warning, anything else is JAX's error.
    """
    if backend is not None:
        _check_backend(backend)
    options = dict(static_argnums=_as_tuple(static_argnums),
                   static_argnames=_as_tuple(static_argnames),
                   donate_argnums=_as_tuple(donate_argnums),
                   donate_argnames=_as_tuple(donate_argnames),
                   keep_unused=keep_unused, inline=inline)
    if fun is _NO_FUNCTION:
        return lambda f: jit(f, **options)
    check_callable(fun)
    return Jitted(fun, **options)


def _check_backend(backend: str) -> None:
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  '`jax.device_put(..., jax.local_devices(backend="cpu")[0])` on the inputs '
                  "to the jitted function to get the same behavior.", DeprecationWarning,
                  stacklevel=3)
    if backend != "cpu":
        raise RuntimeError(f"Unknown backend {backend}. Available backends are ['cpu']")


__all__ = ["Jitted", "jit", "jit_p"]
