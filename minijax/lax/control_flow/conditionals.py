"""``cond`` and ``switch``: apply one of several functions, chosen by a value.

Python's ``if`` needs a concrete boolean, which a traced value does not have. ``cond``
instead traces *every* branch into a jaxpr and records one ``cond`` equation that holds
them all (``branches=(false_jaxpr, true_jaxpr)``); which branch runs is decided later,
by the value of an ``int32`` index. Every branch must therefore return the same types.

Eagerly, the index is known: the ``cond`` primitive simply evaluates the chosen branch.
Its other rules (differentiation, dead-code elimination, lowering) follow its definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, tracing
from minijax.array import Array
from minijax.compiler.lowering import (
    RuleContext,
    _region,
    lower_closed_jaxpr,
    register,
    tensor_type,
)
from minijax.compiler.stablehlo_ir import Value
from minijax.core import Primitive, ShapedArray
from minijax.interpreters import ad, batching
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.ad import Zero, instantiate
from minijax.interpreters.transpose import backward_pass, is_undefined, transpose_rules
from minijax.jaxpr import (
    ClosedJaxpr,
    JaxprEqn,
    eval_closed_jaxpr,
    forwarded_inputs,
    inputs_as_consts,
    interleave,
    keep_outputs,
    merge_consts,
    pick,
    split_list,
)
from minijax.lax.base import convert_element_type, eq, full_like, ne, select, select_n
from minijax.lax.control_flow.common import (
    cast_to,
    flatten_operands,
    is_zero,
    listing,
    mismatch_reason,
    trace_once,
    typematch,
)
from minijax.lax.elementwise import clamp, stop_gradient
from minijax.lax.shapes import MemorySpace, broadcast_in_dim, empty2_p
from minijax.tracing import DebugInfo, trace_to_jaxpr
from minijax.tree_util import PyTreeDef, leaf_paths, structure_differences

__all__ = ["cond", "cond_p", "switch"]

# ---------------------------------------------------------------------------------------
# The primitive: cond[branches=(...)] index *operands
# ---------------------------------------------------------------------------------------


def _cond_rule(index: ShapedArray, *args: ShapedArray,
               branches: tuple[ClosedJaxpr, ...]) -> list[ShapedArray]:
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_long()}")
    for branch in branches:
        if len(branch.in_avals) != len(args) or not all(map(typematch, args, branch.in_avals)):
            raise TypeError(
                f"cond branches take {[a.str_long() for a in branch.in_avals]} but the "
                f"operands are {[a.str_long() for a in args]}"
            )
    return branches[0].out_avals


def _cond_eager(index: Array, *args: Any, branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    """Run just the branch the (concrete) index picks."""
    outs = eval_closed_jaxpr(branches[int(index)], *args)
    return cast_to(outs, branches[0].out_avals)


cond_p = Primitive("cond", multiple_results=True)
cond_p.def_abstract_eval(_cond_rule)
cond_p.def_eager_rule(_cond_eager)


# ---------------------------------------------------------------------------------------
# cond's rules: JVP, transpose, partial evaluation, DCE, lowering
# ---------------------------------------------------------------------------------------
# Each rule transforms every branch, as a jaxpr, and binds one ``cond`` of the results:
# the JVP of a ``cond`` is a ``cond`` of the branches' JVPs, and the transpose of a linear
# ``cond`` a ``cond`` of the transposed branches. Partial evaluation (the first half of
# reverse mode) splits each branch into a known half, run now, that also returns the
# *residuals* its unknown half needs, and the unknown half, recorded; each branch needs
# different residuals, so they are given common slots.


def _cond_jvp(primals: list, tangents: list, *, branches: tuple[ClosedJaxpr, ...]
              ) -> tuple[list, list]:
    """Run the JVP of every branch under one ``cond``: operands, then non-zero tangents."""
    index, *ops = primals
    nonzeros = [not is_zero(t) for t in tangents[1:]]
    out_nz = [False] * len(branches[0].out_avals)
    for branch in branches:  # an output tangent is non-zero if it is in any branch
        out_nz = [a or b for a, b in zip(out_nz, ad.jvp_jaxpr(branch, nonzeros, out_nz)[2])]
    traced = [ad.jvp_jaxpr(branch, nonzeros, out_nz) for branch in branches]
    jaxprs, consts = merge_consts([inputs_as_consts(j, c) for j, c, _ in traced])
    given = [t for t in tangents[1:] if not is_zero(t)]
    outs = cond_p.bind(index, *consts, *ops, *given, branches=tuple(jaxprs))
    primals_out, tangents_out = split_list(outs, len(out_nz))
    zeros = [Zero.like(p) for p in primals_out]
    return primals_out, interleave(out_nz, tangents_out, pick(zeros, out_nz, keep=False))


ad.jvp_rules[cond_p] = _cond_jvp


def _cond_transpose(cts: list, index: Any, *ops: Any, branches: tuple[ClosedJaxpr, ...]
                    ) -> list[Any]:
    """A ``cond`` of the transposed branches: from residuals and output cotangents to the
    cotangents of the linear operands."""
    linear = [is_undefined(x) for x in ops]
    residuals = pick(ops, linear, keep=False)
    given = [ct for ct in cts if not is_zero(ct)]
    ct_mask = [not is_zero(ct) for ct in cts]

    def transposed(branch: ClosedJaxpr) -> ClosedJaxpr:
        def fun(*args: Any) -> list[Any]:
            res, ct_values = split_list(args, len(residuals))
            ct_out = interleave(ct_mask, ct_values, pick(cts, ct_mask, keep=False))
            inputs = interleave(linear, [None] * len(linear), res)
            cts_in = backward_pass(branch.jaxpr, branch.consts, linear, inputs, ct_out)
            return [instantiate(ct) for ct in pick(cts_in, linear)]

        return trace_to_jaxpr(fun, [core.get_aval(x) for x in [*residuals, *given]])

    jaxprs, consts = merge_consts([transposed(b) for b in branches])
    outs = cond_p.bind(index, *consts, *residuals, *given, branches=tuple(jaxprs))
    return [None, *interleave(linear, outs, [None] * len(ops))]


transpose_rules[cond_p] = _cond_transpose


def _placeholder(aval: ShapedArray) -> Any:
    """A value of ``aval``'s shape and dtype that nobody will read (zeros, in fact): an
    ``empty2`` scalar, broadcast. ``cond``'s partial evaluation fills a branch's residual
    slots with these where another branch has the residuals, as JAX does."""
    x = empty2_p.bind(dtype=aval.dtype, memory_space=MemorySpace.Device)
    return broadcast_in_dim(x, aval.shape, ()) if aval.shape else x


def _residual_slots(per_branch: list[list[ShapedArray]]) -> tuple[list[ShapedArray],
                                                                 list[list[int]]]:
    """Give the residuals of all branches common slots: a branch's residual takes the
    first free slot of its type, so branches share slots where they can (as in JAX).
    Returns the slots' types and, for each branch, the slot of each of its residuals."""
    slots: list[ShapedArray] = []
    assignments = []
    for avals in per_branch:
        used: set[int] = set()
        mine = []
        for aval in avals:
            slot = next((i for i, s in enumerate(slots) if s == aval and i not in used), None)
            if slot is None:
                slot = len(slots)
                slots.append(aval)
            used.add(slot)
            mine.append(slot)
        assignments.append(mine)
    return slots, assignments


