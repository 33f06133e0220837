"""Custom derivative rules: ``custom_jvp`` and ``custom_vjp``.

Sometimes the derivative that AD would derive is not the one you want: it may be
numerically poor (``log1p(exp(x))`` overflows for large ``x`` although its derivative,
``sigmoid(x)``, is perfectly tame), too expensive (differentiating through the iterations
of a solver), or deliberately different (clipping a gradient). A custom rule replaces AD
for one function:

* ``custom_jvp``: you supply the JVP, ``(primals, tangents) -> (primal_out,
  tangent_out)``. Forward mode calls it; reverse mode too, because reverse mode is
  linearization (the rule runs under partial evaluation: its primal part is computed
  now, its tangent part is recorded and transposed). So the tangent must be computed
  *linearly* from the tangents.
* ``custom_vjp``: you supply ``fwd`` (the primal output and *residuals*, values saved for
  later) and ``bwd`` (residuals and output cotangent -> input cotangents). Reverse mode
  runs ``fwd`` now and records a linear primitive, ``custom_lin``, whose transpose calls
  ``bwd``. There is no forward mode: a VJP cannot give a JVP.

How a call is interpreted depends on the current trace, as in JAX: evaluated eagerly, the
function simply runs; under a JVP trace, the custom rule replaces differentiation; under
partial evaluation with only known inputs, the call is handed to the parent trace (so the
function sees concrete values and may use Python control flow on them); and a trace that
records a program records a ``custom_jvp_call`` (or ``custom_vjp_call``) primitive that
carries the function as a jaxpr and the rules as parameters.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from minijax import core, dtypes, lax, tracing
from minijax.compiler import lowering
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.ad import (
    JVPTrace,
    Zero,
    instantiate,
    is_differentiable,
    jvp_rules,
    tangent_aval,
)
from minijax.interpreters.transpose import transpose_rules
from minijax.jaxpr import ClosedJaxpr, consts_as_inputs, eval_closed_jaxpr, pp_param_rules
from minijax.lax.base import operand
from minijax.lax.control_flow.common import mismatch_reason
from minijax.tree_util import (
    PyTreeDef,
    leaf_paths,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__all__ = ["custom_jvp", "custom_vjp"]

# ---------------------------------------------------------------------------------------
# Shared machinery: arguments, named rules, and dispatch on the current trace
# ---------------------------------------------------------------------------------------


def _name(fun: Callable) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _type(aval: ShapedArray) -> str:
    """``float32[3]``, and ``float0[]`` for the tangent type of integers."""
    dtype = "float0" if aval.dtype == dtypes.float0 else aval.dtype.name
    return f"{dtype}[{','.join(map(str, aval.shape))}]"


class _Rule:
    """A user's function seen as a function of flat lists of arrays.

    It is a parameter of the primitives, so it prints (in jaxprs) as the user's function
    name, like ``jvp=f_jvp``; ``primal_name`` is the name of the decorated function.
    """

    def __init__(self, fun: Callable[..., Any], name: str, primal_name: str) -> None:
        self.fun, self.name, self.primal_name = fun, name, primal_name

    def __call__(self, *args: Any) -> Any:
        return self.fun(*args)

    def __str__(self) -> str:
        return self.name


class _Call:
    """One call of a custom-rule function: its static (``nondiff_argnums``) arguments, the
    others flattened, and the ways of applying it that the traces need."""

    def __init__(self, custom: _CustomFunction, args: tuple) -> None:
        self.custom = custom
        nondiff = custom.nondiff_argnums
        self.static = [(i, args[i]) for i in nondiff]
        dynamic = tuple(a for i, a in enumerate(args) if i not in nondiff)
        leaves, self.in_tree = tree_flatten(dynamic)
        self.flat_args = [operand(x) for x in leaves]
        self.out_tree: PyTreeDef | None = None

    def full_args(self, dynamic: Sequence[Any]) -> list[Any]:
        """All arguments in their positions, from the dynamic ones."""
        full = list(dynamic)
        for i, value in self.static:
            full.insert(i, value)
        return full

    def static_args(self) -> list[Any]:
        return [value for _, value in self.static]

    def call(self, *flat_args: Any) -> list[Any]:
        """The decorated function itself, flat in and out."""
        dynamic = tree_unflatten(self.in_tree, flat_args)
        out, self.out_tree = tree_flatten(self.custom.fun(*self.full_args(dynamic)))
        return out

    def trace(self) -> tuple[ClosedJaxpr, list[Any]]:
        """The function as a jaxpr (captured values as leading inputs) and its consts."""
        context = tracing.tracing_context(self.custom.fun, "custom derivative")
        closed = tracing.trace_to_jaxpr(self.call, [x.aval for x in self.flat_args], context)
        return consts_as_inputs(closed)


def _apply(call: _Call, flat_args: list[Any], jvp: Callable, stage: Callable) -> list[Any]:
    """Apply a custom-rule function under the current trace (see the module docstring).

    ``jvp(primals, tangents) -> (primals_out, tangents_out)`` is the custom rule, flat;
    ``stage(flat_args)`` binds the primitive.
    """
    trace = core.current_trace()
    if trace is core.eval_trace:
        return call.call(*flat_args)
    if isinstance(trace, JVPTrace):
        primals, tangents = zip(*map(trace.to_primal_tangent, flat_args))
        if all(type(t) is Zero for t in tangents):
            with core.set_current_trace(trace.parent):
                return _apply(call, list(primals), jvp, stage)
        with core.set_current_trace(trace.rule_trace):
            outs, tangents_out = jvp(list(primals), list(tangents))
        return [trace.lift(p, t) for p, t in zip(outs, tangents_out)]
    if isinstance(trace, pe.PartialEvalTrace) and not any(map(trace.is_unknown, flat_args)):
        with core.set_current_trace(trace.parent):
            return _apply(call, flat_args, jvp, stage)
    return stage(flat_args)


def _inline(trace: pe.PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
    """Partial evaluation of a call with unknown inputs: the custom rule is not needed any
    more (what is recorded is already a linearization), so the function is inlined."""
    with core.set_current_trace(trace):
        return eval_closed_jaxpr(params["call_jaxpr"], *args)


def _eval_call(*args: Any, call_jaxpr: ClosedJaxpr, **params: Any) -> list[Any]:
    """Eager evaluation of a recorded call: run the function's jaxpr."""
    return eval_closed_jaxpr(call_jaxpr, *args)


