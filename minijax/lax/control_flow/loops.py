"""Loops as primitives: ``while_loop``, ``fori_loop``, ``scan`` and ``map``.

A Python loop under tracing is unrolled: the jaxpr gets one copy of the body per
iteration, and the number of iterations must be known while tracing. The loop primitives
instead hold the body once, as a jaxpr:

* ``while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts]`` repeats the body while
  the condition holds: any number of iterations, decided by values;
* ``scan[jaxpr, length, num_consts, num_carry, reverse, unroll]`` runs the body a fixed
  number of times, threading a *carry* through and slicing inputs ``xs`` / stacking
  outputs ``ys`` along their leading axis. A fixed trip count is what makes reverse-mode
  differentiation of a loop possible, so ``fori_loop`` with concrete bounds is a scan.

The carry must keep its type from one iteration to the next; a carry that starts as a
Python scalar (weakly typed) is first given the type the body returns.

The eager rules below are Python loops that evaluate the body jaxpr; the body's
operations are dispatched asynchronously as usual, but ``while`` waits for its
predicate at every iteration. They are the reference: outside this teaching core,
``minijax.compiler.eager_loops`` runs eager loops as one compiled program instead (as
JAX does), falling back on them for bodies with side effects. Each primitive's other
rules (differentiation, dead-code elimination, lowering) follow its definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, errors
from minijax.compiler.lowering import Builder, RuleContext, _region, lower_closed_jaxpr, register
from minijax.compiler.stablehlo_ir import Func, TensorType, Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.ad import Zero, instantiate, tangent_aval
from minijax.interpreters.transpose import backward_pass, is_undefined, transpose_rules
from minijax.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Var,
    consts_as_inputs,
    eval_closed_jaxpr,
    forwarded_inputs,
    has_effects,
    interleave,
    keep_outputs,
    move_inputs_to_front,
    pick,
    split_list,
)
from minijax.lax.base import (
    add,
    broadcast_in_dim,
    convert_element_type,
    full_like,
    lt,
    reduce_op,
    select,
)
from minijax.lax.control_flow.common import (
    cast_to,
    check_carry_type,
    flatten_operands,
    is_zero,
    promote_weak_inputs,
    trace_once,
    typematch,
)
from minijax.lax.reductions import reduce_or
from minijax.lax.shapes import stack, unstack
from minijax.tracing import DebugInfo, argument_names, trace_to_jaxpr
from minijax.tree_util import PyTreeDef

__all__ = ["fori_loop", "map", "scan", "scan_p", "while_loop", "while_p"]


def _check_arity(name: str, jaxpr: ClosedJaxpr, avals: Sequence[ShapedArray]) -> None:
    types_match = all(typematch(a, b) for a, b in zip(avals, jaxpr.in_avals))
    if len(jaxpr.in_avals) != len(avals) or not types_match:
        raise TypeError(
            f"{name} takes {[a.str_long() for a in jaxpr.in_avals]} but the operands are "
            f"{[a.str_long() for a in avals]}"
        )


def _restore_passed_through(moved: Sequence[bool], outs: Sequence[Any],
                            passed: Sequence[Any]) -> list[Any]:
    """Put the values a loop body passed through back among the loop's outputs."""
    outs, passed = iter(outs), iter(passed)
    return [next(passed) if m else next(outs) for m in moved]


def _regroup(closed: ClosedJaxpr, in_groups: Sequence[int], in_order: Sequence[int],
             out_groups: Sequence[int] = (), out_order: Sequence[int] = ()) -> ClosedJaxpr:
    """Reorder a jaxpr's inputs (and outputs): cut them into groups of the given sizes
    and put the groups in the given order. Loop primitives want their operands grouped
    as constants, carry, xs; a JVP jaxpr comes as primals, then tangents."""
    def reorder(items: list, groups: Sequence[int], order: Sequence[int]) -> list:
        if not groups:
            return items
        pieces = split_list(items, *groups)
        return [x for i in order for x in pieces[i]]

    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, reorder(j.invars, in_groups, in_order),
                             reorder(j.outvars, out_groups, out_order), j.eqns), closed.consts)


def _loop_jvp_fixed_point(body: ClosedJaxpr, const_nz: list[bool], carry_nz: list[bool],
                          xs_nz: list[bool]) -> tuple[ClosedJaxpr, list[Any], list[bool],
                                                       list[bool]]:
    """The JVP of a loop body (inputs: consts, carry, xs; outputs: carry, ys) once the set
    of carries with non-zero tangents has stopped growing: a carry whose tangent is zero
    on entry may stop being zero after one iteration. Returns the jaxpr, its constants,
    the carry mask and the mask of non-zero ``ys`` tangents."""
    num_carry = len(carry_nz)
    num_ys = len(body.out_avals) - num_carry
    while True:
        jaxpr, consts, out_nz = ad.jvp_jaxpr(body, const_nz + carry_nz + xs_nz,
                                             carry_nz + [False] * num_ys)
        carry_out_nz, ys_nz = split_list(out_nz, num_carry)
        if carry_out_nz == carry_nz:
            return jaxpr, consts, carry_nz, ys_nz
        carry_nz = [a or b for a, b in zip(carry_nz, carry_out_nz)]


def _index_dtype() -> np.dtype:
    """The type of a loop's counter in StableHLO: the default integer, int32 (int64 with
    ``jax_enable_x64``)."""
    return dtypes.canonicalize_dtype(np.int64)


# ---------------------------------------------------------------------------------------
# while
# ---------------------------------------------------------------------------------------


def _while_rule(*avals: ShapedArray, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                cond_nconsts: int, body_nconsts: int) -> list[ShapedArray]:
    cond_consts, body_consts, carry = split_list(avals, cond_nconsts, body_nconsts)
    _check_arity("while_loop cond_jaxpr", cond_jaxpr, cond_consts + carry)
    _check_arity("while_loop body_jaxpr", body_jaxpr, body_consts + carry)
    return body_jaxpr.out_avals


