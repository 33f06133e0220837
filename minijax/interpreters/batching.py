"""Vectorization: the batching interpreter behind ``vmap``.

A :class:`BatchTracer` stands for a whole *batch* of values while the function runs as if
on one of them: it holds one array, ``val``, with an extra dimension, ``batch_dim``, that
indexes the examples. The :class:`BatchTrace` interprets each primitive by its batching
rule, which computes all examples at once: ``sin`` of a batch is ``sin`` of the stacked
array; a matrix product of a batch of vectors with one matrix is one ``dot_general``;
a ``reduce_sum`` over axis 0 of each example is a ``reduce_sum`` over axis 1 of the
stack. No loop is run: each primitive becomes (usually) one primitive again.

A value that does not depend on the mapped inputs is *not batched*: it is kept as it is,
with batch dimension ``None`` (``not_mapped``), and broadcast along the batch only where a
rule needs it to be. Primitives whose operands are all unbatched are simply applied by
the enclosing trace, so a function that closes over constants does no extra work.

Rules live in :data:`batching_rules`, keyed by primitive; each one is written in the
module of its primitive's family (``lax/elementwise.py``, ``lax/shapes.py``, ...), with
the helpers below (:func:`defvectorized`, :func:`defbroadcasting`, :func:`defreducer`).
A rule is called as ``rule(axis_data, vals, dims, **params)`` under the enclosing trace
and returns ``(out, out_dim)`` (lists of them for a primitive with several results).

This module sits below ``lax``: where the machinery must move a batch axis or broadcast a
value along the batch, it calls the operations that ``lax`` registers with
:func:`register_structural_ops`.

Named axes (``vmap(..., axis_name="i")``) are kept in an *axis environment*, so that the
collectives (``psum``, ``pmean``, ``axis_index``) can find the size of the axis they
reduce over, and raise JAX's ``NameError`` for a name no ``vmap`` has bound.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax import core, dtypes, jaxpr, tracing
from minijax.core import Primitive, ShapedArray, Trace, Tracer

not_mapped = None  # the batch dimension of a value that is the same for every example


class AxisData(NamedTuple):
    """The mapped axis of one ``vmap``: its name (``None`` if unnamed) and its size."""

    name: Any
    size: int


# ---------------------------------------------------------------------------------------
# The axis environment: the names bound by the enclosing vmaps
# ---------------------------------------------------------------------------------------


class _AxisEnv(threading.local):
    frames: tuple[AxisData, ...] = ()


_axis_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(axis_data: AxisData) -> Iterator[None]:
    """Bind ``axis_data.name`` (if any) while the block runs."""
    previous = _axis_env.frames
    if axis_data.name is not None:
        _axis_env.frames = (*previous, axis_data)
    try:
        yield
    finally:
        _axis_env.frames = previous


def axis_env() -> tuple[AxisData, ...]:
    """The named axes bound now, outermost first."""
    return _axis_env.frames


def axis_exists(name: Any) -> bool:
    return any(frame.name == name for frame in _axis_env.frames)


def axis_size(name: Any) -> int:
    """The size of the innermost axis called ``name``; JAX's NameError if there is none."""
    for frame in reversed(_axis_env.frames):
        if frame.name == name:
            return frame.size
    raise NameError(f"unbound axis name: {name}")


def check_axis_names(names: Sequence[Any], api_name: str) -> None:
    """JAX's NameError for a collective over a named axis no vmap has bound (integer
    axes are positional, not names)."""
    for name in names:
        if not isinstance(name, int) and not axis_exists(name):
            raise NameError(f"Found an unbound axis name: {name}. To fix this, please call "
                            f"{api_name} under `jax.shard_map`.")


# ---------------------------------------------------------------------------------------
# Array operations the machinery needs, registered by lax
# ---------------------------------------------------------------------------------------

_structural_ops: dict[str, Callable[..., Any]] = {}