class _CustomFunction:
    """What ``custom_jvp`` and ``custom_vjp`` share: wrapping ``fun``, ``nondiff_argnums``."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        try:
            self._signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):  # no signature to consult (some builtins)
            self._signature = None

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        """All arguments as positional ones, defaults filled in (rules get positions)."""
        if self._signature is None:
            return args
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError("keyword arguments could not be resolved to positions")
        return bound.args


# ---------------------------------------------------------------------------------------
# custom_jvp
# ---------------------------------------------------------------------------------------

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **params: call_jaxpr.out_avals)
custom_jvp_call_p.def_eager_rule(_eval_call)


class custom_jvp(_CustomFunction):  # noqa: N801  (JAX's name)
    """A function with a custom JVP rule: ``f.defjvp(f_jvp)`` where
    ``f_jvp(primals, tangents) -> (primal_out, tangent_out)`` (with ``nondiff_argnums``,
    the static arguments come first: ``f_jvp(*static, primals, tangents)``)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Register the JVP rule; returns it, so this can be used as a decorator."""
        if symbolic_zeros:
            raise NotImplementedError("custom_jvp: symbolic_zeros=True is not supported in "
                                      "minijax; zero tangents are passed as zero arrays.")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument, ``jvp_i(tangent_i, primal_out, *primals)``, summed
        (``None``: the output does not depend on that argument)."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
            out = self(*primals)
            terms = [rule(t, out, *primals) for rule, t in zip(jvps, tangents)
                     if rule is not None]
            if not terms:
                return out, tree_map(lambda o: instantiate(Zero.like(operand(o))), out)
            return out, functools.reduce(lambda a, b: tree_map(lax.add, a, b), terms)

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {_name(self.fun)} "
                                 "using defjvp.")
        args = self._positional(args, kwargs)
        if core.current_trace() is core.eval_trace:
            return self.fun(*args)
        call = _Call(self, args)
        rule = _Rule(functools.partial(self._flat_jvp, call), _name(self.jvp), _name(self.fun))
        outs = _apply(call, call.flat_args, rule, functools.partial(self._stage, call, rule))
        return tree_unflatten(call.out_tree, outs)

    def _flat_jvp(self, call: _Call, primals: list, tangents: list) -> tuple[list, list]:
        """Call the user's rule on pytrees; check and flatten what it returns."""
        tangents = [instantiate(t) for t in tangents]
        rule = _name(self.jvp)
        out = self.jvp(*call.static_args(), tree_unflatten(call.in_tree, primals),
                       tree_unflatten(call.in_tree, tangents))
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"Custom JVP rule {rule} for function {_name(self.fun)} must "
                            "produce a pair (list or tuple of length two) representing primal "
                            f"and tangent outputs, but got {out}.")
        primals_out, primal_tree = tree_flatten(out[0])
        tangents_out, tangent_tree = tree_flatten(out[1])
        if primal_tree != tangent_tree:
            raise TypeError(f"Custom JVP rule {rule} for function {_name(self.fun)} must "
                            "produce primal and tangent outputs with equal container (pytree) "
                            f"structures, but got {primal_tree} and {tangent_tree} "
                            "respectively.")
        primals_out = [operand(p) for p in primals_out]
        tangents_out = [operand(t) for t in tangents_out]
        for p, t in zip(primals_out, tangents_out):
            expected = tangent_aval(p.aval)
            if (t.shape, t.dtype) != (expected.shape, expected.dtype):
                raise TypeError(
                    "Custom JVP rule must produce primal and tangent outputs with "
                    f"corresponding shapes and dtypes. Expected {_type(expected)} (tangent "
                    f"type of {_type(p.aval)}) but got {_type(t.aval)}.")
        call.out_tree = primal_tree
        return primals_out, tangents_out

    def _stage(self, call: _Call, rule: _Rule, flat_args: list[Any]) -> list[Any]:
        jaxpr, consts = call.trace()
        return custom_jvp_call_p.bind(*consts, *flat_args, call_jaxpr=jaxpr,
                                      jvp_jaxpr_fun=rule, num_consts=len(consts),
                                      symbolic_zeros=self.symbolic_zeros)