def _while_eager(*args: Any, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
                 cond_nconsts: int, body_nconsts: int) -> list[Any]:
    """Loop while the predicate holds. A *batched* predicate (``vmap`` of a loop whose
    condition depends on the example) has one value per example: loop while any holds,
    and let the examples whose predicate is false keep their carry (as XLA's lowering of
    JAX's batched while does)."""
    cond_consts, body_consts, carry = split_list(args, cond_nconsts, body_nconsts)
    carry_avals = body_jaxpr.in_avals[body_nconsts:]
    pred = eval_closed_jaxpr(cond_jaxpr, *cond_consts, *carry)[0]
    while bool(reduce_or(pred, tuple(range(pred.ndim))) if pred.ndim else pred):  # waits
        new = cast_to(eval_closed_jaxpr(body_jaxpr, *body_consts, *carry), carry_avals)
        carry = [select(broadcast_in_dim(pred, c.shape, tuple(range(pred.ndim))), n, c)
                 for n, c in zip(new, carry)] if pred.ndim else new
        pred = eval_closed_jaxpr(cond_jaxpr, *cond_consts, *carry)[0]
    return cast_to(carry, body_jaxpr.out_avals)


while_p = Primitive("while", multiple_results=True)
while_p.def_abstract_eval(_while_rule)
while_p.def_eager_rule(_while_eager)


# while's rules: JVP, transpose, partial evaluation, lowering. A while loop is forward
# mode only: it has no fixed trip count, so it cannot be transposed (reverse mode refuses
# it, as JAX does).


def _while_jvp(primals: list, tangents: list, *, cond_jaxpr: ClosedJaxpr,
               body_jaxpr: ClosedJaxpr, cond_nconsts: int, body_nconsts: int
               ) -> tuple[list, list]:
    """One ``while`` carrying primals and tangents; the condition ignores the tangents."""
    cond_consts, body_consts, carry = split_list(primals, cond_nconsts, body_nconsts)
    _, body_dots, carry_dots = split_list(tangents, cond_nconsts, body_nconsts)
    const_nz = [not is_zero(t) for t in body_dots]
    carry_nz = [not is_zero(t) for t in carry_dots]
    body, consts, carry_nz, _ = _loop_jvp_fixed_point(body_jaxpr, const_nz, carry_nz, [])
    nc, nb, nk = len(consts), len(body_consts), len(carry)
    body = _regroup(body, (nc, nb, nk, const_nz.count(True)), (0, 1, 3, 2, 4))
    cj = cond_jaxpr.jaxpr
    tangent_vars = [Var(tangent_aval(a)) for a in pick(body_jaxpr.in_avals[nb:], carry_nz)]
    cond = ClosedJaxpr(Jaxpr(cj.constvars, [*cj.invars, *tangent_vars], cj.outvars, cj.eqns),
                       cond_jaxpr.consts)
    carry_dots = [instantiate(t) for t in pick(carry_dots, carry_nz)]
    outs = while_p.bind(*cond_consts, *consts, *body_consts, *pick(body_dots, const_nz),
                        *carry, *carry_dots, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=cond_nconsts,
                        body_nconsts=nc + nb + const_nz.count(True))
    primals_out, tangents_out = split_list(outs, nk)
    zeros = [Zero.like(p) for p in primals_out]
    return primals_out, interleave(carry_nz, tangents_out, pick(zeros, carry_nz, keep=False))


ad.jvp_rules[while_p] = _while_jvp


def _while_transpose(cts: list, *args: Any, **params: Any) -> list[Any]:
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
        "with dynamic start/stop values. Try using lax.scan, or using fori_loop with "
        "static start/stop.")


transpose_rules[while_p] = _while_transpose


