"""Differentiating control flow: ``cond`` (and ``switch``), ``while`` and ``scan``.

A control-flow primitive carries its bodies as jaxprs, so its derivative rules work on
jaxprs too. Three transformations each get a rule here:

* **JVP** (forward mode): differentiate the body jaxpr into a body that carries primals
  *and* tangents, and run the same primitive with it. A loop carry whose tangent is zero
  on entry may stop being zero after one iteration, so loops find the set of non-zero
  tangents by iterating to a fixed point.
* **Partial evaluation** (the first half of reverse mode): when some operands are
  known (primals) and others are not (tangents), split each body with
  ``partial_eval_jaxpr``: the known half runs now and also returns the *residuals*
  (the known values the tangent computation needs); the unknown half is recorded, taking
  the residuals as operands. For ``cond`` each branch needs different residuals, so they
  are given common slots; for ``scan`` the known loop emits one residual per iteration as
  an extra stacked output, and the unknown loop consumes them as ``xs``.
* **Transposition** (the second half): the transpose of a linear ``cond`` is a ``cond``
  of the transposed branches; the transpose of a linear ``scan`` is a scan of the
  transposed body run in the opposite direction, carrying the cotangent of the carry and
  accumulating the cotangents of the loop's constants. A ``while`` loop has no fixed trip
  count, so it cannot be transposed: reverse mode refuses it, as JAX does.

Invariant kept by every rule: the jaxprs stored in control-flow params have no constants
of their own. Values a traced body captures become leading operands (``consts_as_inputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minijax import core
from minijax.core import ShapedArray
from minijax.interpreters import ad
from minijax.interpreters import partial_eval as pe
from minijax.interpreters.ad import Zero, instantiate, tangent_aval
from minijax.interpreters.partial_eval import PartialEvalTrace
from minijax.interpreters.transpose import backward_pass, is_undefined, transpose_rules
from minijax.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Var,
    consts_as_inputs,
    eval_closed_jaxpr,
    has_effects,
    merge_consts,
    split_list,
)
from minijax.lax.base import broadcast_in_dim, convert_element_type
from minijax.lax.control_flow.conditionals import cond_p
from minijax.lax.control_flow.loops import scan_p, while_p
from minijax.lax.shapes import MemorySpace, empty2_p
from minijax.tracing import trace_to_jaxpr

# ---------------------------------------------------------------------------------------
# Helpers: tracing, regrouping, zeros
# ---------------------------------------------------------------------------------------


def _pick(values: Sequence[Any], mask: Sequence[bool], keep: bool = True) -> list[Any]:
    """The values whose mask entry equals ``keep``."""
    return [v for v, m in zip(values, mask, strict=True) if m == keep]


def _merge(mask: Sequence[bool], if_true: Sequence[Any], if_false: Sequence[Any]) -> list[Any]:
    """Interleave two lists back into one, taking from ``if_true`` where ``mask`` is set."""
    t, f = iter(if_true), iter(if_false)
    return [next(t) if m else next(f) for m in mask]


def _trace(fun: Callable[..., list[Any]], avals: Sequence[ShapedArray]
           ) -> tuple[ClosedJaxpr, list[Any]]:
    """Trace ``fun`` into a jaxpr whose captured constants are leading inputs."""
    return consts_as_inputs(trace_to_jaxpr(fun, avals))


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


def _closed(jaxpr: ClosedJaxpr, consts: Sequence[Any]) -> ClosedJaxpr:
    """A jaxpr whose first inputs stand for ``consts`` (as ``_trace`` makes them), closed
    over those values again: ``jit`` keeps its constants inside its body, and
    ``merge_consts`` reads them there."""
    j = jaxpr.jaxpr
    n = len(consts)
    return ClosedJaxpr(Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns), consts)


def _fresh(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A copy with new variables, for a jaxpr cut from one that is also kept: variables
    are named by identity when printed, so two jaxprs should not share any."""
    return trace_to_jaxpr(lambda *args: eval_closed_jaxpr(closed, *args), closed.in_avals)


def _zeros(aval: ShapedArray) -> Any:
    """Zeros of exactly ``aval`` (weak type included), with the current trace."""
    return broadcast_in_dim(convert_element_type(0, aval.dtype, aval.weak_type), aval.shape, ())


