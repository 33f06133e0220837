"""The lowering rules of minijax's primitives: how each becomes StableHLO ops.

Each rule is registered in :data:`minijax.compiler.lowering.lowering_rules`, keyed by
its primitive; ``lower_jaxpr_into`` looks it up at call time. (This module is a stop on
the way: each family of primitives is taking its rules to its own module.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering import (
    Builder,
    RuleContext,
    _region,
    lower_closed_jaxpr,
    lower_jaxpr_into,
    lowering_rules,
    register,
    tensor_type,
)
from minijax.compiler.stablehlo import (
    Dense,
    DenseArray,
    Func,
    Opaque,
    Struct,
    TensorType,
    Typed,
    Value,
)
from minijax.jaxpr import ClosedJaxpr
from minijax.lax import linalg as lax_linalg
from minijax.lax.base import _nary, reduce_op, transpose_op
from minijax.lax.control_flow.conditionals import cond_p
from minijax.lax.control_flow.loops import scan_p, while_p
from minijax.lax.elementwise import conj_op
from minijax.lax.shapes import slice_op
from minijax.lax.slicing import (
    GatherScatterMode,
    dynamic_slice_p,
    dynamic_update_slice_p,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
    scatter_sub_p,
    slice_p,
)
from minijax.lax.sorting import sort_p, top_k_p
from minijax.lax.special import digamma_p, erf_inv_p, erf_p, erfc_p, lgamma_p

# ---------------------------------------------------------------------------------------
# Special functions
# ---------------------------------------------------------------------------------------

for _prim, _name in ((erf_p, "chlo.erf"), (erfc_p, "chlo.erfc"), (erf_inv_p, "chlo.erf_inv"),
                     (lgamma_p, "chlo.lgamma"), (digamma_p, "chlo.digamma")):
    lowering_rules[_prim] = _nary(_name)


# ---------------------------------------------------------------------------------------
# Slicing, gather and scatter
# ---------------------------------------------------------------------------------------


@register(slice_p)
def _slice_rule(ctx: RuleContext, x: Value, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...], strides: Any) -> Value:
    return slice_op(ctx.b, x, start_indices, limit_indices, strides)


@register(dynamic_slice_p)
def _dynamic_slice(ctx: RuleContext, x: Value, *starts: Value,
                   slice_sizes: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.dynamic_slice", x, *starts, type=ctx.type_out,
                      sizes=tuple(slice_sizes))


@register(dynamic_update_slice_p)
def _dynamic_update_slice(ctx: RuleContext, x: Value, update: Value, *starts: Value) -> Value:
    return ctx.b.emit("stablehlo.dynamic_update_slice", x, update, *starts)


def _struct(name: str, fields: Sequence[tuple[str, Any]]) -> Struct:
    """``#stablehlo.gather<...>``: empty lists and a zero index_vector_dim are omitted."""
    return Struct(name, {k: list(v) if isinstance(v, tuple) else v for k, v in fields
                         if v != () and v != 0})


def _gather(b: Builder, x: Value, indices: Value, dn: Any, slice_sizes: Sequence[int],
            indices_are_sorted: bool, out_type: TensorType) -> Value:
    dims = _struct("#stablehlo.gather", [
        ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map),
        ("index_vector_dim", len(indices.type.shape) - 1)])
    attrs = {"dimension_numbers": dims, "indices_are_sorted": bool(indices_are_sorted),
             "slice_sizes": DenseArray("i64", tuple(slice_sizes))}
    return b.op("stablehlo.gather", [x, indices], [out_type], attrs).result