def _fresh(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A copy with new variables, for a jaxpr cut from one that is also kept: variables
    are named by identity when printed, so two jaxprs should not share any."""
    return trace_to_jaxpr(lambda *args: eval_closed_jaxpr(closed, *args), closed.in_avals)


def _while_partial_eval(trace: pe.PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
    """Run the known carries now with a smaller loop; record the whole loop for the rest.

    The recorded loop recomputes the known carries (the primals a tangent needs at each
    iteration): no residuals are saved, which is why it can be evaluated (forward mode,
    ``linearize``) but never transposed.
    """
    cond_nconsts, body_nconsts = params["cond_nconsts"], params["body_nconsts"]
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    unknown = [trace.is_unknown(x) for x in args]
    cond_uk, const_uk, carry_uk = split_list(unknown, cond_nconsts, body_nconsts)
    while True:
        known, _, out_uk, num_res = pe.partial_eval_jaxpr_nounits(
            body_jaxpr, const_uk + carry_uk, carry_uk)
        if out_uk == carry_uk:
            break
        carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
    everything = trace.record(while_p, args, params)
    pred_uk = pe.partial_eval_jaxpr(cond_jaxpr, cond_uk + carry_uk)[2][0]
    if pred_uk or all(carry_uk):  # nothing can run now
        return everything
    body = pe.dce_jaxpr(known, [True] * carry_uk.count(False) + [False] * num_res,
                        instantiate=True)[0]
    cj = cond_jaxpr.jaxpr
    cond = Jaxpr(cj.constvars, [*cj.invars[:cond_nconsts],
                                *pick(cj.invars[cond_nconsts:], carry_uk, keep=False)],
                 cj.outvars, cj.eqns)
    cond_consts, body_consts, carry = split_list(args, cond_nconsts, body_nconsts)
    with core.set_current_trace(trace.parent):
        known_outs = while_p.bind(
            *cond_consts, *pick(body_consts, const_uk, keep=False),
            *pick(carry, carry_uk, keep=False),
            cond_jaxpr=_fresh(ClosedJaxpr(cond, cond_jaxpr.consts)),
            body_jaxpr=_fresh(body), cond_nconsts=cond_nconsts,
            body_nconsts=const_uk.count(False))
    return interleave(carry_uk, pick(everything, carry_uk), known_outs)


pe.partial_eval_rules[while_p] = _while_partial_eval


@register(while_p)
def _while_lowering(ctx: RuleContext, *args: Value, cond_jaxpr: ClosedJaxpr,
                    body_jaxpr: ClosedJaxpr, cond_nconsts: int, body_nconsts: int
                    ) -> list[Value]:
    """``stablehlo.while`` carries everything, the constants of both jaxprs included.

    A batched predicate (from ``vmap``) holds one boolean per example: the loop runs while
    any is true, and an example whose predicate is false keeps its carry (a ``select``),
    as JAX lowers it."""
    b = ctx.b
    types = [a.type for a in args]

    def predicate(r: Builder, carry: list[Value]) -> Value:
        (pred,) = lower_closed_jaxpr(r, cond_jaxpr, carry[:cond_nconsts]
                                     + carry[cond_nconsts + body_nconsts:])
        return pred

    def cond(r: Builder, carry: list[Value]) -> list[Value]:
        pred = predicate(r, carry)
        if not pred.type.shape:
            return [pred]
        return reduce_op(r, [pred], [r.constant(np.bool_(False))], "stablehlo.or",
                         range(len(pred.type.shape)))

    def body(r: Builder, carry: list[Value]) -> list[Value]:
        consts = carry[cond_nconsts:cond_nconsts + body_nconsts]
        old = carry[cond_nconsts + body_nconsts:]
        outs = lower_closed_jaxpr(r, body_jaxpr, consts + old)
        if cond_jaxpr.out_avals[0].shape:
            pred = predicate(r, carry)
            dims = range(len(pred.type.shape))
            outs = [r.select(r.broadcast(pred, new.type.shape, dims), new, x)
                    for new, x in zip(outs, old)]
        return carry[:cond_nconsts + body_nconsts] + outs

    op = b.op("stablehlo.while", args, types, {}, [_region(b, types, cond),
                                                  _region(b, types, body)])
    return op.results[cond_nconsts + body_nconsts:]


def _trace_while(cond_fun: Callable, body_fun: Callable, carry: Any,
                 body_debug: DebugInfo) -> tuple[ClosedJaxpr, ClosedJaxpr, PyTreeDef]:
    """Trace both functions on the carry's avals; ``cond_fun`` must give a boolean scalar."""
    cond_jaxpr, cond_tree = trace_once(cond_fun, (carry,), DebugInfo("while_cond"))
    body_jaxpr, body_tree = trace_once(body_fun, (carry,), body_debug)
    if cond_tree.node_data() is not None or len(cond_jaxpr.out_avals) != 1:
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
    pred = cond_jaxpr.out_avals[0]
    if pred.shape != () or pred.dtype != np.bool_:
        raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                        f"{cond_jaxpr.out_avals}.")
    return cond_jaxpr, body_jaxpr, body_tree


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``while cond_fun(val): val = body_fun(val)``, as one primitive; returns ``val``."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    return _while_loop(cond_fun, body_fun, init_val, DebugInfo("while_body"))


def _while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any,
                body_debug: DebugInfo) -> Any:
    init, avals, tree = flatten_operands(init_val)
    cond_jaxpr, body_jaxpr, body_tree = _trace_while(cond_fun, body_fun, tree.unflatten(avals),
                                                     body_debug)
    user_body = body_debug.fun or body_fun
    if len(body_jaxpr.out_avals) != len(avals):
        check_carry_type("while_loop body", user_body, tree, avals, body_tree,
                         body_jaxpr.out_avals)
    init, changed = promote_weak_inputs(init, avals, body_jaxpr.out_avals)
    if changed:
        avals = [x.aval for x in init]
        cond_jaxpr, body_jaxpr, body_tree = _trace_while(
            cond_fun, body_fun, tree.unflatten(avals), body_debug)
    check_carry_type("while_loop body", user_body, tree, avals, body_tree, body_jaxpr.out_avals)
    cond_jaxpr, cond_consts = consts_as_inputs(cond_jaxpr)
    body_jaxpr, body_consts = consts_as_inputs(body_jaxpr)

    # A carry the body passes through unchanged, and the condition does not look at, is
    # a constant of the loop: JAX makes it a body constant (so vmap need not batch it).
    nb = len(body_consts)
    passed = [f == nb + i for i, f in enumerate(forwarded_inputs(body_jaxpr.jaxpr))]
    pruned_cond, kept = pe.dce_jaxpr(cond_jaxpr, True,
                                     [True] * len(cond_consts) + [not p for p in passed])
    moved = [not k for k in kept[len(cond_consts):]]
    passed = [x for x, m in zip(init, moved) if m]
    if passed:
        cond_jaxpr = pruned_cond
        body_jaxpr = keep_outputs(body_jaxpr, [not m for m in moved])
        body_jaxpr = move_inputs_to_front(body_jaxpr, [False] * nb + moved)
        body_consts = passed + body_consts
        init = [x for x, m in zip(init, moved) if not m]

    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr=cond_jaxpr,
                        body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    return body_tree.unflatten(_restore_passed_through(moved, outs, passed))


# ---------------------------------------------------------------------------------------
# scan
# ---------------------------------------------------------------------------------------


def _scan_rule(*avals: ShapedArray, jaxpr: ClosedJaxpr, length: int, reverse: bool,
               unroll: int, num_consts: int, num_carry: int) -> list[ShapedArray]:
    consts, carry, xs = split_list(avals, num_consts, num_carry)
    if any(x.shape[:1] != (length,) for x in xs):
        raise TypeError(f"scan xs must have leading axis {length}, got "
                        f"{[x.str_long() for x in xs]}")
    _check_arity("scan jaxpr", jaxpr, consts + carry + [x.update(shape=x.shape[1:]) for x in xs])
    carry_out, ys = split_list(jaxpr.out_avals, num_carry)
    return carry_out + [y.update(shape=(length, *y.shape)) for y in ys]


