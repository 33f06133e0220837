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
JAX does), falling back on them for bodies with side effects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, errors
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import batching
from minijax.jaxpr import ClosedJaxpr, eval_closed_jaxpr
from minijax.lax.control_flow.common import (
    DebugInfo,
    argument_names,
    cast_to,
    check_carry_type,
    consts_as_inputs,
    flatten_operands,
    forwarded_inputs,
    keep_outputs,
    move_inputs_to_front,
    promote_weak_inputs,
    remove_dead_code,
    split_list,
    trace_function,
    typematch,
)
from minijax.lax.elementwise import add, convert_element_type, lt, select
from minijax.lax.reductions import reduce_or
from minijax.lax.shapes import broadcast_in_dim, full_like, stack, unstack
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


def _trace_while(cond_fun: Callable, body_fun: Callable, carry: Any,
                 body_debug: DebugInfo) -> tuple[ClosedJaxpr, ClosedJaxpr, PyTreeDef]:
    """Trace both functions on the carry's avals; ``cond_fun`` must give a boolean scalar."""
    cond_jaxpr, cond_tree = trace_function(cond_fun, (carry,), DebugInfo("while_cond"))
    body_jaxpr, body_tree = trace_function(body_fun, (carry,), body_debug)
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
    pruned_cond, kept = remove_dead_code(
        cond_jaxpr, [True] * len(cond_consts) + [not p for p in passed])
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
    jaxpr, out_tree = trace_function(f, (carry, x), debug)
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
    _, _, result = _while_loop(lambda carry: lt(carry[0], carry[1]), while_body,
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