def _custom_jvp_call_jvp(primals: list, tangents: list, *, call_jaxpr: ClosedJaxpr,
                         jvp_jaxpr_fun: _Rule, num_consts: int, symbolic_zeros: bool
                         ) -> tuple[list, list]:
    """A recorded call met by a JVP trace (e.g. in a loop body): apply the custom rule.
    Captured constants are constants for the rule, whose author did not see them."""
    return jvp_jaxpr_fun(primals[num_consts:], tangents[num_consts:])


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
pe.partial_eval_rules[custom_jvp_call_p] = _inline
pp_param_rules[custom_jvp_call_p] = lambda params: [
    ("name", params["jvp_jaxpr_fun"].primal_name), ("call_jaxpr", params["call_jaxpr"]),
    ("jvp", params["jvp_jaxpr_fun"]), ("symbolic_zeros", params["symbolic_zeros"])]


# ---------------------------------------------------------------------------------------
# custom_vjp
# ---------------------------------------------------------------------------------------

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **params: call_jaxpr.out_avals)
custom_vjp_call_p.def_eager_rule(_eval_call)

_NO_JVP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


def _custom_lin_eager(*args: Any, **params: Any) -> Any:
    raise TypeError(_NO_JVP)


# custom_lin[num_res, bwd, out_avals, in_zeros] *residuals *tangents: the tangent of a
# custom_vjp function. It is linear in the tangents but has no way of computing them
# (there is no JVP); it exists to be transposed, which calls bwd.
custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **params: list(out_avals))
custom_lin_p.def_eager_rule(_custom_lin_eager)