def _scan_eager(*args: Any, jaxpr: ClosedJaxpr, length: int, reverse: bool, unroll: int,
                num_consts: int, num_carry: int) -> list[Any]:
    """Run the body ``length`` times: slice ``xs``, thread the carry, stack ``ys``."""
    consts, carry, xs = split_list(args, num_consts, num_carry)
    carry_avals = jaxpr.in_avals[num_consts:num_consts + num_carry]
    x_slices = [unstack(x) for x in xs]
    ys = []
    for i in reversed(range(length)) if reverse else range(length):
        outs = eval_closed_jaxpr(jaxpr, *consts, *carry, *(x[i] for x in x_slices))
        carry = cast_to(outs[:num_carry], carry_avals)
        ys.append(outs[num_carry:])
    if reverse:
        ys.reverse()
    carry_out_avals, y_avals = split_list(jaxpr.out_avals, num_carry)
    columns = [list(column) for column in zip(*ys)] if ys else [[] for _ in y_avals]
    stacked = [_stack(column, aval) for column, aval in zip(columns, y_avals)]
    return cast_to(carry, carry_out_avals) + stacked


def _stack(values: list[Any], aval: ShapedArray) -> Any:
    """One ``y`` per iteration, as one array with a new leading axis."""
    if not values:  # a scan of length 0
        return broadcast_in_dim(convert_element_type(0, aval.dtype, aval.weak_type),
                                (0, *aval.shape), ())
    return stack(cast_to(values, [aval] * len(values)))


scan_p = Primitive("scan", multiple_results=True)
scan_p.def_abstract_eval(_scan_rule)
scan_p.def_eager_rule(_scan_eager)


# scan's rules: JVP, transpose, partial evaluation, DCE, lowering. The JVP is one scan
# whose carry holds primals and tangents. A fixed trip count is what makes a scan
# transposable: the transpose of a linear scan is a scan of the transposed body run in
# the opposite direction, carrying the cotangent of the carry and accumulating the
# cotangents of the loop's constants. Partial evaluation splits the loop in two: the
# known loop emits one residual per iteration as an extra stacked output, and the
# unknown loop consumes them as ``xs``.


def _scan_jvp(primals: list, tangents: list, *, jaxpr: ClosedJaxpr, length: int,
              reverse: bool, unroll: int, num_consts: int, num_carry: int
              ) -> tuple[list, list]:
    """One ``scan`` whose consts, carry and xs each hold primals, then non-zero tangents."""
    consts, carry, xs = split_list(primals, num_consts, num_carry)
    const_dots, carry_dots, xs_dots = split_list(tangents, num_consts, num_carry)
    const_nz, carry_nz, xs_nz = ([not is_zero(t) for t in group]
                                 for group in (const_dots, carry_dots, xs_dots))
    body, body_consts, carry_nz, ys_nz = _loop_jvp_fixed_point(jaxpr, const_nz, carry_nz,
                                                               xs_nz)
    nb, nys, n_carry_dots = len(body_consts), len(ys_nz), carry_nz.count(True)
    # inputs (body consts, consts, carry, xs, their tangents) and outputs (carry, ys,
    # their tangents), put in the layout scan wants: consts, carry, xs / carry, ys
    body = _regroup(body, (nb, num_consts, num_carry, len(xs), const_nz.count(True),
                           n_carry_dots), (0, 1, 4, 2, 5, 3, 6),
                    (num_carry, nys, n_carry_dots), (0, 2, 1, 3))
    carry_dots = [instantiate(t) for t in pick(carry_dots, carry_nz)]
    outs = scan_p.bind(*body_consts, *consts, *pick(const_dots, const_nz), *carry,
                       *carry_dots, *xs, *pick(xs_dots, xs_nz), jaxpr=body, length=length,
                       reverse=reverse, unroll=unroll,
                       num_consts=nb + num_consts + const_nz.count(True),
                       num_carry=num_carry + n_carry_dots)
    carry_out, carry_dots_out, ys, ys_dots = split_list(outs, num_carry, n_carry_dots, nys)
    zeros = [Zero.like(p) for p in [*carry_out, *ys]]
    nonzeros = carry_nz + ys_nz
    return [*carry_out, *ys], interleave(nonzeros, carry_dots_out + ys_dots,
                                         pick(zeros, nonzeros, keep=False))


ad.jvp_rules[scan_p] = _scan_jvp


def _zeros(aval: ShapedArray) -> Any:
    """Zeros of exactly ``aval`` (weak type included), with the current trace."""
    return broadcast_in_dim(convert_element_type(0, aval.dtype, aval.weak_type), aval.shape, ())


def _slice_aval(x: Any) -> ShapedArray:
    """The type of one iteration's slice of a stacked value."""
    aval = core.get_aval(x)
    return aval.update(shape=aval.shape[1:])