def _known_branch(known: ClosedJaxpr, n_out: int, slots: list[ShapedArray],
                  mine: list[int]) -> ClosedJaxpr:
    """A known branch returning its outputs, then every residual slot: its own residuals
    in its slots, placeholders in the others. Like JAX, it makes a placeholder for every
    slot; those it does not return stay in its jaxpr unread (jit's dead-code elimination
    removes them before lowering)."""
    def fun(*args: Any) -> list[Any]:
        outs, residuals = split_list(eval_closed_jaxpr(known, *args), n_out)
        values = [_placeholder(a) for a in slots]
        for slot, r in zip(mine, residuals):
            values[slot] = r
        return [*outs, *values]

    return trace_to_jaxpr(fun, known.in_avals)


def _unknown_branch(unknown: ClosedJaxpr, num_res: int, slots: list[ShapedArray],
                    mine: list[int]) -> ClosedJaxpr:
    """An unknown branch that takes every residual slot and reads its own."""
    def fun(*args: Any) -> list[Any]:
        all_slots, ops = split_list(args, len(slots))
        return eval_closed_jaxpr(unknown, *[all_slots[s] for s in mine], *ops)

    return trace_to_jaxpr(fun, [*slots, *unknown.in_avals[num_res:]])


def _cond_partial_eval(trace: pe.PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
    """Known index: run the known half of the branches now (also returning residuals) and
    record a ``cond`` of the unknown halves on the residuals and the unknown operands."""
    index, *ops = args
    branches = params["branches"]
    if trace.is_unknown(index):
        return trace.record(cond_p, args, params)
    unknown = [trace.is_unknown(x) for x in ops]
    out_uk = [False] * len(branches[0].out_avals)
    for branch in branches:
        out_uk = [a or b for a, b in
                  zip(out_uk, pe.partial_eval_jaxpr_nounits(branch, unknown, out_uk)[2])]
    splits = [pe.partial_eval_jaxpr_nounits(branch, unknown, out_uk) for branch in branches]
    n_known_out = out_uk.count(False)
    slots, assignments = _residual_slots(
        [k.out_avals[n_known_out:] for k, _, _, _ in splits])

    known_branches, known_consts = merge_consts([
        _known_branch(k, n_known_out, slots, mine) for (k, _, _, _), mine in zip(splits,
                                                                                assignments)])
    with core.set_current_trace(trace.parent):
        known_outs = cond_p.bind(index, *known_consts, *pick(ops, unknown, keep=False),
                                 branches=tuple(known_branches))
    known_outs, residuals = split_list(known_outs, n_known_out)

    unknown_branches, unknown_consts = merge_consts([
        _unknown_branch(u, n, slots, mine) for (_, u, _, n), mine in zip(splits, assignments)])
    unknown_outs = trace.record(cond_p, [index, *unknown_consts, *residuals,
                                         *pick(ops, unknown)],
                                dict(branches=tuple(unknown_branches)))
    return interleave(out_uk, unknown_outs, known_outs)


pe.partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_dce(eqn: JaxprEqn, used_outputs: list[bool]) -> JaxprEqn:
    """Every branch without the unused outputs; an operand stays if any branch reads it
    (so each branch is cut twice: to learn what it reads, then keeping those operands)."""
    branches = eqn.params["branches"]
    reads = [pe.dce_jaxpr(b, used_outputs)[1] for b in branches]
    used = [any(flags) for flags in zip(*reads, strict=True)]
    branches = tuple(pe.dce_jaxpr(b, used_outputs, instantiate=used)[0] for b in branches)
    index, *ops = eqn.invars
    return JaxprEqn(cond_p, [index, *pick(ops, used)], pick(eqn.outvars, used_outputs),
                    dict(eqn.params, branches=branches), eqn.source_info)


pe.dce_rules[cond_p] = _cond_dce


@register(cond_p)
def _cond_lowering(ctx: RuleContext, index: Value, *args: Value, branches: tuple
                   ) -> list[Value]:
    """``stablehlo.case``: one region per branch, each computing from the operands."""
    b = ctx.b
    regions = [_region(b, [], lambda r, _, br=branch: lower_closed_jaxpr(r, br, args))
               for branch in branches]
    return b.op("stablehlo.case", [index], [tensor_type(a) for a in ctx.avals_out], {},
                regions).results


def _bind_cond(index: Any, jaxprs: Sequence[ClosedJaxpr], inputs: list[Any],
               out_tree: PyTreeDef) -> Any:
    """Bind ``cond``; ``inputs`` are the branches' shared constants, then the operands.

    An output that every branch returns straight from the same input needs no ``cond``
    at all: it is left out of the branches and taken from that input (as JAX does).
    """
    forwards = [set(f) for f in zip(*(forwarded_inputs(j.jaxpr) for j in jaxprs))]
    forwarded = [f.pop() if len(f) == 1 else None for f in forwards]
    keep = [f is None for f in forwarded]
    jaxprs = tuple(keep_outputs(j, keep) for j in jaxprs)
    outs = iter(cond_p.bind(index, *inputs, branches=jaxprs))
    return out_tree.unflatten(next(outs) if f is None else inputs[f] for f in forwarded)


def _trace_branches(api: str, names: Sequence[str], funs: Sequence[Callable],
                    operands: tuple) -> tuple[list[ClosedJaxpr], list[Any], PyTreeDef]:
    """Trace every branch on the operands' types and check that their outputs agree.

    Returns the branch jaxprs, which all take the constants captured by any branch and
    then the operands; those inputs; and the treedef of the output.
    """
    args, avals, in_tree = flatten_operands(operands)
    operand_avals = in_tree.unflatten(avals)
    traced = [trace_once(fun, operand_avals, DebugInfo(api)) for fun in funs]
    (jaxpr0, tree0), name0, fun0 = traced[0], names[0], funs[0]
    for (jaxpr, tree), name, fun in zip(traced[1:], names[1:], funs[1:]):
        _check_branch_outputs(api, (name0, fun0, tree0, jaxpr0.out_avals),
                              (name, fun, tree, jaxpr.out_avals))
    jaxprs, consts = merge_consts([jaxpr for jaxpr, _ in traced])
    return jaxprs, [*consts, *args], tree0


def _source(fun: Callable) -> str:
    context = tracing.tracing_context(fun, "")
    return f"{context.fun_name} at {context.source}"


def _check_branch_outputs(api: str, first: tuple, second: tuple) -> None:
    """Raise JAX's TypeError if two branches return different structures or types."""
    (name1, fun1, tree1, avals1), (name2, fun2, tree2, avals2) = first, second
    header = f"{name1} is {_source(fun1)}\n{name2} is {_source(fun2)}\n\n"

    def at(path: str) -> str:
        return f" at path {path}" if path else ""

    if tree1 != tree2:
        diffs = [f"{name1} output{at(p)} is a {t1} but {name2} output{at(p)} is a {t2}, "
                 f"so {why}"
                 for p, t1, t2, why in structure_differences(tree1, tree2, "pytree leaf")]
        raise TypeError(
            f"{api} branch outputs must have the same pytree structure, but they differ:\n\n"
            f"{header}{listing(diffs, loose=True, capital=False)}\n"
            f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
    diffs = [f"the output of {name1}{at(p)} has type {a.str_long()} but the corresponding "
             f"output of {name2} has type {b.str_long()}{mismatch_reason(a, b)}"
             for p, a, b in zip(leaf_paths(tree1), avals1, avals2) if not typematch(a, b)]
    if diffs:
        raise TypeError(
            f"{api} branches must have equal output types but they differ.\n\n"
            f"{header}{listing(diffs, loose=False)}\n"
            f"Revise {name1} and/or {name2} so that all output types match.")


# ---------------------------------------------------------------------------------------
# cond
# ---------------------------------------------------------------------------------------

_NO_OPERAND = object()


def _operands(operands: tuple, operand: Any) -> tuple:
    """The old calling convention passed a single ``operand=`` keyword."""
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def _predicate_index(pred: Any) -> Any:
    """The predicate as the ``int32`` branch index (0: false, 1: true); numbers count as
    true when nonzero."""
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        kind = f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {np.shape(pred)}."
        raise TypeError(f"Pred must be a scalar, got {pred} of {kind}")
    try:
        dtype = dtypes.result_type(pred)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if dtype.kind != "b":
        if dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")
        # A Python or NumPy number is compared right away; an array, by a primitive.
        pred = ne(pred, full_like(pred, 0)) if isinstance(pred, Array) else pred != 0
    return convert_element_type(pred, np.int32)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _NO_OPERAND) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one primitive.

    Both functions are traced (so both must accept the operands and return the same
    types); only the chosen one runs.
    """
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands(operands, operand)
    index = _predicate_index(pred)
    (true_jaxpr, false_jaxpr), inputs, out_tree = _trace_branches(
        "cond", ("true_fun", "false_fun"), (true_fun, false_fun), operands)
    return _bind_cond(index, (false_jaxpr, true_jaxpr), inputs, out_tree)


# ---------------------------------------------------------------------------------------
# switch
# ---------------------------------------------------------------------------------------


def _branch_index(index: Any) -> None:
    """Check that ``index`` is an integer scalar (JAX's messages)."""
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        dtype = dtypes.result_type(index)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {dtype}")


def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _NO_OPERAND) -> Any:
    """``branches[index](*operands)``, ``index`` clamped into range, as one primitive."""
    if not all(callable(branch) for branch in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _operands(operands, operand)
    _branch_index(index)
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = convert_element_type(index, np.int32)
    index = clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
    names = ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))]  # sic: JAX's
    jaxprs, inputs, out_tree = _trace_branches("switch", names, branches, operands)
    return _bind_cond(index, jaxprs, inputs, out_tree)