@register(gather_p)
def _gather_rule(ctx: RuleContext, x: Value, indices: Value, *, dimension_numbers: Any,
                 slice_sizes: tuple[int, ...], unique_indices: bool, indices_are_sorted: bool,
                 mode: GatherScatterMode, fill_value: Any) -> Value:
    """XLA's gather clamps windows into bounds; ``mode='fill'`` masks the windows that did
    not fit and fills them with ``fill_value``."""
    b, dn, out = ctx.b, dimension_numbers, ctx.type_out
    if mode != GatherScatterMode.FILL_OR_DROP:
        if out.size == 0:
            return b.full(0, out)
        return _gather(b, x, indices, dn, slice_sizes, indices_are_sorted, out)
    index_type = indices.type
    batch_rank = len(index_type.shape) - 1
    upper = np.array([x.type.shape[d] - slice_sizes[d] for d in dn.start_index_map], np.int32)
    upper = b.constant(upper.astype(index_type.dtype))
    non_negative = b.compare(indices, b.broadcast_to(b.constant(0, index_type.dtype),
                                                     index_type.shape), "GE")
    upper = b.broadcast(upper, (1,) * batch_rank + upper.type.shape, (batch_rank,))
    in_bounds = b.compare(indices, b.broadcast_to(upper, index_type.shape), "LE")
    mask = reduce_op(b, [b.emit("stablehlo.and", non_negative, in_bounds)],
                   [b.constant(True)], "stablehlo.and", (batch_rank,))[0]
    gathered = _gather(b, x, indices, dn, slice_sizes, indices_are_sorted, out)
    batch_dims = [d for d in range(len(out.shape)) if d not in dn.offset_dims]
    if mask.type.shape != out.shape:
        mask = b.broadcast(mask, out.shape, batch_dims)
    return b.select(mask, gathered, b.full_if_needed(fill_value, out))


def _clamp_scatter_indices(b: Builder, x: Value, indices: Value, updates: Value,
                           dn: Any) -> Value:
    """``mode='clip'``: clamp each start index into [0, dim - window]."""
    window, sizes = [], iter(updates.type.shape[d] for d in dn.update_window_dims)
    for d in range(len(x.type.shape)):
        inserted = d in dn.inserted_window_dims or d in dn.operand_batching_dims
        window.append(1 if inserted else next(sizes))
    upper = np.array([x.type.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims],
                     np.int32)
    dtype = indices.type.dtype
    largest = min(np.iinfo(np.int32).max, np.iinfo(dtype).max)
    upper_c = b.constant(upper)
    limit = b.broadcast_to(b.constant(largest, np.int32), upper_c.type.shape)
    upper_v = b.emit("stablehlo.minimum", upper_c, limit)
    if dtype != np.int32:
        upper_v = b.convert(upper_v, dtype)
    upper_v = b.broadcast(upper_v, indices.type.shape, (len(indices.type.shape) - 1,))
    zero = b.broadcast_to(b.constant(0, dtype), indices.type.shape)
    return b.emit("stablehlo.clamp", zero, indices, upper_v)


def _scatter_rule(ctx: RuleContext, x: Value, indices: Value, updates: Value, *,
                  dimension_numbers: Any, indices_are_sorted: bool, unique_indices: bool,
                  mode: GatherScatterMode, update_jaxpr: Any, update_consts: tuple) -> Value:
    """XLA's scatter drops updates whose window does not fit; ``mode='clip'`` clamps the
    indices first. The region combines an old value with an update."""
    b, dn = ctx.b, dimension_numbers
    if mode == GatherScatterMode.CLIP:
        indices = _clamp_scatter_indices(b, x, indices, updates, dn)
    dims = _struct("#stablehlo.scatter", [
        ("update_window_dims", dn.update_window_dims),
        ("inserted_window_dims", dn.inserted_window_dims),
        ("input_batching_dims", dn.operand_batching_dims),
        ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
        ("index_vector_dim", len(indices.type.shape) - 1)])
    scalar = TensorType((), x.type.dtype)

    def combine(inner: Builder, args: list[Value]) -> list[Value]:
        if update_jaxpr is None:
            return [args[1]]
        consts = [inner.constant(np.asarray(c)) for c in update_consts]
        return lower_jaxpr_into(inner, update_jaxpr, consts, args)

    attrs = {"indices_are_sorted": bool(indices_are_sorted), "scatter_dimension_numbers": dims,
             "unique_indices": bool(unique_indices)}
    region = _region(b, [scalar, scalar], combine)
    return b.op("stablehlo.scatter", [x, indices, updates], [x.type], attrs, [region]).result