def _scan_transpose(cts: list, *args: Any, jaxpr: ClosedJaxpr, length: int, reverse: bool,
                    unroll: int, num_consts: int, num_carry: int) -> list[Any]:
    """The transposed body, scanned in the opposite direction.

    Its carry holds the running sum of the cotangents of the linear consts, then the
    cotangent of the carry; its xs are the cotangents of the ``ys``, then the residual
    ``xs``; its ``ys`` are the cotangents of the linear ``xs``. Every carry is treated as
    linear (a linear scan's carry is a tangent). As in JAX, the body sees the carry with
    the type of the cotangent given for it, which need not be the carry's own (a Python
    float makes a weakly typed carry; its cotangent usually is not): so transposing the
    body adds no conversions to the carry's weak type.
    """
    consts, carry, xs = split_list(args, num_consts, num_carry)
    const_lin, xs_lin = [is_undefined(c) for c in consts], [is_undefined(x) for x in xs]
    res_consts, res_xs = pick(consts, const_lin, keep=False), pick(xs, xs_lin, keep=False)
    ct_carry, ct_ys = split_list(cts, num_carry)
    ct_carry = [_zeros(ct.aval) if is_zero(ct) else ct for ct in ct_carry]
    ys_mask = [not is_zero(ct) for ct in ct_ys]
    y_avals = jaxpr.out_avals[num_carry:]
    sums = [_zeros(c.aval) for c in pick(consts, const_lin)]
    linear = const_lin + [True] * num_carry + xs_lin

    def body(*values: Any) -> list[Any]:
        rc, acc, ctc, cty, rx = split_list(values, len(res_consts), len(sums), num_carry,
                                       ys_mask.count(True))
        inputs = [*interleave(const_lin, [None] * len(consts), rc), *[None] * num_carry,
                  *interleave(xs_lin, [None] * len(xs), rx)]
        ct_out = [*ctc, *interleave(ys_mask, cty,
                                    [Zero(a) for a in pick(y_avals, ys_mask, keep=False)])]
        # The linear consts' cotangents are added to the running sums as they arrive.
        starts = [*interleave(const_lin, acc, [None] * len(rc)),
                  *[Zero(core.get_aval(c)) for c in ctc]]
        ct_consts, ct_carry_in, ct_xs = split_list(
            backward_pass(jaxpr.jaxpr, jaxpr.consts, linear, inputs, ct_out, starts),
            num_consts, num_carry)
        return [instantiate(ct) for ct in
                [*pick(ct_consts, const_lin), *ct_carry_in, *pick(ct_xs, xs_lin)]]

    given_ys = pick(ct_ys, ys_mask)
    avals = [core.get_aval(v) for v in [*res_consts, *sums, *ct_carry]]
    avals += [_slice_aval(v) for v in [*given_ys, *res_xs]]
    body_jaxpr, body_consts = consts_as_inputs(trace_to_jaxpr(body, avals))
    outs = scan_p.bind(*body_consts, *res_consts, *sums, *ct_carry, *given_ys, *res_xs,
                       jaxpr=body_jaxpr, length=length, reverse=not reverse, unroll=unroll,
                       num_consts=len(body_consts) + len(res_consts),
                       num_carry=len(sums) + num_carry)
    ct_consts, ct_carry, ct_xs = split_list(outs, len(sums), num_carry)
    return [*interleave(const_lin, ct_consts, [None] * len(consts)),
            *[ct if is_undefined(c) else None for ct, c in zip(ct_carry, carry)],
            *interleave(xs_lin, ct_xs, [None] * len(xs))]


transpose_rules[scan_p] = _scan_transpose