# ---------------------------------------------------------------------------------------
# vmap: batching rules
# ---------------------------------------------------------------------------------------


def _cond_batching(axis_data: batching.AxisData, vals: list, dims: list, *,
                   branches: tuple[ClosedJaxpr, ...]) -> tuple[list[Any], list[int | None]]:
    """JAX's rule. A batched index means each example takes its own branch: then every
    branch runs on the whole batch and ``select_n`` picks each example's result (what
    that costs: all branches are computed). An unbatched index keeps the ``cond``, with
    batched branches."""
    (index, *ops), (index_dim, *op_dims) = vals, dims
    if index_dim is not None:
        index, *ops = [batching.bdim_at_front(x, d, axis_data.size) for x, d in zip(vals, dims)]
        outs = []
        for i, branch in enumerate(branches):
            batched, _ = batching.batch_jaxpr_at_front(branch, axis_data, [True] * len(ops),
                                                       [True] * len(branch.out_avals))
            chosen = eq(index, np.int32(i))
            # the other branches' inputs are cut off from differentiation (JAX issue 1052)
            inputs = [_select_along(chosen, x, stop_gradient(x)) for x in ops]
            outs.append(eval_closed_jaxpr(batched, *inputs))
        return [_select_n_along(index, *cases) for cases in zip(*outs)], [0] * len(outs[0])
    ops_batched = [d is not None for d in op_dims]
    ops = [batching.moveaxis(x, d, 0) if d is not None else x for x, d in zip(ops, op_dims)]
    found = [batching.batch_jaxpr_at_front(b, axis_data, ops_batched)[1] for b in branches]
    out_batched = [any(b) for b in zip(*found)]
    batched = tuple(batching.batch_jaxpr_at_front(b, axis_data, ops_batched, out_batched)[0]
                    for b in branches)
    outs = cond_p.bind(index, *ops, branches=batched)
    return outs, [0 if b else None for b in out_batched]


def _select_along(predicate: Any, on_true: Any, on_false: Any) -> Any:
    """``select`` with a predicate per example (along the leading axis)."""
    if predicate.ndim != on_true.ndim:
        predicate = broadcast_in_dim(predicate, on_true.shape, list(range(predicate.ndim)))
    return select(predicate, on_true, on_false)


def _select_n_along(index: Any, *cases: Any) -> Any:
    if index.ndim != cases[0].ndim:
        index = broadcast_in_dim(index, cases[0].shape, [0])
    return select_n(index, *cases)


batching.batching_rules[cond_p] = _cond_batching