for _prim in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p,
              scatter_min_p, scatter_max_p):
    lowering_rules[_prim] = _scatter_rule


# ---------------------------------------------------------------------------------------
# Sorting
# ---------------------------------------------------------------------------------------


def _sort_keys(b: Builder, args: list[Value], num_keys: int) -> tuple[list[Value], list[Value]]:
    """The comparator's keys: floats with -0.0 made 0.0 and every NaN the same NaN (then
    compared in total order, so NaNs sort last); complex numbers as (real, imag)."""

    def canonical(x: Value) -> Value:
        zero = b.select(b.compare(x, b.constant(0, x.type.dtype), "EQ"),
                        b.constant(0, x.type.dtype), x)
        return b.select(b.compare(x, x, "NE"), b.constant(np.nan, x.type.dtype), zero)

    x_keys, y_keys = [], []
    for x, y in zip(args[:2 * num_keys:2], args[1:2 * num_keys:2]):
        dtype = x.type.dtype
        if dtype.kind == "c":
            part = TensorType((), dtype.type(0).real.dtype)
            for keys, v in ((x_keys, x), (y_keys, y)):
                keys.append(canonical(b.emit("stablehlo.real", v, type=part)))
                keys.append(canonical(b.emit("stablehlo.imag", v, type=part)))
        elif dtypes.issubdtype(dtype, np.floating):
            x_keys.append(canonical(x))
            y_keys.append(canonical(y))
        else:
            x_keys.append(x)
            y_keys.append(y)
    return x_keys, y_keys


def _sort_comparator(b: Builder, args: list[Value], num_keys: int) -> list[Value]:
    """Lexicographic ``x < y`` on the keys, built from the last key to the first."""
    x_keys, y_keys = _sort_keys(b, args, num_keys)
    less = None
    for xk, yk in zip(x_keys[::-1], y_keys[::-1]):
        kind = "TOTALORDER" if dtypes.issubdtype(xk.type.dtype, np.floating) else None
        lt = b.compare(xk, yk, "LT", kind)
        if less is None:
            less = lt
        else:
            less = b.emit("stablehlo.or", lt,
                          b.emit("stablehlo.and", b.compare(xk, yk, "EQ", kind), less))
    return [less]


@register(sort_p)
def _sort(ctx: RuleContext, *operands: Value, dimension: int, is_stable: bool,
          num_keys: int) -> list[Value]:
    b = ctx.b
    scalars = [TensorType((), x.type.dtype) for x in operands for _ in range(2)]
    region = _region(b, scalars, lambda r, args: _sort_comparator(r, args, num_keys))
    attrs = {"dimension": Typed(dimension, "i64"), "is_stable": bool(is_stable)}
    return b.op("stablehlo.sort", operands, [x.type for x in operands], attrs,
                [region]).results


@register(top_k_p)
def _top_k(ctx: RuleContext, x: Value, *, k: int, axis: int) -> list[Value]:
    """``chlo.top_k`` works on the last axis: transpose another axis there and back."""
    b, rank = ctx.b, len(x.type.shape)
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = transpose_op(ctx, x, tuple(perm))
    shape = x.type.shape[:-1] + (k,)
    outs = b.op("chlo.top_k", [x], [TensorType(shape, x.type.dtype),
                                    TensorType(shape, np.dtype(np.int32))], {"k": k}).results
    if perm is not None:
        outs = [transpose_op(ctx, o, tuple(perm)) for o in outs]
    return outs