def _placeholder(aval: ShapedArray) -> Any:
    """A value of ``aval``'s shape and dtype that nobody will read (zeros, in fact): an
    ``empty2`` scalar, broadcast. ``cond``'s partial evaluation fills a branch's residual
    slots with these where another branch has the residuals, as JAX does."""
    x = empty2_p.bind(dtype=aval.dtype, memory_space=MemorySpace.Device)
    return broadcast_in_dim(x, aval.shape, ()) if aval.shape else x


def _is_zero(t: Any) -> bool:
    return type(t) is Zero


# ---------------------------------------------------------------------------------------
# Jaxpr transformations: JVP of a jaxpr, and partial evaluation that can force outputs
# ---------------------------------------------------------------------------------------


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate_out: Sequence[bool]
              ) -> tuple[ClosedJaxpr, list[Any], list[bool]]:
    """The JVP of a jaxpr, as a jaxpr.

    It takes the primal inputs and then the tangents of the inputs marked in
    ``nonzeros``, and returns the primal outputs and then the tangents of the outputs that
    are not symbolically zero (or are forced by ``instantiate_out``). Returns the jaxpr
    (without constants), its constants (to pass as leading operands) and which output
    tangents it returns.
    """
    n = len(nonzeros)
    out_nonzeros: list[bool] = []

    def fun(*args: Any) -> list[Any]:
        primals, given = args[:n], iter(args[n:])
        tangents = [next(given) if nz else Zero(tangent_aval(a))
                    for nz, a in zip(nonzeros, closed.in_avals)]
        outs, touts = ad.jvp_flat(lambda *xs: eval_closed_jaxpr(closed, *xs), primals, tangents)
        out_nonzeros[:] = [force or not _is_zero(t) for t, force in zip(touts, instantiate_out)]
        return [*outs, *[instantiate(t) for t, nz in zip(touts, out_nonzeros) if nz]]

    tangent_avals = [tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros) if nz]
    jaxpr, consts = _trace(fun, [*closed.in_avals, *tangent_avals])
    return jaxpr, consts, out_nonzeros