class custom_vjp(_CustomFunction):  # noqa: N801  (JAX's name)
    """A function with a custom VJP: ``f.defvjp(fwd, bwd)`` where ``fwd(*args) ->
    (output, residuals)`` and ``bwd(residuals, output_cotangent) -> tuple of cotangents,
    one per argument`` (with ``nondiff_argnums``: ``bwd(*static, residuals, ct)``)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        if symbolic_zeros:
            raise NotImplementedError("custom_vjp: symbolic_zeros=True is not supported in "
                                      "minijax; zero cotangents are passed as zero arrays.")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {_name(self.fun)} "
                                 "using defvjp.")
        args = self._positional(args, kwargs)
        if core.current_trace() is core.eval_trace:
            return self.fun(*args)
        call = _Call(self, args)
        rules = _VJPRules(self, call)
        outs = _apply(call, call.flat_args, rules.jvp, rules.stage)
        return tree_unflatten(call.out_tree, outs)


class _VJPRules:
    """``fwd`` and ``bwd`` of one call, flat; ``fwd`` remembers the structure of the
    output and of the residuals, which ``bwd`` needs to rebuild its arguments."""

    def __init__(self, custom: custom_vjp, call: _Call) -> None:
        self.custom, self.call = custom, call
        self.res_tree: PyTreeDef | None = None
        self.out_avals: list[ShapedArray] = []
        name = _name(custom.fun)
        self.fwd = _Rule(self._fwd, _name(custom.fwd), name)
        self.bwd = _Rule(self._bwd, _name(custom.bwd), name)
        self.jvp = functools.partial(_custom_vjp_jvp, self.fwd, self.bwd)

    def out_trees(self) -> tuple[PyTreeDef | None, PyTreeDef | None]:
        return self.call.out_tree, self.res_tree

    def _fwd(self, *primals: Any) -> tuple[list, list]:
        custom, call = self.custom, self.call
        out = custom.fwd(*call.full_args(tree_unflatten(call.in_tree, primals)))
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            fwd = _name(custom.fwd)
            raise TypeError(
                f"Custom VJP fwd rule {fwd} for function {_name(custom.fun)} must produce a "
                "pair (list or tuple of length two) where the first element represents the "
                "primal output (equal to those of the custom_vjp-decorated function "
                f"{_name(custom.fun)}) and the second element represents residuals (i.e. "
                "values stored from the forward pass for use on the backward pass), but "
                f"instead of a pair the fwd rule {fwd} produced {out}.")
        outs, call.out_tree = tree_flatten(out[0])
        residuals, self.res_tree = tree_flatten(out[1])
        outs = [operand(o) for o in outs]
        self.out_avals = [o.aval for o in outs]
        return outs, [operand(r) for r in residuals]

    def _bwd(self, residuals: list, cts: list) -> list[Any]:
        """Call the user's bwd (``cts``: of the differentiable outputs; the others get
        float0 zeros); check its result against the arguments; ``None`` -> zeros."""
        custom, call = self.custom, self.call
        given = iter(cts)
        cts = [next(given) if is_differentiable(a) else instantiate(Zero(tangent_aval(a)))
               for a in self.out_avals]
        out = custom.bwd(*call.static_args(), tree_unflatten(self.res_tree, residuals),
                         tree_unflatten(call.out_tree, cts))
        args_tree = call.in_tree
        n_args = len(args_tree.children())
        if not isinstance(out, (tuple, list)) or len(out) != n_args or any(
                ct is not None and tree_structure(ct) != arg_tree
                for ct, arg_tree in zip(out, args_tree.children())):
            raise TypeError(
                "Custom VJP bwd rule must produce an output with the same container (pytree) "
                "structure as the args tuple of the primal function, and in particular must "
                "produce a tuple of length equal to the number of arguments to the primal "
                f"function, but got bwd output structure {tree_structure(out)} for primal input "
                f"structure {args_tree}.")
        flat: list[Any] = []
        for ct, arg_tree in zip(out, args_tree.children()):
            flat += [None] * arg_tree.num_leaves if ct is None else tree_flatten(ct)[0]
        paths = leaf_paths(args_tree)
        return [_check_cotangent(ct, x.aval, path)
                for ct, x, path in zip(flat, call.flat_args, paths)]

    def stage(self, flat_args: list[Any]) -> list[Any]:
        jaxpr, consts = self.call.trace()
        return custom_vjp_call_p.bind(*consts, *flat_args, call_jaxpr=jaxpr,
                                      fwd_jaxpr_thunk=self.fwd, num_consts=len(consts),
                                      bwd=self.bwd, out_trees=self.out_trees,
                                      symbolic_zeros=False)


def _check_cotangent(ct: Any, aval: ShapedArray, path: str) -> Any:
    expected = tangent_aval(aval)
    if ct is None:
        return instantiate(Zero(expected))
    ct = operand(ct)
    if ct.shape != expected.shape:
        raise ValueError(
            "Custom VJP bwd rule must produce an output with the same type as the args tuple "
            f"of the primal function, but at output{path} the bwd rule produced an output of "
            f"type {ct.aval.str_long()} corresponding to an input of type "
            f"{aval.str_long()}{mismatch_reason(ct.aval, aval)}")
    return ct


def _custom_vjp_jvp(fwd: _Rule, bwd: _Rule, primals: list, tangents: list
                    ) -> tuple[list, list]:
    """Reverse mode's view of a custom_vjp function: run fwd on the primals now; the
    tangents go through a ``custom_lin``, to be transposed (forward mode fails when it is
    evaluated: there is no JVP to evaluate)."""
    outs, residuals = fwd(*primals)
    if all(type(t) is Zero for t in tangents):
        return outs, [Zero.like(o) for o in outs]
    in_zeros = tuple(not is_differentiable(core.get_aval(p)) for p in primals)
    diff_out = [is_differentiable(o.aval) for o in outs]
    lin_in = [instantiate(t) for t, z in zip(tangents, in_zeros) if not z]
    lin_out = iter(custom_lin_p.bind(
        *residuals, *lin_in, num_res=len(residuals), bwd=bwd,
        out_avals=tuple(tangent_aval(o.aval) for o, d in zip(outs, diff_out) if d),
        symbolic_zeros=False, in_zeros=in_zeros))
    return outs, [next(lin_out) if d else Zero.like(o) for o, d in zip(outs, diff_out)]


def _custom_vjp_call_jvp(primals: list, tangents: list, *, call_jaxpr: ClosedJaxpr,
                         fwd_jaxpr_thunk: _Rule, num_consts: int, bwd: _Rule,
                         out_trees: Callable, symbolic_zeros: bool) -> tuple[list, list]:
    """A recorded call met by a JVP trace (e.g. in a loop body)."""
    return _custom_vjp_jvp(fwd_jaxpr_thunk, bwd, primals[num_consts:], tangents[num_consts:])


def _custom_lin_transpose(cts: list, *args: Any, num_res: int, bwd: _Rule,
                          out_avals: tuple[ShapedArray, ...], symbolic_zeros: bool,
                          in_zeros: tuple[bool, ...]) -> list[Any]:
    """Call bwd with the residuals and the output cotangents."""
    cts = [instantiate(ct) for ct in cts]
    cts_in = bwd(list(args[:num_res]), cts)
    return [None] * num_res + [ct for ct, z in zip(cts_in, in_zeros) if not z]


jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
pe.partial_eval_rules[custom_vjp_call_p] = _inline
transpose_rules[custom_lin_p] = _custom_lin_transpose
pp_param_rules[custom_vjp_call_p] = lambda params: [
    ("name", params["bwd"].primal_name), ("bwd", params["bwd"]),
    ("call_jaxpr", params["call_jaxpr"]), ("fwd", params["fwd_jaxpr_thunk"]),
    ("symbolic_zeros", params["symbolic_zeros"])]
pp_param_rules[custom_lin_p] = lambda params: [
    ("bwd", params["bwd"]), ("in_zeros", list(params["in_zeros"])),
    ("num_res", params["num_res"]), ("symbolic_zeros", params["symbolic_zeros"])]


def _custom_call_lowering(ctx: lowering.RuleContext, *args: Any, call_jaxpr: Any,
                          **params: Any) -> list[Any]:
    """A function with a custom derivative computes its ``call_jaxpr``, inline (the
    derivative rules were for the transformations, which are done)."""
    closed = call_jaxpr if isinstance(call_jaxpr, ClosedJaxpr) else ClosedJaxpr(call_jaxpr, [])
    return lowering.lower_closed_jaxpr(ctx.b, closed, args)


def _custom_lin_lowering(ctx: lowering.RuleContext, *args: Any, **params: Any) -> list[Any]:
    """``custom_lin`` stands for the tangent of a ``custom_vjp`` function, which has no JVP
    (it exists to be transposed): compiling one -- forward mode under ``jit`` -- fails
    with the error that evaluating it gives."""
    return custom_lin_p.eager_rule(*args, **params)


lowering.lowering_rules[custom_jvp_call_p] = _custom_call_lowering
lowering.lowering_rules[custom_vjp_call_p] = _custom_call_lowering
lowering.lowering_rules[custom_lin_p] = _custom_lin_lowering


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------
# A batched call carries batched rules: a custom rule is written for one example, so the
# batched rule runs it on batch tracers. As in JAX, an output is batched (along its first
# axis) only if the function's output depends on a batched input; the rules' outputs are
# laid out as the function's (their residuals all batched), so the three agree.


def _dims(batched: Sequence[bool]) -> list[int | None]:
    return [0 if b else None for b in batched]


def _joined(pair: tuple[list, list]) -> list[Any]:
    """A rule's two lists of outputs (primals and tangents, outputs and residuals) as one."""
    first, second = pair
    return [*first, *second]


