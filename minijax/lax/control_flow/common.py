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
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from minijax import tracing, tree_util
from minijax.core import ShapedArray
from minijax.dtypes import result_type
from minijax.jaxpr import ClosedJaxpr, Jaxpr, Var
from minijax.lax.elementwise import convert_element_type, is_jax_value, operand
from minijax.tree_util import PyTreeDef, tree_flatten

# ---------------------------------------------------------------------------------------
# Names of arguments, as error messages spell them: x, params['w'], args[0]
# ---------------------------------------------------------------------------------------


def leaf_paths(treedef: PyTreeDef) -> list[str]:
    """The key path of every leaf of ``treedef``, like ``[0]['w']`` (``""`` for a bare leaf)."""
    if treedef.node_data() is None:
        return [""]
    keys = tree_util._child_keys(treedef)
    return [key + path for key, child in zip(keys, treedef.children(), strict=True)
            for path in leaf_paths(child)]


@functools.lru_cache(maxsize=512)
def _cached_signature(fun: Callable) -> inspect.Signature:
    return inspect.signature(fun)


def _signature(fun: Callable) -> inspect.Signature:
    """``inspect.signature(fun)``, remembered: it costs tens of microseconds, and an
    eager loop asks for it at every call."""
    try:
        return _cached_signature(fun)
    except TypeError:  # an unhashable callable (or no signature: asked again, raises)
        return inspect.signature(fun)


def _parameter_names(fun: Callable, args: Sequence[Any], kwargs: dict[str, Any]
                     ) -> tuple[list[str], dict[str, str]] | None:
    """How each positional and keyword argument of a call is named by ``fun``'s signature
    (``args[2]`` for a ``*args`` parameter); None if there is no usable signature."""
    try:
        bound = _signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    positional: list[str] = []
    keyword: dict[str, str] = {}
    for name, param in bound.signature.parameters.items():
        if name not in bound.arguments:
            continue
        if param.kind is param.VAR_POSITIONAL:
            positional += [f"{name}[{i}]" for i in range(len(bound.arguments[name]))]
        elif param.kind is param.VAR_KEYWORD:
            keyword.update({key: f"{name}[{key!r}]" for key in bound.arguments[name]})
        elif name in kwargs:
            keyword[name] = name
        else:
            positional.append(name)
    return positional, keyword


def argument_names(fun: Callable, args: Sequence[Any], kwargs: dict[str, Any] | None = None,
                   static_argnums: Sequence[int] = ()) -> tuple[str, ...]:
    """The name of every leaf of ``(args, kwargs)``, in flattening order, leaving out the
    arguments at ``static_argnums``: what "depends on the value of the argument ..." says."""
    kwargs = kwargs or {}
    names = _parameter_names(fun, args, kwargs)
    if names is None:
        return ()
    positional, keyword = names
    out: list[str] = []
    for i, (name, arg) in enumerate(zip(positional, args)):
        if i not in static_argnums:
            out += [name + path for path in leaf_paths(tree_util.tree_structure(arg))]
    for key in sorted(kwargs):
        out += [keyword[key] + path
                for path in leaf_paths(tree_util.tree_structure(kwargs[key]))]
    return tuple(out)


# ---------------------------------------------------------------------------------------
# Tracing a function of pytrees
# ---------------------------------------------------------------------------------------


def flatten_operands(tree: Any) -> tuple[list[Any], list[ShapedArray], PyTreeDef]:
    """The leaves of ``tree`` as arrays or tracers, their abstract values, and the treedef."""
    leaves, treedef = tree_flatten(tree)
    values = [operand(x) for x in leaves]
    return values, [x.aval for x in values], treedef


class DebugInfo(NamedTuple):
    """What error messages say about a traced function: why it is traced ("cond",
    "scan", "jit", ...) and, when the function traced is a wrapper (``fori_loop``'s loop
    body), the user's function and the names of its arguments."""

    purpose: str
    fun: Callable | None = None
    arg_names: Sequence[str] | None = None


def trace_function(fun: Callable, args_avals: tuple, debug: DebugInfo,
                   kwargs_avals: dict | None = None) -> tuple[ClosedJaxpr, PyTreeDef]:
    """Trace ``fun(*args, **kwargs)``, given as pytrees of avals, into a closed jaxpr of the
    flattened inputs and outputs; also return the treedef of the output.

    The tracing context names the function and its arguments, so that an ``if`` on a
    traced value says which function and which argument it came from.
    """
    kwargs_avals = kwargs_avals or {}
    named_fun = debug.fun or fun
    arg_names = debug.arg_names
    if arg_names is None:
        arg_names = argument_names(named_fun, args_avals, kwargs_avals)
    in_avals, in_tree = tree_flatten((args_avals, kwargs_avals))
    out_tree: PyTreeDef | None = None

    def flat_fun(*flat_args: Any) -> list[Any]:
        nonlocal out_tree
        args, kwargs = in_tree.unflatten(flat_args)
        outs, out_tree = tree_flatten(fun(*args, **kwargs))
        _check_outputs(outs, out_tree, context)
        return outs

    context = tracing.tracing_context(named_fun, debug.purpose, arg_names)
    jaxpr = tracing.trace_to_jaxpr(flat_fun, in_avals, context)
    return jaxpr, out_tree