def partial_eval_jaxpr(closed: ClosedJaxpr, unknown_inputs: Sequence[bool],
                       instantiate: Sequence[bool]
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split a jaxpr into a known and an unknown part, by running it under partial
    evaluation while tracing the known part.

    Returns ``(known, unknown, unknown_outputs, num_residuals)`` like
    ``partial_eval.partial_eval_jaxpr``; unlike it, equations that have their own
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
    known_avals = _pick(closed.in_avals, unknown_inputs, keep=False)
    unknown_avals = _pick(closed.in_avals, unknown_inputs)
    split: dict[str, Any] = {}

    def known_fun(*known_args: Any) -> list[Any]:
        trace = PartialEvalTrace(core.current_trace())
        try:
            unknown_args = [trace.new_arg(a) for a in unknown_avals]
            with core.set_current_trace(trace):
                outs = eval_closed_jaxpr(closed, *_merge(unknown_inputs, unknown_args,
                                                         known_args))
            out_uk = [trace.is_unknown(o) or force for o, force in zip(outs, instantiate)]
            split["unknown"] = trace.to_jaxpr(_pick(outs, out_uk))
            split["out_uk"] = out_uk
        finally:
            trace.invalidate()
        return [*_pick(outs, out_uk, keep=False), *split["unknown"].consts]

    known = trace_to_jaxpr(known_fun, known_avals)
    unknown, residuals = consts_as_inputs(split["unknown"])
    known = pe.dce_jaxpr(known, True, instantiate=True)[0]
    return known, unknown, split["out_uk"], len(residuals)


# ---------------------------------------------------------------------------------------
# cond (and switch): cond[branches] index *operands
# ---------------------------------------------------------------------------------------


def _cond_jvp(primals: list, tangents: list, *, branches: tuple[ClosedJaxpr, ...]
              ) -> tuple[list, list]:
    """Run the JVP of every branch under one ``cond``: operands, then non-zero tangents."""
    index, *ops = primals
    nonzeros = [not _is_zero(t) for t in tangents[1:]]
    out_nz = [False] * len(branches[0].out_avals)
    for branch in branches:  # an output tangent is non-zero if it is in any branch
        out_nz = [a or b for a, b in zip(out_nz, jvp_jaxpr(branch, nonzeros, out_nz)[2])]
    traced = [jvp_jaxpr(branch, nonzeros, out_nz) for branch in branches]
    jaxprs, consts = merge_consts([_closed(j, c) for j, c, _ in traced])
    given = [t for t in tangents[1:] if not _is_zero(t)]
    outs = cond_p.bind(index, *consts, *ops, *given, branches=tuple(jaxprs))
    primals_out, tangents_out = split_list(outs, len(out_nz))
    zeros = [Zero.like(p) for p in primals_out]
    return primals_out, _merge(out_nz, tangents_out, _pick(zeros, out_nz, keep=False))


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


def _cond_partial_eval(trace: PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
    """Known index: run the known half of the branches now (also returning residuals) and
    record a ``cond`` of the unknown halves on the residuals and the unknown operands."""
    index, *ops = args
    branches = params["branches"]
    if trace.is_unknown(index):
        return trace.record(cond_p, args, params)
    unknown = [trace.is_unknown(x) for x in ops]
    out_uk = [False] * len(branches[0].out_avals)
    for branch in branches:
        out_uk = [a or b for a, b in zip(out_uk, partial_eval_jaxpr(branch, unknown, out_uk)[2])]
    splits = [partial_eval_jaxpr(branch, unknown, out_uk) for branch in branches]
    n_known_out = out_uk.count(False)
    slots, assignments = _residual_slots(
        [k.out_avals[n_known_out:] for k, _, _, _ in splits])

    known_branches, known_consts = merge_consts([
        _known_branch(k, n_known_out, slots, mine) for (k, _, _, _), mine in zip(splits,
                                                                                assignments)])
    with core.set_current_trace(trace.parent):
        known_outs = cond_p.bind(index, *known_consts, *_pick(ops, unknown, keep=False),
                                 branches=tuple(known_branches))
    known_outs, residuals = split_list(known_outs, n_known_out)

    unknown_branches, unknown_consts = merge_consts([
        _unknown_branch(u, n, slots, mine) for (_, u, _, n), mine in zip(splits, assignments)])
    unknown_outs = trace.record(cond_p, [index, *unknown_consts, *residuals,
                                         *_pick(ops, unknown)],
                                dict(branches=tuple(unknown_branches)))
    return _merge(out_uk, unknown_outs, known_outs)


def _cond_transpose(cts: list, index: Any, *ops: Any, branches: tuple[ClosedJaxpr, ...]
                    ) -> list[Any]:
    """A ``cond`` of the transposed branches: from residuals and output cotangents to the
    cotangents of the linear operands."""
    linear = [is_undefined(x) for x in ops]
    residuals = _pick(ops, linear, keep=False)
    given = [ct for ct in cts if not _is_zero(ct)]
    ct_mask = [not _is_zero(ct) for ct in cts]

    def transposed(branch: ClosedJaxpr) -> ClosedJaxpr:
        def fun(*args: Any) -> list[Any]:
            res, ct_values = split_list(args, len(residuals))
            ct_out = _merge(ct_mask, ct_values, _pick(cts, ct_mask, keep=False))
            inputs = _merge(linear, [None] * len(linear), res)
            cts_in = backward_pass(branch.jaxpr, branch.consts, linear, inputs, ct_out)
            return [instantiate(ct) for ct in _pick(cts_in, linear)]

        return trace_to_jaxpr(fun, [core.get_aval(x) for x in [*residuals, *given]])

    jaxprs, consts = merge_consts([transposed(b) for b in branches])
    outs = cond_p.bind(index, *consts, *residuals, *given, branches=tuple(jaxprs))
    return [None, *_merge(linear, outs, [None] * len(ops))]


def _cond_dce(eqn: JaxprEqn, used_outputs: list[bool]) -> JaxprEqn:
    """Every branch without the unused outputs; an operand stays if any branch reads it
    (so each branch is cut twice: to learn what it reads, then keeping those operands)."""
    branches = eqn.params["branches"]
    reads = [pe.dce_jaxpr(b, used_outputs)[1] for b in branches]
    used = [any(flags) for flags in zip(*reads, strict=True)]
    branches = tuple(pe.dce_jaxpr(b, used_outputs, instantiate=used)[0] for b in branches)
    index, *ops = eqn.invars
    return JaxprEqn(cond_p, [index, *_pick(ops, used)], _pick(eqn.outvars, used_outputs),
                    dict(eqn.params, branches=branches), eqn.source_info)


ad.jvp_rules[cond_p] = _cond_jvp
pe.partial_eval_rules[cond_p] = _cond_partial_eval
transpose_rules[cond_p] = _cond_transpose
pe.dce_rules[cond_p] = _cond_dce


# ---------------------------------------------------------------------------------------
# while: forward mode only
# ---------------------------------------------------------------------------------------


def _loop_jvp_fixed_point(body: ClosedJaxpr, const_nz: list[bool], carry_nz: list[bool],
                          xs_nz: list[bool]) -> tuple[ClosedJaxpr, list[Any], list[bool],
                                                       list[bool]]:
    """The JVP of a loop body (inputs: consts, carry, xs; outputs: carry, ys) once the set
    of carries with non-zero tangents has stopped growing. Returns the jaxpr, its
    constants, the carry mask and the mask of non-zero ``ys`` tangents."""
    num_carry = len(carry_nz)
    num_ys = len(body.out_avals) - num_carry
    while True:
        jaxpr, consts, out_nz = jvp_jaxpr(body, const_nz + carry_nz + xs_nz,
                                          carry_nz + [False] * num_ys)
        carry_out_nz, ys_nz = split_list(out_nz, num_carry)
        if carry_out_nz == carry_nz:
            return jaxpr, consts, carry_nz, ys_nz
        carry_nz = [a or b for a, b in zip(carry_nz, carry_out_nz)]


def _while_jvp(primals: list, tangents: list, *, cond_jaxpr: ClosedJaxpr,
               body_jaxpr: ClosedJaxpr, cond_nconsts: int, body_nconsts: int
               ) -> tuple[list, list]:
    """One ``while`` carrying primals and tangents; the condition ignores the tangents."""
    cond_consts, body_consts, carry = split_list(primals, cond_nconsts, body_nconsts)
    _, body_dots, carry_dots = split_list(tangents, cond_nconsts, body_nconsts)
    const_nz = [not _is_zero(t) for t in body_dots]
    carry_nz = [not _is_zero(t) for t in carry_dots]
    body, consts, carry_nz, _ = _loop_jvp_fixed_point(body_jaxpr, const_nz, carry_nz, [])
    nc, nb, nk = len(consts), len(body_consts), len(carry)
    body = _regroup(body, (nc, nb, nk, const_nz.count(True)), (0, 1, 3, 2, 4))
    cj = cond_jaxpr.jaxpr
    tangent_vars = [Var(tangent_aval(a)) for a in _pick(body_jaxpr.in_avals[nb:], carry_nz)]
    cond = ClosedJaxpr(Jaxpr(cj.constvars, [*cj.invars, *tangent_vars], cj.outvars, cj.eqns),
                       cond_jaxpr.consts)
    carry_dots = [instantiate(t) for t in _pick(carry_dots, carry_nz)]
    outs = while_p.bind(*cond_consts, *consts, *body_consts, *_pick(body_dots, const_nz),
                        *carry, *carry_dots, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=cond_nconsts,
                        body_nconsts=nc + nb + const_nz.count(True))
    primals_out, tangents_out = split_list(outs, nk)
    zeros = [Zero.like(p) for p in primals_out]
    return primals_out, _merge(carry_nz, tangents_out, _pick(zeros, carry_nz, keep=False))


def _while_partial_eval(trace: PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
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
        known, _, out_uk, num_res = partial_eval_jaxpr(body_jaxpr, const_uk + carry_uk,
                                                       carry_uk)
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
                                *_pick(cj.invars[cond_nconsts:], carry_uk, keep=False)],
                 cj.outvars, cj.eqns)
    cond_consts, body_consts, carry = split_list(args, cond_nconsts, body_nconsts)
    with core.set_current_trace(trace.parent):
        known_outs = while_p.bind(
            *cond_consts, *_pick(body_consts, const_uk, keep=False),
            *_pick(carry, carry_uk, keep=False),
            cond_jaxpr=_fresh(ClosedJaxpr(cond, cond_jaxpr.consts)),
            body_jaxpr=_fresh(body), cond_nconsts=cond_nconsts,
            body_nconsts=const_uk.count(False))
    return _merge(carry_uk, _pick(everything, carry_uk), known_outs)


def _while_transpose(cts: list, *args: Any, **params: Any) -> list[Any]:
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
        "with dynamic start/stop values. Try using lax.scan, or using fori_loop with "
        "static start/stop.")