def _batched(rule: _Rule, fun: Callable[..., Any]) -> _Rule:
    return _Rule(fun, rule.name, rule.primal_name)


def _run_batched(fun: Callable[..., list[Any]], axis_data: batching.AxisData,
                 args: Sequence[Any], dims: Sequence[int | None],
                 out_dims: Callable[[int], Sequence[int | None]]) -> list[Any]:
    """``fun`` (flat in and out) on batches, its outputs batched along ``out_dims(n)``
    (``n`` the number of outputs)."""
    count: list[int] = []

    def flat(*xs: Any) -> list[Any]:
        outs = fun(*xs)
        count.append(len(outs))
        return outs

    return batching.batch_flat(flat, axis_data, args, dims, lambda: out_dims(count[0]))[0]


def _batched_call(call_jaxpr: ClosedJaxpr, axis_data: batching.AxisData,
                  dims: Sequence[int | None]) -> tuple[ClosedJaxpr, list[bool]]:
    """The batched function, its batched outputs along axis 0, and which are batched."""
    batched, found = batching.batch_jaxpr(call_jaxpr, axis_data, dims)
    out_batched = [d is not None for d in found]
    if any(d not in (None, 0) for d in found):
        batched = batching.batch_jaxpr(call_jaxpr, axis_data, dims, _dims(out_batched))[0]
    return batched, out_batched