def register_structural_ops(*, transpose: Callable, broadcast_in_dim: Callable,
                            expand_dims: Callable) -> None:
    """Called once by ``minijax.lax.shapes``: the lax functions used to move and insert
    batch axes (this module may not import lax, which is built on top of it)."""
    _structural_ops.update(transpose=transpose, broadcast_in_dim=broadcast_in_dim,
                           expand_dims=expand_dims)


def canonicalize_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """``x`` with its axis ``src`` moved to position ``dst`` (a ``transpose``)."""
    if src == dst:
        return x
    ndim = core.get_aval(x).ndim
    src, dst = canonicalize_axis(src, ndim), canonicalize_axis(dst, ndim)
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return _structural_ops["transpose"](x, perm)


def _shape(x: Any) -> tuple[int, ...]:
    """The shape of an array, a tracer, or a Python or NumPy value (which an unbatched
    output may be: JAX hands those back as they are)."""
    return x.shape if hasattr(x, "shape") else np.shape(x)


def broadcast(x: Any, size: int, axis: int) -> Any:
    """``x`` repeated ``size`` times along a new axis at position ``axis``."""
    shape = list(_shape(x))
    shape.insert(axis, size)
    if isinstance(x, np.ndarray) and x.dtype == dtypes.float0:  # an integer's cotangent
        return np.zeros(shape, dtypes.float0)
    dims = tuple(np.delete(np.arange(len(shape)), axis))  # NumPy ints, printed as in JAX
    return _structural_ops["broadcast_in_dim"](x, shape, dims)


def bdim_at_front(x: Any, bdim: int | None, size: int) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast to ``size``."""
    return broadcast(x, size, 0) if bdim is None else moveaxis(x, bdim, 0)


def mapped_aval(aval: ShapedArray, dim: int | None) -> ShapedArray:
    """The type of one example of a batch of type ``aval`` batched along ``dim``."""
    if dim is None:
        return aval
    return aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1:])


def unmapped_aval(aval: ShapedArray, size: int, dim: int | None) -> ShapedArray:
    """The type of a batch of ``size`` examples of type ``aval``, stacked along ``dim``."""
    if dim is None:
        return aval
    return aval.update(shape=aval.shape[:dim] + (size,) + aval.shape[dim:])


class SpecMatchError(Exception):
    """An output batched along ``src`` was asked to come out unbatched (``dst`` None)."""

    def __init__(self, leaf_index: int | None, src: int | None, dst: Any) -> None:
        super().__init__(leaf_index, src, dst)
        self.leaf_index, self.src, self.dst = leaf_index, src, dst


def matchaxis(axis_data: AxisData, src: int | None, dst: int | None, x: Any) -> Any:
    """``x``, batched along ``src``, made batched along ``dst`` (``None``: unbatched)."""
    if src == dst:
        return x
    if src is not None and dst is not None:
        return moveaxis(x, src, dst)
    if src is None:
        return broadcast(x, axis_data.size, canonicalize_axis(dst, len(_shape(x)) + 1))
    if axis_data.name is not None:
        raise ValueError(f"vmap has mapped output (axis_name={axis_data.name}) but out_axes "
                         f"is {dst}")
    raise SpecMatchError(None, src, dst)


# ---------------------------------------------------------------------------------------
# The tracer and the trace
# ---------------------------------------------------------------------------------------

# primitive -> rule(axis_data, vals, dims, **params) -> (out, out_dim)
batching_rules: dict[Primitive, Callable[..., tuple[Any, Any]]] = {}
# Primitives whose rule runs even if no operand is batched: collectives over a named
# axis (``axis_index`` has no operands at all; ``psum`` of a constant still sums).
named_axis_primitives: set[Primitive] = set()


class BatchTracer(Tracer):
    """A batch of values: ``val`` holds them all, stacked along ``batch_dim``."""

    __slots__ = ("val", "batch_dim", "source_info")
    kind_name = "BatchTracer"

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: int) -> None:
        super().__init__(trace)
        self.val = val
        self.batch_dim = batch_dim
        self.source_info = tracing.SourceInfo.capture()

    def _context(self) -> str:
        """Where the batch was made: JAX's errors point at that line (not at the trace)."""
        if self.source_info is None:
            return ""
        return (f"This BatchTracer with object id {id(self)} was created on line:\n"
                f"  {self.source_info}")

    @property
    def aval(self) -> ShapedArray:
        return mapped_aval(core.get_aval(self.val), self.batch_dim)

    def __repr__(self) -> str:
        return f"VmapTracer(aval={self.aval}, batched={core.get_aval(self.val)})"