ad.jvp_rules[while_p] = _while_jvp
pe.partial_eval_rules[while_p] = _while_partial_eval
transpose_rules[while_p] = _while_transpose


# ---------------------------------------------------------------------------------------
# scan[jaxpr, length, reverse, unroll, num_consts, num_carry] *consts *carry *xs
# ---------------------------------------------------------------------------------------


def _scan_jvp(primals: list, tangents: list, *, jaxpr: ClosedJaxpr, length: int,
              reverse: bool, unroll: int, num_consts: int, num_carry: int
              ) -> tuple[list, list]:
    """One ``scan`` whose consts, carry and xs each hold primals, then non-zero tangents."""
    consts, carry, xs = split_list(primals, num_consts, num_carry)
    const_dots, carry_dots, xs_dots = split_list(tangents, num_consts, num_carry)
    const_nz, carry_nz, xs_nz = ([not _is_zero(t) for t in group]
                                 for group in (const_dots, carry_dots, xs_dots))
    body, body_consts, carry_nz, ys_nz = _loop_jvp_fixed_point(jaxpr, const_nz, carry_nz,
                                                               xs_nz)
    nb, nys, n_carry_dots = len(body_consts), len(ys_nz), carry_nz.count(True)
    # inputs (body consts, consts, carry, xs, their tangents) and outputs (carry, ys,
    # their tangents), put in the layout scan wants: consts, carry, xs / carry, ys
    body = _regroup(body, (nb, num_consts, num_carry, len(xs), const_nz.count(True),
                           n_carry_dots), (0, 1, 4, 2, 5, 3, 6),
                    (num_carry, nys, n_carry_dots), (0, 2, 1, 3))
    carry_dots = [instantiate(t) for t in _pick(carry_dots, carry_nz)]
    outs = scan_p.bind(*body_consts, *consts, *_pick(const_dots, const_nz), *carry,
                       *carry_dots, *xs, *_pick(xs_dots, xs_nz), jaxpr=body, length=length,
                       reverse=reverse, unroll=unroll,
                       num_consts=nb + num_consts + const_nz.count(True),
                       num_carry=num_carry + n_carry_dots)
    carry_out, carry_dots_out, ys, ys_dots = split_list(outs, num_carry, n_carry_dots, nys)
    zeros = [Zero.like(p) for p in [*carry_out, *ys]]
    nonzeros = carry_nz + ys_nz
    return [*carry_out, *ys], _merge(nonzeros, carry_dots_out + ys_dots,
                                     _pick(zeros, nonzeros, keep=False))