def _custom_jvp_call_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                              call_jaxpr: ClosedJaxpr, jvp_jaxpr_fun: _Rule, num_consts: int,
                              symbolic_zeros: bool) -> tuple[list[Any], list[int | None]]:
    arg_dims = dims[num_consts:]
    batched_call, out_batched = _batched_call(call_jaxpr, axis_data, dims)
    bound: list[bool] = []  # set once the bind below has returned
    by_rule: list[list[bool]] = []  # which outputs the JVP rule batched, if it ran in the bind

    def jvp(primals: list, tangents: list) -> tuple[list, list]:
        """Tangents are laid out as their primals are (they are tangents of the batches).
        Run by the bind (under ``jvp``), an output is batched where the rule's primal or
        tangent is, as in JAX; run later (from a jaxpr), as the function's outputs are."""
        n = len(primals)
        outs, found = batching.batch_flat(
            lambda *xs: _joined(jvp_jaxpr_fun(list(xs[:n]), list(xs[n:]))), axis_data,
            [*primals, *map(instantiate, tangents)], [*arg_dims, *arg_dims])
        half = len(outs) // 2
        batched = out_batched if bound else [
            p is not None or t is not None for p, t in zip(found[:half], found[half:])]
        if not bound:
            by_rule.append(batched)
        outs = [batching.matchaxis(axis_data, src, dst, x)
                for x, src, dst in zip(outs, found, _dims(batched) * 2)]
        return outs[:half], outs[half:]

    outs = custom_jvp_call_p.bind(*vals, call_jaxpr=batched_call,
                                  jvp_jaxpr_fun=_batched(jvp_jaxpr_fun, jvp),
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros)
    bound.append(True)
    return outs, _dims(by_rule[0] if by_rule else out_batched)