# ---------------------------------------------------------------------------------------
# Control flow and nested jit
# ---------------------------------------------------------------------------------------


@register(cond_p)
def _cond(ctx: RuleContext, index: Value, *args: Value, branches: tuple) -> list[Value]:
    """``stablehlo.case``: one region per branch, each computing from the operands."""
    b = ctx.b
    regions = [_region(b, [], lambda r, _, br=branch: lower_closed_jaxpr(r, br, args))
               for branch in branches]
    return b.op("stablehlo.case", [index], [tensor_type(a) for a in ctx.avals_out], {},
                regions).results


@register(while_p)
def _while(ctx: RuleContext, *args: Value, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
           cond_nconsts: int, body_nconsts: int) -> list[Value]:
    """``stablehlo.while`` carries everything, the constants of both jaxprs included."""
    b = ctx.b
    types = [a.type for a in args]

    def cond(r: Builder, carry: list[Value]) -> list[Value]:
        return lower_closed_jaxpr(r, cond_jaxpr, carry[:cond_nconsts]
                                  + carry[cond_nconsts + body_nconsts:])

    def body(r: Builder, carry: list[Value]) -> list[Value]:
        consts = carry[cond_nconsts:cond_nconsts + body_nconsts]
        outs = lower_closed_jaxpr(r, body_jaxpr, consts + carry[cond_nconsts + body_nconsts:])
        return carry[:cond_nconsts + body_nconsts] + outs

    op = b.op("stablehlo.while", args, types, {}, [_region(b, types, cond),
                                                  _region(b, types, body)])
    return op.results[cond_nconsts + body_nconsts:]


def _int() -> np.dtype:
    """The default integer: int32, or int64 with ``jax_enable_x64``."""
    return dtypes.canonicalize_dtype(np.int64)


def _dynamic_index_in_dim(b: Builder, x: TensorType) -> Func:
    """JAX's jitted helper ``x[i]`` along axis 0 (a private function per type)."""

    def build(f: Builder, args: list[Value]) -> list[Value]:
        operand, i = args
        zeros = [f.constant(0, _int()) for _ in x.shape[1:]]
        piece = f.emit("stablehlo.dynamic_slice", operand, i, *zeros,
                       type=TensorType((1, *x.shape[1:]), x.dtype), sizes=(1, *x.shape[1:]))
        return [f.emit("stablehlo.reshape", piece, type=TensorType(x.shape[1:], x.dtype))]

    index = TensorType((), _int())
    return b.module.function("dynamic_index_in_dim", [x, index], build,
                             key=("dynamic_index_in_dim", x))


def _dynamic_update_index_in_dim(b: Builder, ys: TensorType) -> Func:
    """JAX's jitted helper ``ys.at[i].set(y)`` along axis 0."""

    def build(f: Builder, args: list[Value]) -> list[Value]:
        buffer, y, i = args
        rank = len(ys.shape)
        y = f.broadcast(y, (1, *ys.shape[1:]), range(1, rank))
        zeros = [f.constant(0, _int()) for _ in ys.shape[1:]]
        return [f.emit("stablehlo.dynamic_update_slice", buffer, y, i, *zeros)]

    y_type = TensorType(ys.shape[1:], ys.dtype)
    index = TensorType((), _int())
    return b.module.function("dynamic_update_index_in_dim", [ys, y_type, index], build,
                             key=("dynamic_update_index_in_dim", ys))


@register(scan_p)
def _scan(ctx: RuleContext, *args: Value, jaxpr: ClosedJaxpr, length: int, reverse: bool,
          unroll: int, num_consts: int, num_carry: int) -> list[Value]:
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
    index_dtype = _int()
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


# ---------------------------------------------------------------------------------------
# Linear algebra: LAPACK custom calls, as JAX emits them for the CPU
# ---------------------------------------------------------------------------------------

