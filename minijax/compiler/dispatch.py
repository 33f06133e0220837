"""Running a traced signature eagerly: one job on the device's queue.

``jit(f)(x)`` on arrays, once ``f`` is traced for their types, is only this: find the
signature's :class:`CacheEntry` (``jit.py``'s cache), package its compiled program as a
job (a :class:`Program`, compiled on the first call by ``jit_primitive.executable_for``),
and put it on the queue of the device the inputs live on. The outputs are returned at
once, and filled in when the worker gets to the job. The AOT stages
(``Compiled.__call__``) call the same :func:`dispatch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.array import Array
from minijax.compiler.jit_primitive import executable_for, jit_p
from minijax.core import Primitive, ShapedArray
from minijax.dtypes import canonicalize_dtype, float0
from minijax.jaxpr import has_effects
from minijax.runtime import _as_array, _placement, default_device, float0_as_numpy
from minijax.tree_util import PyTreeDef


class CacheEntry:
    """One traced signature: the equation's params (which hold the jaxpr), the inputs'
    tree, types and names, the outputs' tree and types, whether the program prints (then
    a call waits for the device, so that the output appears in program order), whether
    an output is float0 (handed out as NumPy's), and the compiled program (made on the
    first eager call)."""

    __slots__ = ("params", "in_tree", "in_avals", "arg_names", "out_avals", "out_tree",
                 "has_effects", "has_float0", "inline", "program")

    def __init__(self, params: dict[str, Any], in_tree: PyTreeDef,
                 arg_names: Sequence[str], out_tree: PyTreeDef, inline: bool) -> None:
        self.params = params
        self.in_tree = in_tree
        self.in_avals = params["jaxpr"].in_avals
        self.arg_names = tuple(arg_names)
        self.out_avals = params["jaxpr"].out_avals
        self.out_tree = out_tree
        self.has_effects = has_effects(params["jaxpr"].jaxpr)
        self.has_float0 = any(aval.dtype == float0 for aval in self.out_avals)
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


def dispatch(entry: CacheEntry, leaves: Sequence[Any]) -> list[Any]:
    """Run a traced signature eagerly: one job on the device's queue. The output arrays
    are returned at once and filled in when the worker gets to the job (at once, when
    host NumPy arrays are read in place: see :func:`_borrow`); float0 ones are NumPy's."""
    borrowed: list[np.ndarray] = []
    for leaf in leaves:
        if type(leaf) is not Array:
            donating = any(entry.params["donated_invars"])
            leaves = [_as_array(x) if donating else _borrow(x, borrowed) for x in leaves]
            break
    device, committed = _placement(jit_p, leaves)
    program = entry.program
    if program is None:
        params = entry.params
        program = entry.program = Program(params["name"], executable_for(
            params["jaxpr"], params["name"], params["keep_unused"]))
    outs = [Array(aval, None, device, committed) for aval in entry.out_avals]
    waits = entry.has_effects or bool(borrowed)  # a debug print happens before returning
    device.enqueue((program, leaves, _NO_PARAMS, outs), wake_worker=not waits)
    if waits:
        device.synchronize()
    for out in outs if borrowed else ():  # an output may be an input, or a view of one
        value = out._value  # (one that owns its memory, ``base is None``, is neither)
        if value is not None and value.base is not None and any(
                np.may_share_memory(value, x) for x in borrowed):
            out._value = np.array(value)
    return float0_as_numpy(outs) if entry.has_float0 else outs


def _borrow(x: Any, borrowed: list[np.ndarray]) -> Array:
    """An argument as a job's input: a host NumPy array of a canonical dtype is read in
    place through a read-only view (noted in ``borrowed``: the call then waits for its
    program, so that a later change to ``x`` cannot reach the result, the promise a copy
    would keep), anything else converted as eager operations do. Why not copy, as
    ``jnp.asarray`` does: copies freed at the end of every step are handed back to the
    system and faulted in again by the next, page by page (a small MLP step ran three
    times slower on NumPy arguments than on device arrays). JAX's CPU reads in place too."""
    if getattr(x, "dtype", None) == float0:  # the program takes it as booleans (JAX's i1)
        return Array(ShapedArray(x.shape, np.dtype(bool)), np.zeros(x.shape, bool),
                     default_device(), False)
    if type(x) is not np.ndarray or not x.ndim or x.dtype != canonicalize_dtype(x.dtype):
        return _as_array(x)
    view = x.view()
    view.flags.writeable = False
    borrowed.append(x)
    return Array(ShapedArray(x.shape, x.dtype), view, default_device(), False)


_NO_PARAMS: dict[str, Any] = {}


__all__ = ["CacheEntry", "Program", "dispatch"]