def _scan_partial_eval(trace: pe.PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
    """Split the loop in two: a known scan, run now, that also stacks the residuals of
    every iteration as extra ``ys``; and an unknown scan, recorded, that reads them as
    ``xs``. As in JAX, residuals that depend on the known consts alone are computed once,
    before the loop (:func:`_hoist`), and become consts of the unknown scan; a residual
    that is simply a known ``xs`` operand is passed on as it is instead of being stacked."""
    jaxpr, num_consts, num_carry = params["jaxpr"], params["num_consts"], params["num_carry"]
    unknown = [trace.is_unknown(x) for x in args]
    if all(unknown):
        return trace.record(scan_p, args, params)
    const_uk, carry_uk, xs_uk = split_list(unknown, num_consts, num_carry)
    num_ys = len(jaxpr.out_avals) - num_carry
    while True:  # an unknown carry makes the carries it feeds unknown: iterate
        known, unk, out_uk, num_res = pe.partial_eval_jaxpr_nounits(
            jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * num_ys)
        if out_uk[:num_carry] == carry_uk:
            break
        carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
    in_uk = const_uk + carry_uk + xs_uk
    known_consts, known_carry, known_xs = split_list(pick(args, in_uk, keep=False),
                                                     const_uk.count(False),
                                                     carry_uk.count(False))
    n_known_out = len(known.out_avals) - num_res
    with core.set_current_trace(trace.parent):
        invariant, invariant_values, loop, loop_consts = _hoist(known, known_consts,
                                                                n_known_out)

    # where each loop-dependent residual comes from: a known xs operand (passed on), or
    # the known loop's body (one value per iteration, stacked)
    body = loop.jaxpr
    loop_res = body.outvars[n_known_out:]
    first_xs = len(loop_consts) + len(known_carry)
    position = {v: i - first_xs for i, v in enumerate(body.invars) if i >= first_xs}
    which_xs = [position.get(r, -1) if type(r) is Var else -1 for r in loop_res]
    stacked = [i < 0 for i in which_xs]
    body = Jaxpr(body.constvars, body.invars,
                 [*body.outvars[:n_known_out], *pick(loop_res, stacked)], body.eqns)
    with core.set_current_trace(trace.parent):
        outs = scan_p.bind(*loop_consts, *known_carry, *known_xs,
                           jaxpr=ClosedJaxpr(body, loop.consts), length=params["length"],
                           reverse=params["reverse"], unroll=params["unroll"],
                           num_consts=len(loop_consts), num_carry=len(known_carry))
    known_outs, stacked_values = split_list(outs, n_known_out)
    stacked_values = iter(stacked_values)
    per_iteration = [known_xs[i] if i >= 0 else next(stacked_values) for i in which_xs]
    res_values = interleave(invariant, invariant_values, per_iteration)

    u = unk.jaxpr
    res_vars, unknown_in = split_list(u.invars, num_res)
    n_uc = const_uk.count(True)
    body = Jaxpr(u.constvars, [*pick(res_vars, invariant), *unknown_in,
                               *pick(res_vars, invariant, keep=False)], u.outvars, u.eqns)
    unknown_outs = trace.record(
        scan_p, [*pick(res_values, invariant), *pick(args, in_uk),
                 *pick(res_values, invariant, keep=False)],
        dict(params, jaxpr=ClosedJaxpr(body, unk.consts),
             num_consts=invariant.count(True) + n_uc, num_carry=carry_uk.count(True)))
    return interleave(out_uk, unknown_outs, known_outs)


def _hoist(known: ClosedJaxpr, consts: list[Any], n_out: int
           ) -> tuple[list[bool], list[Any], ClosedJaxpr, list[Any]]:
    """Split the known loop body (inputs: consts, carry, xs; outputs: ``n_out`` outputs,
    then residuals) into what depends on the consts alone, computed here once, and the
    loop. Returns which residuals are loop-invariant, their values, the loop's body and
    the consts the loop's body takes (values computed here). A body with side effects
    is left whole: its effects must happen once per iteration."""
    n_res = len(known.out_avals) - n_out
    if has_effects(known.jaxpr):
        return [False] * n_res, [], known, consts
    n_loop_in = len(known.in_avals) - len(consts)
    hoist, loop, loop_dependent, _ = pe.partial_eval_jaxpr_nounits(
        known, [False] * len(consts) + [True] * n_loop_in, [True] * n_out + [False] * n_res)
    values = eval_closed_jaxpr(hoist, *consts)
    invariant = [not d for d in loop_dependent[n_out:]]
    invariant_values, loop_consts = split_list(values, invariant.count(True))
    return invariant, invariant_values, loop, loop_consts


pe.partial_eval_rules[scan_p] = _scan_partial_eval


def _scan_dce(eqn: JaxprEqn, used_outputs: list[bool]) -> JaxprEqn:
    """The loop without unused ``ys`` and carries. A carry stays if it is used after the
    loop or its value feeds a carry that stays: iterate to a fixed point."""
    params = eqn.params
    num_consts, num_carry = params["num_consts"], params["num_carry"]
    body = params["jaxpr"]
    num_xs = len(body.in_avals) - num_consts - num_carry
    used_carry, used_ys = split_list(used_outputs, num_carry)
    while True:
        new_body, used_inputs = pe.dce_jaxpr(
            body, used_carry + used_ys, [False] * num_consts + used_carry + [False] * num_xs)
        used_consts, used_carry_in, _ = split_list(used_inputs, num_consts, num_carry)
        if used_carry_in == used_carry:
            break
        used_carry = used_carry_in
    new_params = dict(params, jaxpr=new_body, num_consts=used_consts.count(True),
                      num_carry=used_carry.count(True))
    return JaxprEqn(scan_p, pick(eqn.invars, used_inputs),
                    pick(eqn.outvars, used_carry + used_ys), new_params, eqn.source_info)


pe.dce_rules[scan_p] = _scan_dce


def _dynamic_index_in_dim(b: Builder, x: TensorType) -> Func:
    """JAX's jitted helper ``x[i]`` along axis 0 (a private function per type)."""

    def build(f: Builder, args: list[Value]) -> list[Value]:
        operand, i = args
        zeros = [f.constant(0, _index_dtype()) for _ in x.shape[1:]]
        piece = f.emit("stablehlo.dynamic_slice", operand, i, *zeros,
                       type=TensorType((1, *x.shape[1:]), x.dtype), sizes=(1, *x.shape[1:]))
        return [f.emit("stablehlo.reshape", piece, type=TensorType(x.shape[1:], x.dtype))]

    index = TensorType((), _index_dtype())
    return b.module.function("dynamic_index_in_dim", [x, index], build,
                             key=("dynamic_index_in_dim", x))


def _dynamic_update_index_in_dim(b: Builder, ys: TensorType) -> Func:
    """JAX's jitted helper ``ys.at[i].set(y)`` along axis 0."""

    def build(f: Builder, args: list[Value]) -> list[Value]:
        buffer, y, i = args
        rank = len(ys.shape)
        y = f.broadcast(y, (1, *ys.shape[1:]), range(1, rank))
        zeros = [f.constant(0, _index_dtype()) for _ in ys.shape[1:]]
        return [f.emit("stablehlo.dynamic_update_slice", buffer, y, i, *zeros)]

    y_type = TensorType(ys.shape[1:], ys.dtype)
    index = TensorType((), _index_dtype())
    return b.module.function("dynamic_update_index_in_dim", [ys, y_type, index], build,
                             key=("dynamic_update_index_in_dim", ys))


@register(scan_p)
def _scan_lowering(ctx: RuleContext, *args: Value, jaxpr: ClosedJaxpr, length: int,
                   reverse: bool, unroll: int, num_consts: int, num_carry: int) -> list[Value]:
    """A ``while`` loop over a counter, as JAX lowers ``scan``: each iteration slices
    ``x = xs[i]``, calls the body, and writes ``y`` into ``ys[i]`` (``unroll`` is
    ignored: the loop is never unrolled)."""
    b = ctx.b
    consts, carry, xs = (list(args[:num_consts]), list(args[num_consts:num_consts + num_carry]),
                         list(args[num_consts + num_carry:]))
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [b.broadcast(b.constant(0, a.dtype), (length, *a.shape), ()) for a in y_avals]
    if length == 0:
        return carry + ys
    index_dtype = _index_dtype()
    loop_consts = xs + consts
    types = [v.type for v in loop_consts] + [TensorType((), index_dtype)] \
        + [v.type for v in carry + ys]
    n_fixed = len(loop_consts)

    def cond(r: Builder, state: list[Value]) -> list[Value]:
        return [r.compare(state[n_fixed], r.constant(length, index_dtype), "LT")]

    def body(r: Builder, state: list[Value]) -> list[Value]:
        i = state[n_fixed]
        loop_xs, loop_consts_ = state[:len(xs)], state[len(xs):n_fixed]
        loop_carry = state[n_fixed + 1:n_fixed + 1 + num_carry]
        loop_ys = state[n_fixed + 1 + num_carry:]
        index = i
        if reverse:
            index = r.emit("stablehlo.subtract", r.constant(length, index_dtype), i)
            index = r.emit("stablehlo.subtract", index, r.constant(1, index_dtype))
        x_slices = [r.call(_dynamic_index_in_dim(r, x.type), [x, index])[0] for x in loop_xs]
        body_func = r.module.jaxpr_function("closed_call", jaxpr)
        outs = r.call(body_func, loop_consts_ + loop_carry + x_slices)
        new_ys = [r.call(_dynamic_update_index_in_dim(r, buf.type), [buf, y, index])[0]
                  for buf, y in zip(loop_ys, outs[num_carry:])]
        next_i = r.emit("stablehlo.add", i, r.constant(1, index_dtype))
        return state[:n_fixed] + [next_i] + outs[:num_carry] + new_ys

    init = loop_consts + [b.constant(0, index_dtype)] + carry + ys
    op = b.op("stablehlo.while", init, types, {}, [_region(b, types, cond),
                                                  _region(b, types, body)])
    return op.results[n_fixed + 1:]


def _scan_length(xs: list[Any], length: Any) -> int:
    """The number of iterations: the leading axis of every ``xs`` leaf, and ``length``."""
    scalars = [str(x) for x in xs if x.ndim == 0]
    if scalars:
        raise ValueError(f"scan got value with no leading axis to scan over: "
                         f"{', '.join(scalars)}.")
    lengths = [x.shape[0] for x in xs]
    if length is not None:
        if not core.is_concrete(length):
            raise errors.ConcretizationTypeError(
                length.aval.str_long(),
                "The `length` argument to `scan` expects a concrete `int` value. For "
                "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`.",
                length._context())
        length = int(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def _unroll(unroll: Any, length: int) -> int:
    if isinstance(unroll, bool):
        return max(length, 1) if unroll else 1
    if int(unroll) < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    return int(unroll)


def _trace_scan_body(f: Callable, carry: Any, x: Any, debug: DebugInfo
                     ) -> tuple[ClosedJaxpr, PyTreeDef, PyTreeDef]:
    jaxpr, out_tree = trace_once(f, (carry, x), debug)
    node = out_tree.node_data()
    if node is None or node[0] not in (tuple, list) or len(out_tree.children()) != 2:
        shown = out_tree.unflatten(jaxpr.out_avals)
        if node is None:  # a single array: JAX shows its type, "~" marking a weak type
            shown = ("~" if shown.weak_type else "") + shown.str_long()
        raise TypeError(f"scan body output must be a pair, got {shown}.")
    carry_tree, ys_tree = out_tree.children()
    return jaxpr, carry_tree, ys_tree


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1, _split_transpose: bool = False) -> Any:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; return the final
    carry and the ``y`` s stacked (in the order of ``xs``, also when ``reverse``)."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    return _scan(f, init, xs, length, reverse, unroll, DebugInfo("scan"))


def _scan(f: Callable, init: Any, xs: Any, length: int | None, reverse: bool,
          unroll: int | bool, debug: DebugInfo) -> Any:
    init_flat, init_avals, init_tree = flatten_operands(init)
    xs_flat, xs_avals, xs_tree = flatten_operands(xs)
    length = _scan_length(xs_flat, length)
    x_tree = xs_tree.unflatten(a.update(shape=a.shape[1:]) for a in xs_avals)
    user_f = debug.fun or f

    jaxpr, carry_tree, ys_tree = _trace_scan_body(f, init_tree.unflatten(init_avals), x_tree,
                                                  debug)
    carry_out_avals = jaxpr.out_avals[:carry_tree.num_leaves]
    if len(carry_out_avals) != len(init_avals):
        check_carry_type("scan body", user_f, init_tree, init_avals, carry_tree, carry_out_avals)
    init_flat, changed = promote_weak_inputs(init_flat, init_avals, carry_out_avals)
    if changed:
        init_avals = [x.aval for x in init_flat]
        jaxpr, carry_tree, ys_tree = _trace_scan_body(f, init_tree.unflatten(init_avals),
                                                      x_tree, debug)
        carry_out_avals = jaxpr.out_avals[:carry_tree.num_leaves]
    check_carry_type("scan body", user_f, init_tree, init_avals, carry_tree, carry_out_avals)
    jaxpr, consts = consts_as_inputs(jaxpr)
    carry_out, ys = _bind_scan(jaxpr, consts, init_flat, xs_flat, length=length,
                               reverse=bool(reverse), unroll=_unroll(unroll, length))
    return carry_tree.unflatten(carry_out), ys_tree.unflatten(ys)


def _bind_scan(jaxpr: ClosedJaxpr, consts: list[Any], init: list[Any], xs: list[Any],
               **params: Any) -> tuple[list[Any], list[Any]]:
    """Bind ``scan``, leaving out of the loop what its body merely passes through (as JAX
    does): a carry returned unchanged is a constant, a ``y`` that is the current ``x`` is
    ``xs`` itself. Returns the flat final carry and ``ys``."""
    num_consts, num_carry = len(consts), len(init)
    carry_fwd, ys_fwd = split_list(forwarded_inputs(jaxpr.jaxpr), num_carry)
    moved = [fwd == num_consts + i for i, fwd in enumerate(carry_fwd)]
    passed = [x for x, m in zip(init, moved) if m]
    if passed:
        jaxpr = keep_outputs(jaxpr, [not m for m in moved] + [True] * len(ys_fwd))
        jaxpr = move_inputs_to_front(jaxpr, [False] * num_consts + moved + [False] * len(xs))
        consts = passed + consts
        init = [x for x, m in zip(init, moved) if not m]
    first_x = num_consts + num_carry
    ys_from_xs = [fwd - first_x if fwd is not None and fwd >= first_x else None
                  for fwd in ys_fwd]
    jaxpr = keep_outputs(jaxpr, [True] * len(init) + [j is None for j in ys_from_xs])

    outs = scan_p.bind(*consts, *init, *xs, jaxpr=jaxpr, num_consts=len(consts),
                       num_carry=len(init), **params)
    carry_out, ys = split_list(outs, len(init))
    ys = iter(ys)
    ys = [next(ys) if j is None else xs[j] for j in ys_from_xs]
    return _restore_passed_through(moved, carry_out, passed), ys


# ---------------------------------------------------------------------------------------
# fori_loop and map: written with scan and while
# ---------------------------------------------------------------------------------------


def _increment(i: Any) -> Any:
    return add(i, full_like(i, 1))


def _below_upper(carry: tuple) -> Any:
    """``fori_loop``'s condition, one function for every loop (so its trace is reused)."""
    return lt(carry[0], carry[1])


def _bounds_dtype(lower: Any, upper: Any) -> np.dtype:
    """The loop counter's dtype. A Python int bound adopts the other bound's dtype."""
    lower_dtype, upper_dtype = dtypes.dtype(lower), dtypes.dtype(upper)
    if lower_dtype == upper_dtype:
        return lower_dtype
    if lower_dtype.kind == "i" and upper_dtype.kind == "i":
        lower_weak, upper_weak = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
        if lower_weak and not upper_weak:
            return upper_dtype
        if upper_weak and not lower_weak:
            return lower_dtype
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lower_dtype.name} and {upper_dtype.name}")