_LAPACK_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _layouts(types: Sequence[TensorType], batch: int) -> list[Dense]:
    out = []
    for t in types:
        rank = len(t.shape)
        if rank - batch >= 2:
            order = [rank - 2, rank - 1, *range(rank - 3, -1, -1)]
        else:
            order = list(range(rank - 1, -1, -1))
        out.append(Dense(np.array(order, np.int64), f"tensor<{rank}xindex>"))
    return out


def _sharding_rule(ins: Sequence[TensorType], outs: Sequence[TensorType], batch: int) -> Opaque:
    """Shardy's rule: one factor letter per dimension, shared by the batch dimensions."""
    letters = iter("ijklmnopqrstuvwxyzabcdefgh")
    sizes: dict[str, int] = {}
    batch_letters = []

    def dims(t: TensorType) -> str:
        names = []
        for d, n in enumerate(t.shape):
            if d < batch and len(batch_letters) > d:
                names.append(batch_letters[d])
                continue
            letter = next(letters)
            if d < batch:
                batch_letters.append(letter)
            sizes[letter] = n
            names.append(letter)
        return "[" + ", ".join(names) + "]"

    lhs = ", ".join(dims(t) for t in ins)
    rhs = ", ".join(dims(t) for t in outs)
    factors = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return Opaque(f"#sdy.op_sharding_rule<({lhs})->({rhs}) {{{factors}}}, custom>")


def _lapack_call(b: Builder, target: str, operands: Sequence[Value],
                 out_types: Sequence[TensorType], batch: int, config: dict[str, Any],
                 alias: tuple[list[int], int]) -> list[Value]:
    """``stablehlo.custom_call @lapack_<x>_ffi`` with the attributes JAX gives it."""
    output_index, operand_index = alias
    attributes = {
        "backend_config": "",
        "mhlo.backend_config": {k: Typed(v, "ui8") for k, v in config.items()},
        "mhlo.frontend_attributes": {"num_batch_dims": str(batch)},
        "operand_layouts": _layouts([v.type for v in operands], batch),
        "output_operand_aliases": [Opaque(
            f"#stablehlo.output_operand_alias<output_tuple_indices = {output_index}, "
            f"operand_index = {operand_index}, operand_tuple_indices = []>")],
        "result_layouts": _layouts(out_types, batch),
        "sdy.sharding_rule": _sharding_rule([v.type for v in operands], out_types, batch),
    }
    return b.op("stablehlo.custom_call", operands, out_types,
                {"call_target_name": target, "attributes": attributes}).results


def _status_ok(b: Builder, info: Value, direction: str = "EQ") -> Value:
    """Where LAPACK succeeded: ``info == 0`` (``>= 0`` for getrf)."""
    return b.compare(info, b.full(0, info.type), direction)


def _nan_where_failed(b: Builder, ok: Value, result: Value) -> Value:
    """Results of a failed factorisation are NaN (as in JAX)."""
    batch = len(ok.type.shape)
    extra = len(result.type.shape) - batch
    ok = b.broadcast(ok, ok.type.shape + (1,) * extra, range(batch))
    nan = complex(np.nan, np.nan) if result.type.dtype.kind == "c" else np.nan
    nan = b.full(nan, result.type)
    ok = b.broadcast(ok, result.type.shape, range(len(result.type.shape)))
    return b.select(ok, result, nan)


def _batch_and_info(x: TensorType) -> tuple[int, TensorType]:
    batch = len(x.shape) - 2
    return batch, TensorType(x.shape[:batch], np.dtype(np.int32))


@register(lax_linalg.cholesky_p)
def _cholesky(ctx: RuleContext, x: Value) -> Value:
    b = ctx.b
    batch, info = _batch_and_info(x.type)
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}potrf_ffi"
    factor, status = _lapack_call(b, target, [x], [x.type, info], batch, {"uplo": ord("L")},
                                  ([0], 0))
    return _nan_where_failed(b, _status_ok(b, status), factor)


