"""What every control-flow primitive needs: Python functions of pytrees, as jaxprs.

``cond``, ``while_loop`` and ``scan`` take Python functions, but their primitives take
*jaxprs* as parameters: a primitive's parameters must be data, and a jaxpr is a function
as data. So each control-flow function starts the same way: it traces the user's
function on the abstract values of its operands (:func:`trace_function`). Values the
function captured from outside (arrays, or tracers of an enclosing transformation) come
back as the jaxpr's constants; :func:`consts_as_inputs` turns them into ordinary
leading inputs, which the primitive then receives as explicit operands. That is how a
branch that uses a variable of the enclosing function keeps working under ``jit``.

The rest of this module is shared bookkeeping: the argument names error messages
mention, the type checks with JAX's messages, and a little jaxpr surgery that JAX does
to keep loops lean (values a loop body merely passes through are taken out of it).

Invariant kept by every control-flow rule (the derivative rules too): the jaxprs stored
in control-flow params have no constants of their own. Values a traced body captures
become leading operands (``consts_as_inputs``).
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from minijax.core import ShapedArray, Tracer
from minijax.dtypes import result_type
from minijax.flags import config, on_pieces_change
from minijax.interpreters import batching
from minijax.interpreters.ad import Zero
from minijax.jaxpr import ClosedJaxpr
from minijax.lax.base import convert_element_type, operand
from minijax.tracing import DebugInfo, trace_function
from minijax.tree_util import PyTreeDef, leaf_paths, structure_differences, tree_flatten

# ---------------------------------------------------------------------------------------
# Names of arguments, as error messages spell them: x, params['w'], args[0]
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# Tracing a function of pytrees
# ---------------------------------------------------------------------------------------


def flatten_operands(tree: Any) -> tuple[list[Any], list[ShapedArray], PyTreeDef]:
    """The leaves of ``tree`` as arrays or tracers, their abstract values, and the treedef."""
    leaves, treedef = tree_flatten(tree)
    values = [operand(x) for x in leaves]
    return values, [x.aval for x in values], treedef


def trace_once(fun: Callable, args_avals: tuple, debug: DebugInfo
               ) -> tuple[ClosedJaxpr, PyTreeDef]:
    """``trace_function``, remembered: the same function (``debug.fun`` when ``fun`` only
    wraps it, as ``fori_loop``'s body does) on the same types under the same flags gives
    back the jaxpr it gave the first time.

    Why: an eager loop (or ``cond``) would otherwise trace its body at every call, and
    tracing a short body costs more than running it. JAX keeps traced bodies the same
    way, by the function's identity (and the types, flags and named axes), and so shares
    JAX's caveat: a body that reads a global which has changed since keeps the old
    value, as a jitted function does. A body that captures tracers of an enclosing
    transformation is traced anew every time: those tracers belong to one trace only.
    The most recently used ``MAX_TRACES`` are kept (a jaxpr refers to its function, so
    entries cannot simply die with it).
    """
    flat, tree = tree_flatten(args_avals)
    # The named axes bound now are part of the key, as in jit's: psum(1, "i") is the
    # size of axis "i", fixed in the trace.
    key = (debug.fun or fun, debug, tree, tuple(flat), config.jax_enable_x64,
           config.jax_numpy_dtype_promotion, batching.axis_env())
    try:
        traced = _traced.pop(key, None)
    except TypeError:  # an unhashable callable or type
        return trace_function(fun, args_avals, debug)
    if traced is None:
        traced = trace_function(fun, args_avals, debug)
        if any(isinstance(c, Tracer) for c in traced[0].consts):
            return traced
        while len(_traced) >= MAX_TRACES:
            _traced.popitem(last=False)
    _traced[key] = traced  # the most recently used last
    return traced


MAX_TRACES = 512
_traced: OrderedDict[tuple, tuple[ClosedJaxpr, PyTreeDef]] = OrderedDict()
on_pieces_change(_traced.clear)  # traced with the pieces (a learner's trace) in force


# ---------------------------------------------------------------------------------------
# Jaxpr surgery: values a jaxpr merely passes through
# ---------------------------------------------------------------------------------------




# ---------------------------------------------------------------------------------------
# Derivative rules: symbolic zeros
# ---------------------------------------------------------------------------------------


def is_zero(t: Any) -> bool:
    """Whether a tangent or cotangent is a symbolic zero: a rule passes only the others
    to the primitive it binds."""
    return type(t) is Zero


# ---------------------------------------------------------------------------------------
# Types: checks, and the words JAX's messages use for a mismatch
# ---------------------------------------------------------------------------------------


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal types, ignoring weak types: a loop may start from ``0.0`` and carry a float32."""
    return a.shape == b.shape and a.dtype == b.dtype


def promote_weak_inputs(values: list[Any], in_avals: list[ShapedArray],
                        out_avals: list[ShapedArray]) -> tuple[list[Any], bool]:
    """Loop carries that start weakly typed (``0``) adopt the type the body gives them
    (``float32``). Returns the new initial values and whether any changed."""
    changed = False
    new_values = []
    for x, a_in, a_out in zip(values, in_avals, out_avals, strict=True):
        if a_in.weak_type and not typematch(a_in, a_out):
            x = convert_element_type(x, result_type(x, a_out.dtype))
            changed = True
        new_values.append(x)
    return new_values, changed


def cast_to(values: Sequence[Any], avals: Sequence[ShapedArray]) -> list[Any]:
    """Give eagerly computed values exactly the types the shape rule promised (a body may
    return a weakly typed value where the loop's carry is strongly typed)."""
    return [convert_element_type(x, a.dtype, a.weak_type) for x, a in zip(values, avals)]


def mismatch_reason(a: ShapedArray, b: ShapedArray) -> str:
    """``", so the dtypes do not match"`` and the like, for two avals that differ."""
    reasons = []
    if a.dtype != b.dtype:
        reasons.append("the dtypes do not match")
    if a.shape != b.shape:
        reasons.append("the shapes do not match")
    if not reasons:
        return ""
    if len(reasons) == 1:
        return f", so {reasons[0]}"
    return ", so " + ", ".join(reasons[:-1]) + f", and {reasons[-1]}"


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def listing(diffs: list[str], loose: bool, capital: bool = True) -> str:
    """One difference as a sentence; several as a bulleted list, in one of JAX's two
    layouts (``loose`` puts a blank line after every item but the last two)."""
    if len(diffs) == 1:
        return f"{capitalize(diffs[0]) if capital else diffs[0]}.\n"
    if loose:
        return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
    return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"


def check_carry_type(name: str, body_fun: Callable, in_tree: PyTreeDef,
                     in_avals: list[ShapedArray], out_tree: PyTreeDef,
                     out_avals: list[ShapedArray]) -> None:
    """A loop body must return a carry of exactly the type it was given (JAX's TypeError)."""
    if in_tree == out_tree and all(map(typematch, in_avals, out_avals)):
        return  # the usual case, checked before the (slow) names for the message
    try:
        carry_name = next(iter(inspect.signature(body_fun).parameters), None)
    except (TypeError, ValueError):
        carry_name = None

    def component(path: str) -> str:
        if carry_name:
            return (f"the input carry component {carry_name}{path}" if path
                    else f"the input carry {carry_name}")
        return f"the input carry at path {path}" if path else "the input carry"

    if in_tree != out_tree:
        diffs = [f"{component(p)} is a {t1} but the corresponding component of the carry "
                 f"output is a {t2}, so {why}"
                 for p, t1, t2, why in structure_differences(in_tree, out_tree, str(ShapedArray))]
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{listing(diffs, loose=True)}\n"
            "Revise the function so that the carry output has the same pytree structure "
            "as the carry input.")
    diffs = [f"{component(p)} has type {a.str_long()} but the corresponding output carry "
             f"component has type {b.str_long()}{mismatch_reason(a, b)}"
             for p, a, b in zip(leaf_paths(in_tree), in_avals, out_avals) if not typematch(a, b)]
    if diffs:
        raise TypeError(
            f"{name} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{listing(diffs, loose=True)}\n"
            "Revise the function so that all output types match the corresponding input "
            "types.")