def _check_outputs(outs: list[Any], out_tree: PyTreeDef, context: Any) -> None:
    """JAX's TypeError for an output that is no array (a string...), naming where it is."""
    for i, leaf in enumerate(outs):
        if not is_jax_value(leaf):
            path = leaf_paths(out_tree)[i]
            at = f" at output component {path}" if path else ""
            raise TypeError(
                f"function {context.fun_name} at {context.source} traced for {context.purpose} "
                f"returned a value of type {type(leaf)}{at}, which is not a valid JAX type")


def split_list(values: Sequence[Any], *sizes: int) -> list[list[Any]]:
    """``values`` cut into consecutive pieces of the given sizes, plus the rest: how the
    flat operands of a control-flow primitive (consts, carry, xs, ...) are taken apart."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(list(values[start:start + size]))
        start += size
    return [*pieces, list(values[start:])]


def consts_as_inputs(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]]:
    """Turn the captured constants into leading inputs: ``(jaxpr without consts, consts)``.

    A control-flow primitive receives the constants as operands, so that captured tracers
    of an enclosing trace become ordinary inputs of its equation.
    """
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], [*j.constvars, *j.invars], j.outvars, j.eqns), []), closed.consts


def merge_consts(closed_jaxprs: Sequence[ClosedJaxpr]) -> tuple[list[ClosedJaxpr], list[Any]]:
    """Give several jaxprs (the branches of a ``cond``) one shared list of constants.

    Every jaxpr gets the union of all constants as leading inputs (one per distinct
    value), ignoring those it does not use; the branches can then be called alike.
    """
    consts: list[Any] = []
    seen: set[int] = set()
    for closed in closed_jaxprs:
        for c in closed.consts:
            if id(c) not in seen:
                seen.add(id(c))
                consts.append(c)
    merged = []
    for closed in closed_jaxprs:
        j = closed.jaxpr
        own = {id(c): v for c, v in zip(closed.consts, j.constvars, strict=True)}
        constvars = [own.get(id(c)) or Var(c.aval) for c in consts]
        merged.append(ClosedJaxpr(Jaxpr([], [*constvars, *j.invars], j.outvars, j.eqns), []))
    return merged, consts


# ---------------------------------------------------------------------------------------
# Jaxpr surgery: values a jaxpr merely passes through
# ---------------------------------------------------------------------------------------


def forwarded_inputs(jaxpr: Jaxpr) -> list[int | None]:
    """For each output: the index of the input it simply returns, or None."""
    position = {v: i for i, v in enumerate(jaxpr.invars)}
    return [position.get(v) if type(v) is Var else None for v in jaxpr.outvars]


def keep_outputs(closed: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """The jaxpr with only the outputs marked in ``keep`` (equations are left alone)."""
    j = closed.jaxpr
    outvars = [v for v, k in zip(j.outvars, keep, strict=True) if k]
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, outvars, j.eqns), closed.consts)


def move_inputs_to_front(closed: ClosedJaxpr, to_move: Sequence[bool]) -> ClosedJaxpr:
    """Reorder the inputs: those marked in ``to_move`` first, the others after them."""
    j = closed.jaxpr
    moved = [v for v, m in zip(j.invars, to_move, strict=True) if m]
    rest = [v for v, m in zip(j.invars, to_move, strict=True) if not m]
    return ClosedJaxpr(Jaxpr(j.constvars, moved + rest, j.outvars, j.eqns), closed.consts)


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


def structure_differences(tree1: PyTreeDef, tree2: PyTreeDef, leaf: str,
                          path: str = "") -> list[tuple[str, str, str, str]]:
    """Where two tree structures differ: ``(path, thing1, thing2, explanation)`` for each
    place, ``thing`` describing the node there (``leaf`` is how a leaf is described)."""
    node1, node2 = tree1.node_data(), tree2.node_data()
    if node1 is None and node2 is None:
        return []
    type1 = leaf if node1 is None else str(node1[0])
    type2 = leaf if node2 is None else str(node2[0])
    if node1 is None or node2 is None or node1[0] is not node2[0]:
        return [(path, type1, type2, "their Python types differ")]
    kind, children1, children2 = node1[0], tree1.children(), tree2.children()
    if kind in (list, tuple) and len(children1) != len(children2):
        return [(path, f"{kind.__name__} of length {len(children1)}",
                 f"{kind.__name__} of length {len(children2)}", "the lengths do not match")]
    if len(children1) != len(children2):
        def count(n: int) -> str:
            return f"with {n} child{'ren' if n > 1 else ''}"
        why = "the numbers of children do not match"
        if kind is dict:
            extra = " ".join(sorted(map(repr, set(node1[1]) ^ set(node2[1]))))
            why += f", with the symmetric difference of key sets: {{{extra}}}"
        return [(path, f"{type1} {count(len(children1))}", f"{type2} {count(len(children2))}",
                 why)]
    data1, data2 = node1[1], node2[1]
    if data1 != data2:
        show1, show2 = (tuple(data1), tuple(data2)) if kind is dict else (data1, data2)
        return [(path, f"{type1} with pytree metadata {show1}",
                 f"{type2} with pytree metadata {show2}",
                 "the pytree node metadata does not match")]
    differences = []
    for key, child1, child2 in zip(tree_util._child_keys(tree1), children1, children2):
        differences += structure_differences(child1, child2, leaf, path + key)
    return differences


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