@register(lax_linalg.eigh_p)
def _eigh(ctx: RuleContext, x: Value, *, lower: bool, sort_eigenvalues: bool,
          subset_by_index: Any, algorithm: Any) -> list[Value]:
    b = ctx.b
    batch, info = _batch_and_info(x.type)
    values = tensor_type(ctx.avals_out[1])
    kind = "heevd" if x.type.dtype.kind == "c" else "syevd"
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}{kind}_ffi"
    vectors, w, status = _lapack_call(
        b, target, [x], [x.type, values, info], batch,
        {"mode": ord("V"), "uplo": ord("L" if lower else "U")}, ([0], 0))
    ok = _status_ok(b, status)
    return [_nan_where_failed(b, ok, result) for result in (vectors, w)]


@register(lax_linalg.triangular_solve_p)
def _triangular_solve(ctx: RuleContext, a: Value, rhs: Value, *, left_side: bool,
                      lower: bool, transpose_a: bool, conjugate_a: bool,
                      unit_diagonal: bool) -> Value:
    b = ctx.b
    batch = len(a.type.shape) - 2
    trans = "C" if transpose_a and conjugate_a else "T" if transpose_a else "N"
    config = {"diag": ord("U" if unit_diagonal else "N"), "side": ord("L" if left_side else "R"),
              "trans_x": ord(trans), "uplo": ord("L" if lower else "U")}
    target = f"lapack_{_LAPACK_PREFIX[a.type.dtype.name]}trsm_ffi"
    if conjugate_a and not transpose_a and a.type.dtype.kind == "c":  # real: nothing to do
        a = conj_op(ctx, a)
    return _lapack_call(b, target, [a, rhs], [rhs.type], batch, config, ([], 1))[0]


@register(lax_linalg.qr_p)
def _qr(ctx: RuleContext, x: Value, *, pivoting: bool, full_matrices: bool, use_magma: Any
        ) -> list[Value]:
    """geqrf (R above the diagonal, Householder vectors below), then orgqr builds Q."""
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    prefix = _LAPACK_PREFIX[x.type.dtype.name]
    taus = TensorType((*batch_shape, k), x.type.dtype)
    packed, tau = _lapack_call(b, f"lapack_{prefix}geqrf_ffi", [x], [x.type, taus], batch, {},
                               ([0], 0))
    q_in = packed
    if m < n:
        q_in = slice_op(b, packed, (0,) * (batch + 2), (*batch_shape, m, m))
    elif full_matrices:
        q_in = b.emit("stablehlo.pad", packed, b.constant(0, x.type.dtype),
                      type=TensorType((*batch_shape, m, m), x.type.dtype),
                      low=(0,) * (batch + 2), high=(0,) * batch + (0, m - n),
                      interior=(0,) * (batch + 2))
    q = _lapack_call(b, f"lapack_{prefix}orgqr_ffi", [q_in, tau], [q_in.type], batch, {},
                     ([], 0))[0]
    r = packed
    if not full_matrices and m > n:
        r = slice_op(b, packed, (0,) * (batch + 2), (*batch_shape, k, n))
    matrix = TensorType(r.type.shape[batch:], _int())
    rows = b.op("stablehlo.iota", [], [matrix], {"dim": 0}).result
    rows = b.emit("stablehlo.add", rows, b.full(-1, rows.type))
    cols = b.op("stablehlo.iota", [], [matrix], {"dim": 1}).result
    below = b.compare(rows, cols, "GE")  # strictly below the diagonal: zero
    if batch:
        below = b.broadcast(below, r.type.shape, (batch, batch + 1))
    r = b.select(below, b.full(0, r.type), r)
    return [q, r]


