"""``vmap``: vectorize a function over a leading (or any) axis of its arguments.

``vmap(f)(xs)`` computes ``f`` on every slice ``xs[i]`` and stacks the results, but runs
``f`` only once, on batch tracers (``interpreters/batching.py``): every primitive ``f``
applies is replaced by one that works on the whole batch.

This module is what users see: ``in_axes`` and ``out_axes`` given as pytree prefixes of
the arguments and results (an int, ``None`` for "not mapped", or a container of those),
``axis_size`` for when no argument is mapped, ``axis_name`` for the collectives, and the
errors JAX gives for inconsistent sizes and malformed axis specifications.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from minijax.array import Array, is_jax_value
from minijax.core import Tracer
from minijax.errors import check_callable
from minijax.interpreters import batching
from minijax.runtime import as_jax_value, host_to_array
from minijax.tree_util import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_structure,
    tree_unflatten,
)

__all__ = ["vmap"]


def _is_none(x: Any) -> bool:
    return x is None



def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorize ``fun``: map it over axis ``in_axes`` of its arguments and stack the
    results along ``out_axes``. ``None`` marks an argument (or result) that is the same
    for every example. ``axis_name`` names the mapped axis for ``lax.psum`` and friends.
    ``spmd_axis_name`` names mesh axes to shard the batch over: with one device there is
    nothing to shard, so it changes nothing (JAX only hashes it, and so do we)."""
    check_callable(fun)
    if isinstance(in_axes, list):  # lists and tuples are interchangeable here, as in JAX
        in_axes = tuple(in_axes)
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    for name, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        if not all(type(leaf) is int for leaf in tree_leaves(axes)):
            raise TypeError(f"vmap {name} must be an int, None, or (nested) container "
                            f"with those types as leaves, but got {axes}.")

    @functools.wraps(fun)
    def vmap_f(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        leaves, in_tree = tree_flatten((args, kwargs))
        dims = flatten_axes("vmap in_axes", in_tree, (in_axes, 0), kws=True)
        leaves = [x if d is None else as_jax_value(x) for x, d in zip(leaves, dims)]
        size = _mapped_axis_size(fun, in_tree, leaves, dims, axis_size)
        hash(spmd_axis_name)  # a list is JAX's TypeError: "unhashable type: 'list'"
        dims = [None if d is None else d % x.ndim for x, d in zip(leaves, dims)]
        out_tree: list[PyTreeDef] = []

        def flat_fun(*flat_args: Any) -> list[Any]:
            fun_args, fun_kwargs = tree_unflatten(in_tree, list(flat_args))
            outs, tree = tree_flatten(fun(*fun_args, **fun_kwargs))
            out_tree.append(tree)
            return [_check_output(x) for x in outs]

        def out_dims() -> list[Any]:
            return flatten_axes("vmap out_axes", out_tree[0], out_axes)

        axis_data = batching.AxisData(axis_name, size)
        try:
            outs, _ = batching.batch_flat(flat_fun, axis_data, leaves, dims, out_dims)
        except batching.SpecMatchError as e:
            full = tree_unflatten(out_tree[0], out_dims())
            path, _ = tree_flatten_with_path(full, is_leaf=_is_none)[0][e.leaf_index]
            raise ValueError(f"at vmap out_axes{keystr(path)}, got axis spec {e.dst} "
                             f"but output was batched on axis {e.src}") from None
        return tree_unflatten(out_tree[0], outs)

    return vmap_f



def _check_output(x: Any) -> Any:
    if not is_jax_value(x):
        raise TypeError(f"Output from batched function {x!r} with type {type(x)} is not a "
                        "valid JAX type")
    return x


# ---------------------------------------------------------------------------------------
# Axis specifications as tree prefixes
# ---------------------------------------------------------------------------------------


def flatten_axes(name: str, treedef: PyTreeDef, axis_tree: Any, *, kws: bool = False
                 ) -> list[Any]:
    """One axis per leaf of ``treedef``, from ``axis_tree``, a prefix of it (whose
    ``None`` entries are leaves, meaning "not mapped", covering a whole subtree)."""
    axis_leaves, axis_def = tree_flatten(axis_tree, is_leaf=_is_none)
    dummy = tree_unflatten(treedef, [_Leaf()] * treedef.num_leaves)
    try:
        subtrees = axis_def.flatten_up_to(dummy)
    except ValueError:
        if kws:  # the keyword arguments' axes are JAX's, not the user's: leave them out
            dummy, axis_tree = dummy[0], axis_tree[0]
        errors = _prefix_errors(name, (), axis_tree, dummy)
        raise ValueError(f"{name} specification must be a tree prefix of the corresponding "
                         f"value; \n  Mismatch details ({len(errors)} found):\n  "
                         + "\n  ".join(errors)) from None
    return [axis for axis, sub in zip(axis_leaves, subtrees)
            for _ in range(tree_structure(sub).num_leaves)]


class _Leaf:
    def __repr__(self) -> str:
        return "pytree leaf"


def _simple_key(key: Any) -> Any:
    """The key itself: a dict's key, a sequence's index, an attribute's name."""
    return next(getattr(key, a) for a in ("key", "idx", "name") if hasattr(key, a))


def _one_level(tree: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """The (key, child) pairs of the root node of ``tree``, and the node's metadata."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf=lambda x: x is not tree)
    return [(path[0], child) for path, child in pairs], treedef.node_data()[1]


def _prefix_errors(name: str, path: tuple, prefix: Any, full: Any) -> list[str]:
    """Why ``prefix`` is not a tree prefix of ``full``, in JAX's words (one message per
    mismatching node; subtrees below a mismatch are not looked at)."""
    if prefix is None or tree_structure(prefix, is_leaf=_is_none).node_data() is None:
        return []  # a leaf is a prefix of anything
    where = f"pytree structure error: different {{}} at key path\n    {name}{keystr(path)}\n"
    if type(prefix) is not type(full):
        return [where.format("types") + f"At that key path, the prefix pytree {name} has a "
                f"subtree of type\n    {type(prefix)}\nbut at the same key path the full "
                f"pytree has a subtree of different type\n    {type(full)}."]
    (prefix_pairs, prefix_meta), (full_pairs, full_meta) = _one_level(prefix), _one_level(full)
    if isinstance(prefix, (list, tuple)) and len(prefix) != len(full):
        kind = type(prefix).__name__
        return [where.format(f"lengths of {kind}") + f"At that key path, the prefix pytree "
                f"{name} has a subtree of type {kind} of length {len(prefix)}, but the full "
                f"pytree has a subtree of the same type but of length {len(full)}."]
    if not isinstance(prefix, (list, tuple)) and len(prefix_pairs) != len(full_pairs):
        keys = [" ".join(str(_simple_key(k)) for k, _ in pairs)
                for pairs in (prefix_pairs, full_pairs)]
        diff = {_simple_key(k) for k, _ in prefix_pairs} ^ {_simple_key(k) for k, _ in full_pairs}
        return [where.format("numbers of pytree children") + f"At that key path, the prefix "
                f"pytree {name} has a subtree of type\n    {type(prefix)}\nwith "
                f"{len(prefix_pairs)} child keys\n    {keys[0]}\nbut at the same key path the "
                f"full pytree has a subtree of the same type but with {len(full_pairs)} child "
                f"keys\n    {keys[1]}\nso the symmetric difference on key sets is\n    "
                + " ".join(map(str, diff))]
    if prefix_meta != full_meta:
        shown = [str(tuple(m)) if isinstance(m, list) else str(m)
                 for m in (prefix_meta, full_meta)]
        diff = textwrap.indent("\n".join(difflib.ndiff(shown[0].splitlines(),
                                                      shown[1].splitlines())), "    ")
        return [where.format("pytree metadata") + f"At that key path, the prefix pytree "
                f"{name} has a subtree of type\n    {type(prefix)}\nwith metadata\n    "
                f"{shown[0]}\nbut at the same key path the full pytree has a subtree of the "
                f"same type but with metadata\n    {shown[1]}\nso the diff in the metadata "
                f"at these pytree nodes is\n{diff}"]
    return [error for (key, p), (_, f) in zip(prefix_pairs, full_pairs)
            for error in _prefix_errors(name, (*path, key), p, f)]


# ---------------------------------------------------------------------------------------
# The size of the mapped axis
# ---------------------------------------------------------------------------------------


def _mapped_axis_size(fun: Callable, tree: PyTreeDef, leaves: list[Any], dims: list[Any],
                      axis_size: int | None) -> int:
    """The one size of all mapped axes (and ``axis_size``); JAX's ValueError otherwise."""
    if not leaves and axis_size is None:
        args, kwargs = tree_unflatten(tree, leaves)
        raise ValueError("vmap wrapped function must be passed at least one argument "
                         "containing an array or axis_size must be specified, got empty "
                         f"*args={args} and **kwargs={kwargs}")
    sizes = [None if d is None else _axis_size_of(x, d) for x, d in zip(leaves, dims)]
    distinct = list(dict.fromkeys(
        [s for s in sizes if s is not None] + ([] if axis_size is None else [axis_size])))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                         "must be specified")
    raise ValueError(_inconsistent_sizes(fun, tree, leaves, dims, sizes, axis_size))