def _static_bounds(lower: Any, upper: Any) -> tuple[int, int] | None:
    """The bounds as Python ints, if they are known now."""
    if not (core.is_concrete(lower) and core.is_concrete(upper)):
        return None
    try:
        return int(lower), int(upper)
    except TypeError:
        return None


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``; returns ``val``.

    With bounds known while tracing this is a ``scan`` of fixed length (which reverse-mode
    differentiation needs); otherwise a ``while`` loop, the counter being part of the carry.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    dtype = _bounds_dtype(lower, upper)
    names = argument_names(body_fun, (lower, init_val))
    bounds = _static_bounds(lower, upper)
    if bounds is not None:
        start, stop = bounds

        def scan_body(carry: tuple, _: None) -> tuple:
            i, x = carry
            return (_increment(i), body_fun(i, x)), None

        debug = DebugInfo("fori_loop", body_fun, names)
        unroll = False if unroll is None else unroll
        (_, result), _ = _scan(scan_body, (start, init_val), None, max(stop - start, 0),
                               False, unroll, debug)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    lower, upper = (convert_element_type(b, dtype) if dtypes.dtype(b) != dtype else b
                    for b in (lower, upper))

    def while_body(carry: tuple) -> tuple:
        i, stop, x = carry
        return _increment(i), stop, body_fun(i, x)

    names = (names[0], "", *names[1:]) if names else ()  # "": the bound, not an argument
    _, _, result = _while_loop(_below_upper, while_body,
                               (lower, upper, init_val), DebugInfo("fori_loop", body_fun, names))
    return result


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:
    """``f`` applied to every slice of ``xs`` along the leading axis, results stacked."""
    if batch_size is not None:
        raise NotImplementedError("lax.map with batch_size needs vmap, which minijax does "
                                  "not have yet")
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------