class BatchTrace(Trace):
    """Interprets primitives by their batching rules; rules run under ``parent``."""

    def __init__(self, parent: Trace, axis_data: AxisData) -> None:
        super().__init__()
        self.parent = parent
        self.axis_data = axis_data
        self.tracing_context = parent.tracing_context
        self.host_constants = parent.host_constants
        self.host_scalars = parent.host_scalars

    def to_batch_info(self, x: Any) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        if isinstance(x, Tracer):
            core.check_valid_tracer(x)
        return x, not_mapped

    def box(self, val: Any, dim: int | None) -> Any:
        return val if dim is None else BatchTracer(self, val, dim)

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
        if all(d is None for d in dims) and primitive not in named_axis_primitives:
            with core.set_current_trace(self.parent):
                return primitive.bind(*vals, **params)
        rule = batching_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
        with core.set_current_trace(self.parent):
            out, out_dim = rule(self.axis_data, list(vals), list(dims), **params)
        if primitive.multiple_results:
            return [self.box(v, d) for v, d in zip(out, out_dim)]
        return self.box(out, out_dim)


def batch_flat(fun: Callable[..., Sequence[Any]], axis_data: AxisData,
               in_vals: Sequence[Any], in_dims: Sequence[int | None],
               out_dims: Callable[[], Sequence[Any]] | None = None
               ) -> tuple[list[Any], list[int | None]]:
    """Run ``fun`` (flat inputs -> flat outputs) on batches: input ``i`` is batched
    along ``in_dims[i]``. Returns the outputs and their batch dimensions; given
    ``out_dims`` (called once ``fun`` has returned), the outputs are first moved to those
    dimensions (``None``: unbatched; a batched output there is a ``SpecMatchError``)."""
    parent = core.current_trace()
    trace = BatchTrace(parent, axis_data)
    try:
        tracers = [trace.box(v, d) for v, d in zip(in_vals, in_dims)]
        with core.set_current_trace(trace), extend_axis_env(axis_data):
            outs = fun(*tracers)
        vals, dims = zip(*map(trace.to_batch_info, outs)) if outs else ((), ())
        if out_dims is None:
            return list(vals), list(dims)
        dests = list(out_dims())
        with core.set_current_trace(parent):
            return [_match(axis_data, i, s, d, v) for i, (v, s, d) in
                    enumerate(zip(vals, dims, dests))], dests
    finally:
        trace.invalidate()


def _match(axis_data: AxisData, index: int, src: int | None, dst: int | None, x: Any) -> Any:
    try:
        return matchaxis(axis_data, src, dst, x)
    except SpecMatchError:
        raise SpecMatchError(index, src, dst) from None


def batch_jaxpr(closed: jaxpr.ClosedJaxpr, axis_data: AxisData,
                in_dims: Sequence[int | None], out_dims: Sequence[int | None] | None = None
                ) -> tuple[jaxpr.ClosedJaxpr, list[int | None]]:
    """The jaxpr computing ``closed`` on batches (input ``i`` batched along
    ``in_dims[i]``), and the batch dimensions of its outputs (``out_dims`` if given:
    then batched outputs are moved there and unbatched ones broadcast to it)."""
    in_avals = [unmapped_aval(a, axis_data.size, d) for a, d in zip(closed.in_avals, in_dims)]
    found: list[int | None] = []

    def run(*args: Any) -> list[Any]:
        outs, dims = batch_flat(lambda *xs: jaxpr.eval_closed_jaxpr(closed, *xs), axis_data,
                                args, in_dims,
                                None if out_dims is None else lambda: out_dims)
        found[:] = dims
        return outs

    return tracing.trace_to_jaxpr(run, in_avals), found


