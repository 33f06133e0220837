"""Ahead-of-time compilation: the stages ``jit`` goes through, one object per stage.

``jit(f)(x)`` traces, lowers, compiles and runs in one go. The stages let you stop
after each step and look::

    traced = jit(f).trace(x)      # Traced:   .jaxpr, .out_info
    lowered = traced.lower()      # Lowered:  .as_text() (StableHLO), .cost_analysis()
    compiled = lowered.compile()  # Compiled: .as_text() (the generated code), call it

(``jit(f).lower(x)`` is ``jit(f).trace(x).lower()``.) The arguments may be arrays or
``ShapeDtypeStruct`` s: only their types matter. A ``Compiled`` takes the arguments that
were not static, checks that they have the types it was compiled for (JAX's
``TypeError`` if not), and runs as one job on the device's queue, like ``jit``.
"""

from __future__ import annotations

from typing import Any

from minijax import core
from minijax.compiler import dispatch, jit_primitive, lowering
from minijax.core import ShapedArray
from minijax.jaxpr import ClosedJaxpr
from minijax.runtime import host_to_array
from minijax.shape_dtype import ShapeDtypeStruct
from minijax.tree_util import (
    PyTreeDef,
    leaf_paths,
    structure_differences,
    tree_flatten,
    tree_unflatten,
)


def _shape_dtype(aval: ShapedArray) -> ShapeDtypeStruct:
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


class _Stage:
    """What every stage knows: the traced signature (see ``dispatch.CacheEntry``)."""

    def __init__(self, fun_name: str, entry: dispatch.CacheEntry) -> None:
        self.fun_name = fun_name
        self._entry = entry

    @property
    def in_tree(self) -> PyTreeDef:
        """The structure of the (non-static) arguments: ``(args, kwargs)``."""
        return self._entry.in_tree

    @property
    def in_avals(self) -> Any:
        return self.in_tree.unflatten(self._entry.in_avals)

    @property
    def out_tree(self) -> PyTreeDef:
        return self._entry.out_tree

    @property
    def out_info(self) -> Any:
        """The outputs' types, as a pytree of ``ShapeDtypeStruct`` s (after lowering,
        weak types are gone: the compiled program has plain dtypes)."""
        avals = self._entry.out_avals
        if not isinstance(self, Traced):
            avals = [a.strip_weak_type() for a in avals]
        return self.out_tree.unflatten(map(_shape_dtype, avals))

    @property
    def _closed_jaxpr(self) -> ClosedJaxpr:
        return self._entry.params["jaxpr"]


class Traced(_Stage):
    """The function traced to a jaxpr for one signature."""

    @property
    def jaxpr(self) -> ClosedJaxpr:
        return self._closed_jaxpr

    @property
    def out_avals(self) -> Any:
        return self.out_tree.unflatten(self._entry.out_avals)

    def lower(self) -> Lowered:
        return Lowered(self.fun_name, self._entry)


class Lowered(_Stage):
    """The jaxpr lowered to a StableHLO module, the text every backend compiles."""

    def __init__(self, fun_name: str, entry: dispatch.CacheEntry) -> None:
        super().__init__(fun_name, entry)
        result_names = [f"result{path}" for path in leaf_paths(entry.out_tree)]
        self._text = lowering.lower_jaxpr(
            self._closed_jaxpr, module_name=lowering.module_name(fun_name),
            result_names=result_names, keep_unused=entry.params["keep_unused"])

    def as_text(self) -> str:
        return self._text

    def cost_analysis(self) -> dict[str, float]:
        """Estimated ``flops`` and ``bytes accessed`` (see ``lowering.cost_analysis``)."""
        return lowering.cost_analysis(self._closed_jaxpr)

    def compile(self) -> Compiled:
        return Compiled(self.fun_name, self._entry, self._text)


class Compiled(_Stage):
    """The compiled program: call it with arrays of the types it was compiled for."""

    def __init__(self, fun_name: str, entry: dispatch.CacheEntry, text: str) -> None:
        super().__init__(fun_name, entry)
        self._executable = jit_primitive.backend().compile_text(text)
        used = None if entry.params["keep_unused"] else lowering.used_inputs(self._closed_jaxpr)
        jit_primitive.use_executable(self._closed_jaxpr,
                                  jit_primitive.with_used_inputs(self._executable, used))

    def as_text(self) -> str:
        """The generated Python source."""
        return self._executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return lowering.cost_analysis(self._closed_jaxpr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(_pytree_mismatch(self.in_tree, in_tree))
        leaves = [host_to_array(x) for x in leaves]
        _check_types(self._entry, [x.aval for x in leaves])
        if core.current_trace() is not core.eval_trace:
            outs = jit_primitive.jit_p.bind(*leaves, **self._entry.params)
        else:
            outs = dispatch.dispatch(self._entry, leaves)
        return tree_unflatten(self.out_tree, outs)


def _check_types(entry: dispatch.CacheEntry, avals: list[ShapedArray]) -> None:
    """JAX's TypeError naming every argument whose shape or dtype differs (weak types may)."""
    mismatches = [
        f"Argument '{name}' compiled with {want.str_long()} and called with {got.str_long()}"
        for name, want, got in zip(entry.arg_names, entry.in_avals, avals)
        if (want.shape, want.dtype) != (got.shape, got.dtype)]
    if mismatches:
        raise TypeError(
            "Argument types differ from the types for which this computation was compiled. "
            "Perhaps you are calling the compiled executable with a different enable_x64 "
            "mode than when it was AOT compiled? The mismatches are:\n" + "\n".join(mismatches))


def _pytree_mismatch(compiled: PyTreeDef, called: PyTreeDef) -> str:
    """JAX's message for arguments of another structure, place by place."""
    diffs = []
    for name, want, got in zip(("args", "kwargs"), compiled.children(), called.children()):
        diffs += structure_differences(want, got, "pytree leaf", name)
    lines = [f"    * at {path}, seen {thing1} but now given {thing2}, so {why}"
             for path, thing1, thing2, why in diffs]
    return ("Function compiled with input pytree does not match the input pytree it was "
            f"called with. There are {len(lines)} mismatches, including:\n" + "\n".join(lines))