def _axis_size_of(x: Any, axis: int) -> int:
    shape = x.shape
    if not -len(shape) <= axis < len(shape):
        min_rank = axis + 1 if axis >= 0 else -axis
        raise ValueError(f"vmap was requested to map its argument along axis {axis}, which "
                         f"implies that its rank should be at least {min_rank}, but is only "
                         f"{len(shape)} (its shape is {shape})")
    return shape[axis]


def _inconsistent_sizes(fun: Callable, tree: PyTreeDef, leaves: list[Any], dims: list[Any],
                        sizes: list[int | None], axis_size: int | None) -> str:
    """JAX's list: each size, how many mapped axes had it, and an example of each."""
    args, kwargs = tree_unflatten(tree, leaves)
    try:
        parameters: list[str] | None = list(
            inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        parameters = None

    def describe(path: tuple, x: Any, keyword: bool) -> str:
        if keyword:
            where = f"kwargs{keystr(path)}"
        elif parameters is None or path[0].idx >= len(parameters):
            where = f"args{keystr(path)}"
        else:
            where = f"argument {parameters[path[0].idx]}{keystr(path[1:])}"
        return f"{where} of type {_type_name(x)}"

    examples = ([describe(p, x, False) for p, x in tree_flatten_with_path(args)[0]]
                + [describe(p, x, True) for p, x in tree_flatten_with_path(kwargs)[0]])
    counts: dict[int, int] = {}
    for s in sizes:
        if s is not None:
            counts[s] = counts.get(s, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])  # stable, as Counter's
    lines = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};\n")
    for rank, (size, count) in enumerate(ranked):
        i = sizes.index(size)
        example = f"axis {dims[i]} of {examples[i]}"
        if count == 1:
            lines.append(f"  * one axis had size {size}: {example};\n")
        else:
            many = "most" if rank == 0 else "some"
            lines.append(f"  * {many} axes ({count} of them) had size {size}, e.g. {example};\n")
    return "".join(lines)[:-2]


def _type_name(x: Any) -> str:
    try:
        return (x.aval if isinstance(x, (Array, Tracer)) else host_to_array(x).aval).str_long()
    except TypeError:
        return "unknown"