def _batched_carry(body: ClosedJaxpr, axis_data: batching.AxisData, consts_batched: list[bool],
                   carry_batched: list[bool], xs_batched: Sequence[bool] = ()) -> list[bool]:
    """Which carries are batched: those batched on the way in, and those the body makes
    batched, until nothing changes (each round adds one at least)."""
    for _ in range(len(carry_batched) + 1):
        _, outs = batching.batch_jaxpr_at_front(body, axis_data,
                                                [*consts_batched, *carry_batched, *xs_batched])
        now = [a or b for a, b in zip(carry_batched, outs)]
        if now == carry_batched:
            return carry_batched
        carry_batched = now
    raise AssertionError("the batched carry reached no fixpoint")


def _while_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                    cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, cond_nconsts: int,
                    body_nconsts: int) -> tuple[list[Any], list[int | None]]:
    """JAX's rule. If the predicate is batched (examples stop at different times), every
    carry is batched along axis 0 and the loop runs until no example wants more, each
    keeping its carry once its predicate is false (see the eager rule). Otherwise batched
    carries go right after the predicate's own batch axes, if it has any (a loop vmapped
    twice)."""
    cconst_dims, bconst_dims, init_dims = split_list(dims, cond_nconsts, body_nconsts)
    cconsts, bconsts, init = split_list(vals, cond_nconsts, body_nconsts)
    carry_batched = _batched_carry(body_jaxpr, axis_data, [d is not None for d in bconst_dims],
                                   [d is not None for d in init_dims])
    (pred_dim,) = batching.batch_jaxpr(cond_jaxpr, axis_data,
                                       cconst_dims + [0 if b else None for b in carry_batched]
                                       )[1]
    if pred_dim is not None:
        carry_dims: list[int | None] = [0] * len(init)
    else:
        rank = cond_jaxpr.out_avals[0].ndim
        carry_dims = [rank if b else None for b in carry_batched]
    body, _ = batching.batch_jaxpr(body_jaxpr, axis_data, bconst_dims + carry_dims, carry_dims)
    cond, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, cconst_dims + carry_dims,
                                   [None if pred_dim is None else 0])
    init = [x if new is None else batching.matchaxis(axis_data, old, new, x)
            for x, old, new in zip(init, init_dims, carry_dims)]
    outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    return outs, carry_dims


def _scan_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                   jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, **params: Any
                   ) -> tuple[list[Any], list[int | None]]:
    """JAX's rule: batched consts and carries along axis 0, batched ``xs`` along axis 1
    (their slices are then batched along 0), and so the stacked ``ys`` along axis 1."""
    const_dims, init_dims, xs_dims = split_list(dims, num_consts, num_carry)
    consts, init, xs = split_list(vals, num_consts, num_carry)
    consts_batched = [d is not None for d in const_dims]
    xs_batched = [d is not None for d in xs_dims]
    carry_batched = _batched_carry(jaxpr, axis_data, consts_batched,
                                   [d is not None for d in init_dims], xs_batched)
    in_batched = consts_batched + carry_batched + xs_batched
    found = batching.batch_jaxpr_at_front(jaxpr, axis_data, in_batched)[1]
    ys_batched = found[num_carry:]
    body, _ = batching.batch_jaxpr_at_front(jaxpr, axis_data, in_batched,
                                            carry_batched + ys_batched)
    consts = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(consts, const_dims)]
    init = [batching.matchaxis(axis_data, d, 0, x) if b else x
            for x, d, b in zip(init, init_dims, carry_batched)]
    xs = [x if d is None else batching.moveaxis(x, d, 1) for x, d in zip(xs, xs_dims)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, num_consts=num_consts,
                       num_carry=num_carry, **params)
    return outs, ([0 if b else None for b in carry_batched]
                  + [1 if b else None for b in ys_batched])


batching.batching_rules[while_p] = _while_batching
batching.batching_rules[scan_p] = _scan_batching