def batch_jaxpr_at_front(closed: jaxpr.ClosedJaxpr, axis_data: AxisData,
                         in_batched: Sequence[bool], out_batched: Sequence[bool] | None = None
                         ) -> tuple[jaxpr.ClosedJaxpr, list[bool]]:
    """``batch_jaxpr`` with every batch axis first: batched inputs along axis 0, and
    outputs batched along axis 0 where ``out_batched`` says so (where they are batched,
    if not given; an output batched but not asked to be is an error)."""
    in_dims = [0 if b else None for b in in_batched]
    if out_batched is None:
        batched, found = batch_jaxpr(closed, axis_data, in_dims)
        if all(d in (None, 0) for d in found):  # the common case: no second trace
            return batched, [d is not None for d in found]
        out_batched = [d is not None for d in found]
    out_dims = [0 if b else None for b in out_batched]
    return batch_jaxpr(closed, axis_data, in_dims, out_dims)[0], list(out_batched)


# ---------------------------------------------------------------------------------------
# Helpers for writing rules
# ---------------------------------------------------------------------------------------


def defvectorized(prim: Primitive) -> None:
    """A rule for a unary elementwise primitive: apply it to the batch as it is."""
    def rule(axis_data: AxisData, vals: list, dims: list, **params: Any) -> tuple[Any, Any]:
        return prim.bind(*vals, **params), dims[0]

    batching_rules[prim] = rule


def defbroadcasting(prim: Primitive) -> None:
    """A rule for an n-ary elementwise primitive with lax's trivial broadcasting: if all
    batched operands agree in shape and batch dimension (others being scalars), apply it
    as it is; otherwise move batch axes to the front, give unbatched operands a leading
    axis of size 1, and let the primitive broadcast."""
    def rule(axis_data: AxisData, vals: list, dims: list, **params: Any) -> tuple[Any, Any]:
        shapes = [core.get_aval(x).shape for x in vals]
        shape, dim = next((s, d) for s, d in zip(shapes, dims) if d is not None)
        if all(s == shape and d == dim for s, d in zip(shapes, dims) if s):
            return prim.bind(*vals, **params), dim
        vals = [bdim_at_front(x, d, 1) if s else x for x, s, d in zip(vals, shapes, dims)]
        ndim = max(core.get_aval(x).ndim for x in vals)
        vals = [_expand_trailing(x, ndim) if d is not None else x for x, d in zip(vals, dims)]
        return prim.bind(*vals, **params), 0

    batching_rules[prim] = rule


def _expand_trailing(x: Any, ndim: int) -> Any:
    """A batched scalar (now of rank 1) broadcasts against rank ``ndim`` operands only
    with trailing axes of size 1."""
    rank = core.get_aval(x).ndim
    return x if rank == ndim else _structural_ops["expand_dims"](x, tuple(range(rank, ndim)))


def defreducer(prim: Primitive) -> None:
    """A rule for a reduction over the ``axes`` parameter: reduce the same axes of each
    example, which sit one further along where they follow the batch axis."""
    def rule(axis_data: AxisData, vals: list, dims: list, *, axes: tuple[int, ...],
             **params: Any) -> tuple[Any, Any]:
        (x,), (bdim,) = vals, dims
        axes = tuple(np.where(np.less(axes, bdim), axes, np.add(axes, 1)))
        kept = [d for d in range(core.get_aval(x).ndim) if d not in axes]
        return prim.bind(x, axes=axes, **params), kept.index(bdim)

    batching_rules[prim] = rule


def defcollective(prim: Primitive, rule: Callable[..., tuple[Any, Any]]) -> None:
    """Register the rule of a collective, which runs even when nothing is batched."""
    named_axis_primitives.add(prim)
    batching_rules[prim] = rule