def _scan_partial_eval(trace: PartialEvalTrace, args: tuple, params: dict) -> list[Any]:
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
        known, unk, out_uk, num_res = partial_eval_jaxpr(
            jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * num_ys)
        if out_uk[:num_carry] == carry_uk:
            break
        carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
    in_uk = const_uk + carry_uk + xs_uk
    known_consts, known_carry, known_xs = split_list(_pick(args, in_uk, keep=False),
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
                 [*body.outvars[:n_known_out], *_pick(loop_res, stacked)], body.eqns)
    with core.set_current_trace(trace.parent):
        outs = scan_p.bind(*loop_consts, *known_carry, *known_xs,
                           jaxpr=ClosedJaxpr(body, loop.consts), length=params["length"],
                           reverse=params["reverse"], unroll=params["unroll"],
                           num_consts=len(loop_consts), num_carry=len(known_carry))
    known_outs, stacked_values = split_list(outs, n_known_out)
    stacked_values = iter(stacked_values)
    per_iteration = [known_xs[i] if i >= 0 else next(stacked_values) for i in which_xs]
    res_values = _merge(invariant, invariant_values, per_iteration)

    u = unk.jaxpr
    res_vars, unknown_in = split_list(u.invars, num_res)
    n_uc = const_uk.count(True)
    body = Jaxpr(u.constvars, [*_pick(res_vars, invariant), *unknown_in,
                               *_pick(res_vars, invariant, keep=False)], u.outvars, u.eqns)
    unknown_outs = trace.record(
        scan_p, [*_pick(res_values, invariant), *_pick(args, in_uk),
                 *_pick(res_values, invariant, keep=False)],
        dict(params, jaxpr=ClosedJaxpr(body, unk.consts),
             num_consts=invariant.count(True) + n_uc, num_carry=carry_uk.count(True)))
    return _merge(out_uk, unknown_outs, known_outs)


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
    hoist, loop, loop_dependent, _ = partial_eval_jaxpr(
        known, [False] * len(consts) + [True] * n_loop_in, [True] * n_out + [False] * n_res)
    values = eval_closed_jaxpr(hoist, *consts)
    invariant = [not d for d in loop_dependent[n_out:]]
    invariant_values, loop_consts = split_list(values, invariant.count(True))
    return invariant, invariant_values, loop, loop_consts


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
    res_consts, res_xs = _pick(consts, const_lin, keep=False), _pick(xs, xs_lin, keep=False)
    ct_carry, ct_ys = split_list(cts, num_carry)
    ct_carry = [_zeros(ct.aval) if _is_zero(ct) else ct for ct in ct_carry]
    ys_mask = [not _is_zero(ct) for ct in ct_ys]
    y_avals = jaxpr.out_avals[num_carry:]
    sums = [_zeros(c.aval) for c in _pick(consts, const_lin)]
    linear = const_lin + [True] * num_carry + xs_lin

    def body(*values: Any) -> list[Any]:
        rc, acc, ctc, cty, rx = split_list(values, len(res_consts), len(sums), num_carry,
                                       ys_mask.count(True))
        inputs = [*_merge(const_lin, [None] * len(consts), rc), *[None] * num_carry,
                  *_merge(xs_lin, [None] * len(xs), rx)]
        ct_out = [*ctc, *_merge(ys_mask, cty, [Zero(a) for a in _pick(y_avals, ys_mask,
                                                                      keep=False)])]
        # The linear consts' cotangents are added to the running sums as they arrive.
        starts = [*_merge(const_lin, acc, [None] * len(rc)),
                  *[Zero(core.get_aval(c)) for c in ctc]]
        ct_consts, ct_carry_in, ct_xs = split_list(
            backward_pass(jaxpr.jaxpr, jaxpr.consts, linear, inputs, ct_out, starts),
            num_consts, num_carry)
        return [*map(instantiate, _pick(ct_consts, const_lin)), *map(instantiate, ct_carry_in),
                *map(instantiate, _pick(ct_xs, xs_lin))]

    given_ys = _pick(ct_ys, ys_mask)
    avals = [core.get_aval(v) for v in [*res_consts, *sums, *ct_carry]]
    avals += [_slice_aval(v) for v in [*given_ys, *res_xs]]
    body_jaxpr, body_consts = _trace(body, avals)
    outs = scan_p.bind(*body_consts, *res_consts, *sums, *ct_carry, *given_ys, *res_xs,
                       jaxpr=body_jaxpr, length=length, reverse=not reverse, unroll=unroll,
                       num_consts=len(body_consts) + len(res_consts),
                       num_carry=len(sums) + num_carry)
    ct_consts, ct_carry, ct_xs = split_list(outs, len(sums), num_carry)
    return [*_merge(const_lin, ct_consts, [None] * len(consts)),
            *[ct if is_undefined(c) else None for ct, c in zip(ct_carry, carry)],
            *_merge(xs_lin, ct_xs, [None] * len(xs))]


def _slice_aval(x: Any) -> ShapedArray:
    """The type of one iteration's slice of a stacked value."""
    aval = core.get_aval(x)
    return aval.update(shape=aval.shape[1:])


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
    return JaxprEqn(scan_p, _pick(eqn.invars, used_inputs),
                    _pick(eqn.outvars, used_carry + used_ys), new_params, eqn.source_info)


ad.jvp_rules[scan_p] = _scan_jvp
pe.partial_eval_rules[scan_p] = _scan_partial_eval
transpose_rules[scan_p] = _scan_transpose
pe.dce_rules[scan_p] = _scan_dce