def _custom_vjp_call_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                              call_jaxpr: ClosedJaxpr, fwd_jaxpr_thunk: _Rule, num_consts: int,
                              bwd: _Rule, out_trees: Callable, symbolic_zeros: bool
                              ) -> tuple[list[Any], list[int | None]]:
    arg_dims = dims[num_consts:]
    batched_call, out_batched = _batched_call(call_jaxpr, axis_data, dims)
    out_dims = _dims(out_batched)

    def fwd(*primals: Any) -> tuple[list, list]:
        """Outputs as the function's; residuals all batched (``bwd`` takes them so)."""
        outs = _run_batched(lambda *xs: _joined(fwd_jaxpr_thunk(*xs)), axis_data,
                            primals, arg_dims, lambda n: out_dims + [0] * (n - len(out_dims)))
        return outs[:len(out_dims)], outs[len(out_dims):]

    def bwd_batched(residuals: list, cts: list) -> list[Any]:
        """Cotangents of the batches; an unbatched argument's is summed over the batch."""
        n = len(residuals)
        cts_in, ct_dims = batching.batch_flat(lambda *xs: bwd(list(xs[:n]), list(xs[n:])),
                                              axis_data, [*residuals, *cts],
                                              [0] * n + out_dims)
        return [_match_cotangent(axis_data, ct, src, dst)
                for ct, src, dst in zip(cts_in, ct_dims, arg_dims)]

    outs = custom_vjp_call_p.bind(*vals, call_jaxpr=batched_call,
                                  fwd_jaxpr_thunk=_batched(fwd_jaxpr_thunk, fwd),
                                  num_consts=num_consts, bwd=_batched(bwd, bwd_batched),
                                  out_trees=out_trees, symbolic_zeros=symbolic_zeros)
    return outs, out_dims


def _match_cotangent(axis_data: batching.AxisData, ct: Any, src: int | None, dst: int | None
                     ) -> Any:
    if dst is None and src is not None:
        return lax.reduce_sum(ct, (src,))
    return batching.matchaxis(axis_data, src, dst, ct)


batching.batching_rules[custom_lin_p] = _custom_lin_eager  # vmap of a JVP: the same error
batching.batching_rules[custom_jvp_call_p] = _custom_jvp_call_batching
batching.batching_rules[custom_vjp_call_p] = _custom_vjp_call_batching