@register(lax_linalg.svd_p)
def _svd(ctx: RuleContext, x: Value, *, full_matrices: bool, compute_uv: bool,
         subset_by_index: Any, algorithm: Any) -> list[Value]:
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    info = TensorType(tuple(batch_shape), np.dtype(np.int32))
    s_type = TensorType((*batch_shape, k), np.dtype(x.type.dtype.type(0).real.dtype))
    if compute_uv:
        u_cols, vt_rows = (m, n) if full_matrices else (k, k)
        u_type = TensorType((*batch_shape, m, u_cols), x.type.dtype)
        vt_type = TensorType((*batch_shape, vt_rows, n), x.type.dtype)
        mode = ord("A" if full_matrices else "S")
    else:
        u_type = TensorType((*batch_shape, m, m), x.type.dtype)
        vt_type = TensorType((*batch_shape, n, n), x.type.dtype)
        mode = ord("N")
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}gesdd_ffi"
    _, s, u, vt, status = _lapack_call(b, target, [x], [x.type, s_type, u_type, vt_type, info],
                                       batch, {"mode": mode}, ([0], 0))
    ok = _status_ok(b, status)
    return [_nan_where_failed(b, ok, result) for result in ([s, u, vt] if compute_uv else [s])]


@register(lax_linalg.lu_p)
def _lu(ctx: RuleContext, x: Value) -> list[Value]:
    """getrf gives the factors and 1-based pivots; the permutation applies the row swaps
    one by one in a ``while`` loop (a simpler loop than JAX's, with the same result)."""
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    i32 = np.dtype(np.int32)
    pivots_t = TensorType((*batch_shape, k), i32)
    info = TensorType(tuple(batch_shape), i32)
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}getrf_ffi"
    factors, pivots, status = _lapack_call(b, target, [x], [x.type, pivots_t, info], batch, {},
                                           ([0], 0))
    pivots = b.emit("stablehlo.subtract", pivots, b.full(1, pivots_t))
    lu = _nan_where_failed(b, _status_ok(b, status, "GE"), factors)
    perm_t = TensorType((*batch_shape, m), i32)
    perm = b.op("stablehlo.iota", [], [perm_t], {"dim": batch}).result
    types = [pivots_t, TensorType((), i32), perm_t]

    def cond(r: Builder, state: list[Value]) -> list[Value]:
        return [r.compare(state[1], r.constant(k, i32), "LT")]

    def body(r: Builder, state: list[Value]) -> list[Value]:
        piv, i, p = state
        zeros = [r.constant(0, i32) for _ in batch_shape]
        col = TensorType((*batch_shape, 1), i32)
        j = r.emit("stablehlo.dynamic_slice", piv, *zeros, i, type=col,
                   sizes=(*batch_shape, 1))
        p_i = r.emit("stablehlo.dynamic_slice", p, *zeros, i, type=col, sizes=(*batch_shape, 1))
        iota = r.op("stablehlo.iota", [], [perm_t], {"dim": batch}).result
        j_b = r.broadcast(j, perm_t.shape, range(batch + 1))
        i_b = r.broadcast(i, perm_t.shape, ())
        p_j_mask = r.compare(iota, j_b, "EQ")
        p_j = reduce_op(r, [r.select(p_j_mask, p, r.full(0, perm_t))], [r.constant(0, i32)],
                      "stablehlo.add", (batch,))[0]
        p_j = r.emit("stablehlo.reshape", p_j, type=col)
        swapped = r.select(p_j_mask, r.broadcast(p_i, perm_t.shape, range(batch + 1)), p)
        swapped = r.select(r.compare(iota, i_b, "EQ"),
                           r.broadcast(p_j, perm_t.shape, range(batch + 1)), swapped)
        return [piv, r.emit("stablehlo.add", i, r.constant(1, i32)), swapped]

    if k == 0:
        return [lu, pivots, perm]
    op = b.op("stablehlo.while", [pivots, b.constant(0, i32), perm], types, {},
              [_region(b, types, cond), _region(b, types, body)])
    return [lu, pivots, op.results[2]]
