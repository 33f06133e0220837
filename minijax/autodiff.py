"""The differentiation API: ``jvp``, ``linearize``, ``vjp``, ``grad``, Jacobians and Hessians.

Everything here is built from two engine pieces:

* **forward mode** (``interpreters/ad.py``): run the function on JVP tracers;
* **reverse mode** = forward mode + partial evaluation + transposition: ``linearize``
  records the tangent computation as a linear jaxpr while computing the primal output,
  and ``vjp`` runs that jaxpr backwards (``interpreters/transpose.py``).

This module adds what users see: pytrees in and out, ``argnums`` and ``has_aux``, the
checks and error messages JAX gives for non-scalar outputs or integer inputs, and
symbolic zeros turned into real zero arrays at the boundary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, vectorize
from minijax.array import is_jax_value
from minijax.core import ShapedArray
from minijax.errors import check_callable
from minijax.interpreters import ad
from minijax.interpreters.ad import Zero, instantiate, is_differentiable, tangent_aval
from minijax.interpreters.partial_eval import PartialEvalTrace, without_dead_code
from minijax.interpreters.transpose import backward_pass
from minijax.jaxpr import ClosedJaxpr
from minijax.lax import base, elementwise, shapes, slicing
from minijax.runtime import as_jax_value
from minijax.tree_util import (
    PyTreeDef,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_transpose,
    tree_unflatten,
)


class _FlatFunction:
    """``fun`` seen as flat list of inputs -> flat list of outputs; remembers the output
    tree (and the auxiliary output, if ``has_aux``) of its last call."""

    def __init__(self, fun: Callable, in_tree: PyTreeDef, has_aux: bool = False) -> None:
        self.fun, self.in_tree, self.has_aux = fun, in_tree, has_aux
        self.out_tree: PyTreeDef | None = None
        self.aux: Any = None

    def __call__(self, *flat_args: Any) -> list[Any]:
        out = self.fun(*tree_unflatten(self.in_tree, list(flat_args)))
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("expected function with aux output to return a two-element "
                                f"tuple, but got type {type(out)} with value {out!r}")
            out, aux = out
            self.aux = tree_map(_primal_of_current_trace(), aux)
        flat, self.out_tree = tree_flatten(out)
        return [as_jax_value(x) for x in flat]


def _primal_of_current_trace() -> Callable[[Any], Any]:
    """Auxiliary outputs are not differentiated: values being differentiated by the current
    JVP trace are replaced by their primals (values of outer traces are kept)."""
    trace = core.current_trace()

    def strip(x: Any) -> Any:
        return x.primal if isinstance(x, core.Tracer) and x._trace is trace else x

    return strip


def _zeros_for(aval: ShapedArray) -> Any:
    return instantiate(Zero(tangent_aval(aval)))


# ---------------------------------------------------------------------------------------
# Forward mode
# ---------------------------------------------------------------------------------------


def _check_jvp_args(primals: Sequence[Any], tangents: Sequence[Any]) -> None:
    for p, t in zip(primals, tangents):
        p_aval, t_aval = core.get_aval(as_jax_value(p)), _tangent_type(t)
        expected = tangent_aval(p_aval)
        if t_aval.dtype != expected.dtype:
            raise TypeError(
                "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, "
                "or in case of int/bool primal dtype the tangent dtype must be float0."
                f"Got primal dtype {p_aval.dtype.name} and so expected tangent dtype "
                f"{_dtype_name(expected.dtype)}, but got tangent dtype "
                f"{_dtype_name(t_aval.dtype)} instead."
            )
        if t_aval.shape != p_aval.shape:
            raise ValueError(
                "jvp called with different primal and tangent shapes;"
                f"Got primal shape {p_aval.shape} and tangent shape as {t_aval.shape}"
            )


def _tangent_type(t: Any) -> ShapedArray:
    if isinstance(t, np.ndarray) and t.dtype == dtypes.float0:
        return ShapedArray(t.shape, dtypes.float0)
    return core.get_aval(as_jax_value(t))


def _dtype_name(dt: np.dtype) -> str:
    return str(dt) if dt == dtypes.float0 else dt.name


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """Evaluate ``fun`` at ``primals`` and its directional derivative along ``tangents``.

    Returns ``(fun(*primals), J @ tangents)`` (plus the auxiliary output if ``has_aux``).
    Both are computed in one forward pass.
    """
    check_callable(fun)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    flat_p, in_tree = tree_flatten(tuple(primals))
    flat_t, t_tree = tree_flatten(tuple(tangents))
    if in_tree != t_tree:
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {in_tree} whereas tangents "
                        f"have tree structure {t_tree}.")
    _check_jvp_args(flat_p, flat_t)
    tangent_in = [t if is_differentiable(core.get_aval(as_jax_value(p))) else Zero.like(
        as_jax_value(p)) for p, t in zip(flat_p, flat_t)]
    tangent_in = [t if type(t) is Zero else as_jax_value(t) for t in tangent_in]
    flat_fun = _FlatFunction(fun, in_tree, has_aux)
    out_p, out_t = ad.jvp_flat(flat_fun, flat_p, tangent_in)
    out_t = [instantiate(t) for t in out_t]
    result = (tree_unflatten(flat_fun.out_tree, out_p), tree_unflatten(flat_fun.out_tree, out_t))
    return (*result, flat_fun.aux) if has_aux else result


# ---------------------------------------------------------------------------------------
# Linearization and reverse mode
# ---------------------------------------------------------------------------------------


class Linearization:
    """The result of linearizing a flat function at a point: primal outputs and a linear
    jaxpr from the differentiable inputs' tangents to the differentiable outputs' tangents."""

    def __init__(self, primals_out: list[Any], jaxpr: ClosedJaxpr, in_mask: list[bool],
                 out_mask: list[bool], in_avals: list[ShapedArray]) -> None:
        self.primals_out = primals_out
        self.jaxpr = jaxpr
        self.in_mask = in_mask  # which inputs are differentiable (have a jaxpr input)
        self.out_mask = out_mask  # which outputs have a jaxpr output (not a symbolic zero)
        self.in_avals = in_avals

    def transpose(self, cotangents_out: Sequence[Any]) -> list[Any]:
        """Cotangents of all inputs (zero arrays where there is no dependence)."""
        cts = [ct for ct, keep in zip(cotangents_out, self.out_mask) if keep]
        n = len(self.jaxpr.jaxpr.invars)
        cts_in = iter(backward_pass(self.jaxpr.jaxpr, self.jaxpr.consts, [True] * n,
                                    [None] * n, cts))
        return [instantiate(next(cts_in)) if diff else _zeros_for(aval)
                for diff, aval in zip(self.in_mask, self.in_avals)]


def linearize_flat(fun: Callable[..., list[Any]], primals: Sequence[Any]) -> Linearization:
    """Forward mode with unknown tangents under partial evaluation: primal values are
    computed now, tangent computations are recorded as a linear jaxpr."""
    parent = core.current_trace()
    primals = [as_jax_value(p) for p in primals]
    avals = [core.get_aval(p) for p in primals]
    in_mask = [is_differentiable(a) for a in avals]
    pe = PartialEvalTrace(parent)
    try:
        tangents = [pe.new_arg(a) if diff else Zero(tangent_aval(a))
                    for a, diff in zip(avals, in_mask)]
        primals_out, tangents_out = ad.jvp_flat(fun, primals, tangents, rule_trace=pe)
        _check_known(pe, primals_out)
        out_mask = [is_differentiable(core.get_aval(p)) and type(t) is not Zero
                    for p, t in zip(primals_out, tangents_out)]
        with core.set_current_trace(parent):
            tangents_out = [instantiate(t) for t, d in zip(tangents_out, out_mask) if d]
        jaxpr = without_dead_code(pe.to_jaxpr(tangents_out))
    finally:
        pe.invalidate()
    return Linearization(primals_out, jaxpr, in_mask, out_mask, avals)


def _check_known(pe: PartialEvalTrace, primals_out: Sequence[Any]) -> None:
    if any(pe.is_unknown(p) for p in primals_out):
        raise NotImplementedError(
            "linearize: a primal output depends on a tangent; this happens when a "
            "primitive without a partial-evaluation rule mixes primal and tangent inputs."
        )


def linearize(fun: Callable, *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the JVP at ``primals``,
    evaluated from a recorded linear jaxpr (no re-running of ``fun``)."""
    check_callable(fun)
    flat_p, in_tree = tree_flatten(primals)
    flat_fun = _FlatFunction(fun, in_tree)
    lin = linearize_flat(flat_fun, flat_p)
    out_tree = flat_fun.out_tree

    def f_jvp(*tangents: Any) -> Any:
        flat_t, t_tree = tree_flatten(tangents)
        if t_tree != in_tree:
            raise TypeError(f"linearized function called on tangent values inconsistent with "
                            f"the original primal values: {t_tree} vs {in_tree}")
        for t, aval in zip(flat_t, lin.in_avals):
            expected = tangent_aval(aval)
            got = _tangent_type(t)
            if (got.shape, got.dtype) != (expected.shape, expected.dtype):
                raise ValueError(
                    "linearized function called on tangent values inconsistent with the "
                    f"original primal values:\nGot tangent aval {got.str_long()} for primal "
                    f"aval {aval.strip_weak_type().str_long()} but expected "
                    f"{expected.strip_weak_type().str_long()}.")
        ts = [as_jax_value(t) for t, d in zip(flat_t, lin.in_mask) if d]
        outs = iter(_eval_linear(lin.jaxpr, ts))
        return tree_unflatten(out_tree, [next(outs) if d else _zeros_for(core.get_aval(p))
                                         for p, d in zip(lin.primals_out, lin.out_mask)])

    return tree_unflatten(out_tree, lin.primals_out), f_jvp


def _eval_linear(jaxpr: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    from minijax.jaxpr import eval_jaxpr

    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _check_cotangent(ct: Any, primal: Any) -> Any:
    if not is_differentiable(core.get_aval(primal)):
        return ct  # not transposed: JAX accepts anything (float0 zeros, ints, floats)
    ct = as_jax_value(ct)
    expected = tangent_aval(core.get_aval(primal))
    if ct.shape != expected.shape or ct.dtype != expected.dtype:
        raise ValueError(
            "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
            f"{ct.aval.str_long()}, but expected {expected.strip_weak_type().str_long()} "
            "because the corresponding output of the differentiated function had JAX type "
            f"{core.get_aval(primal).strip_weak_type().str_long()}"
        )
    return ct


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), vjp_fun)``: ``vjp_fun(ct)`` returns the tuple of cotangents
    ``ctᵀ J`` of the inputs, for a cotangent ``ct`` shaped like the output."""
    check_callable(fun)
    flat_p, in_tree = tree_flatten(primals)
    flat_fun = _FlatFunction(fun, in_tree, has_aux)
    lin = linearize_flat(flat_fun, flat_p)
    out_tree = flat_fun.out_tree

    def vjp_fun(cotangent: Any) -> tuple[Any, ...]:
        flat_ct, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise ValueError(
                "unexpected tree structure of argument to vjp function: got "
                f"{ct_tree}, but expected to match {out_tree}")
        cts = [_check_cotangent(ct, p) for ct, p in zip(flat_ct, lin.primals_out)]
        return tuple(tree_unflatten(in_tree, lin.transpose(cts)))

    primals_out = tree_unflatten(out_tree, lin.primals_out)
    return (primals_out, vjp_fun, flat_fun.aux) if has_aux else (primals_out, vjp_fun)


# ---------------------------------------------------------------------------------------
# grad and friends
# ---------------------------------------------------------------------------------------


def _argnums_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _check_argnums(argnums: tuple[int, ...], nargs: int, name: str) -> None:
    """Each argnum must name a positional argument. As in JAX, grad says that too few
    arguments were passed (TypeError); a too-negative argnum, and jacfwd/jacrev, that the
    index is out of range (ValueError)."""
    for i in argnums:
        if -nargs <= i < nargs:
            continue
        if name == "value_and_grad" and i >= 0:
            raise TypeError(f"differentiating with respect to argnums={i} requires at least "
                            f"{i + 1} positional arguments to be passed by the caller, but "
                            f"got only {nargs} positional arguments.")
        raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have "
                         "value greater than or equal to -len(args) and less than len(args), "
                         f"but got value {i} for len(args) == {nargs}.")


def _check_jax_type(leaf: Any) -> None:
    if not is_jax_value(leaf):  # JAX's message (with a full stop, unlike _as_value's)
        raise TypeError(f"Argument {leaf!r} of type {type(leaf)} is not a valid JAX type.")


def _check_input_dtypes(name: str, args: Any, allow_int: bool, holomorphic: bool) -> None:
    for leaf in tree_flatten(args)[0]:
        _check_jax_type(leaf)
        dt = core.get_aval(as_jax_value(leaf)).dtype
        if holomorphic:
            _check_complex(name, "inputs", dt)
        if not allow_int and not dtypes.issubdtype(dt, np.inexact):
            raise TypeError(
                f"{name} requires real- or complex-valued inputs (input dtype that is a "
                f"sub-dtype of np.inexact), but got {dt.name}. If you want to use Boolean- "
                "or integer-valued inputs, use vjp or set allow_int to True.")


def _check_scalar_output(out: Any, holomorphic: bool) -> None:
    structure = tree_structure(out)
    if structure.num_nodes != 1 or structure.num_leaves != 1:  # a tuple, a dict, None...
        raise TypeError(f"Gradient only defined for scalar-output functions. Output was {out}.")
    aval = core.get_aval(as_jax_value(out))
    if aval.shape:
        raise TypeError("Gradient only defined for scalar-output functions. Output had "
                        f"shape: {aval.shape}.")
    _check_output_dtype("grad", aval, holomorphic)


def _check_output_dtype(name: str, aval: ShapedArray, holomorphic: bool) -> None:
    if holomorphic:
        _check_complex(name, "outputs", aval.dtype)
    else:
        _check_real_output(name, aval)


def _check_complex(name: str, what: str, dt: np.dtype) -> None:
    if not dtypes.issubdtype(dt, np.complexfloating):
        raise TypeError(f"{name} with holomorphic=True requires {what} with complex dtype, "
                        f"but got {dt.name}.")


def _check_real_output(name: str, aval: ShapedArray) -> None:
    """Reverse mode starts from a real cotangent: integer or complex outputs need vjp."""
    if not dtypes.issubdtype(aval.dtype, np.floating):
        hint = ("For holomorphic differentiation, pass holomorphic=True. For differentiation "
                "of non-holomorphic functions involving complex outputs, use jax.vjp "
                "directly." if dtypes.issubdtype(aval.dtype, np.complexfloating) else
                "For differentiation of functions with integer outputs, use jax.vjp directly.")
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {aval.dtype.name}. {hint}")


def _split_args(args: tuple, argnums: tuple[int, ...]) -> tuple[list[Any], Callable]:
    """The differentiated arguments, and a function of them with the others fixed."""
    positions = [i % len(args) for i in argnums]

    def rebuild(*dyn: Any) -> list[Any]:
        full = list(args)
        for i, value in zip(positions, dyn):
            full[i] = value
        return full

    return [args[i] for i in positions], rebuild


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """A function returning ``(fun(*args), gradient)``: one forward and one backward pass."""
    check_callable(fun)
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        _check_argnums(nums, len(args), "value_and_grad")
        dyn, rebuild = _split_args(args, nums)
        _check_input_dtypes("grad", dyn, allow_int, holomorphic)
        f = lambda *d: fun(*rebuild(*d), **kwargs)  # noqa: E731
        out = vjp(f, *dyn, has_aux=has_aux)
        value, vjp_fun = out[0], out[1]
        _check_scalar_output(value, holomorphic)
        grads = vjp_fun(base.full_like(as_jax_value(value), 1))
        grads = grads[0] if isinstance(argnums, int) else grads
        return ((value, out[2]), grads) if has_aux else (value, grads)

    return value_and_grad_fun


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """The gradient of a scalar function, as a function of the same arguments."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_fun


# ---------------------------------------------------------------------------------------
# Jacobians and Hessians: vmap over the standard basis
# ---------------------------------------------------------------------------------------


def _eye(n: int, dtype: np.dtype) -> Any:
    """The ``n`` by ``n`` identity, built as ``jnp.eye`` builds it (``row + 0 == column``)."""
    rows = shapes.broadcasted_iota(np.int32, (n, n), 0)
    columns = shapes.broadcasted_iota(np.int32, (n, n), 1)
    return base.convert_element_type(base.eq(base.add(rows, np.int32(0)), columns), dtype)


def _aval(x: Any) -> ShapedArray:
    return core.get_aval(as_jax_value(x))


def _cast_like(x: Any, example: Any, always: bool) -> Any:
    """``x`` with the dtype and weak type of ``example`` (its real part, if ``x`` is complex
    and ``example`` is not). JAX records the cast of a basis vector even when it changes
    nothing, and skips it elsewhere."""
    aval = _aval(example)
    if dtypes.issubdtype(x.dtype, np.complexfloating) and not dtypes.issubdtype(
            aval.dtype, np.complexfloating):
        x = elementwise.real(x)
    if not always and (x.dtype, x.aval.weak_type) == (aval.dtype, aval.weak_type):
        return x
    return base.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _unravel(tree: Any, axis: int, arr: Any, example: Any = None) -> Any:
    """Cut axis ``axis`` of ``arr`` into one piece per leaf of ``tree``, with the leaf's
    shape in place of that axis, cast like ``example`` (or like the leaf itself)."""
    leaves, treedef = tree_flatten(tree)
    axis %= arr.ndim
    # An eager float0 cotangent is NumPy's, which lax neither splits nor casts: the zeros
    # of the integers are made at once (traced, the split and the cast are in the jaxpr).
    if isinstance(arr, np.ndarray) and arr.dtype == dtypes.float0:
        return tree_unflatten(treedef, [ad.zeros_like_aval(_aval(example).update(
            shape=arr.shape[:axis] + _aval(leaf).shape + arr.shape[axis + 1:]))
            for leaf in leaves])
    parts = slicing.split(arr, [np.int64(_aval(leaf).size) for leaf in leaves], axis)
    pieces = []
    for part, leaf in zip(parts, leaves):
        shape = arr.shape[:axis] + _aval(leaf).shape + arr.shape[axis + 1:]
        part = part if part.shape == shape else base.reshape(part, shape)
        pieces.append(_cast_like(part, leaf if example is None else example, example is None))
    return tree_unflatten(treedef, pieces)


def _std_basis(tree: Any) -> Any:
    """The rows of an identity matrix as pytrees like ``tree``, stacked along a new leading
    axis: what ``vmap`` maps a JVP (or a VJP) over to get every column (or row) at once."""
    leaves = tree_leaves(tree)
    n = sum(_aval(leaf).size for leaf in leaves)
    return _unravel(tree, 1, _eye(n, dtypes.result_type(*leaves)))


def _jacobian_args(fun: Callable, argnums: int | Sequence[int], name: str, args: tuple,
                   kwargs: dict) -> tuple[Callable, tuple[Any, ...], Any]:
    """The function of the differentiated arguments alone, those arguments (a tuple),
    and the pytree the Jacobian's inner structure follows (one argument, or the tuple)."""
    nums = _argnums_tuple(argnums)
    _check_argnums(nums, len(args), name)
    dyn, rebuild = _split_args(args, nums)
    example = dyn[0] if isinstance(argnums, int) else tuple(dyn)
    return (lambda *d: fun(*rebuild(*d), **kwargs)), tuple(dyn), example


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian by forward mode: a JVP along every input direction at once, ``vmap``
    mapping it over the standard basis (the columns of J)."""
    check_callable(fun)

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        f, dyn, example = _jacobian_args(fun, argnums, "jacfwd", args, kwargs)
        _check_real_inputs("jacfwd", tree_leaves(dyn), holomorphic)
        pushfwd = lambda basis: jvp(f, dyn, basis, has_aux=has_aux)  # noqa: E731
        out_axes = (None, -1, None) if has_aux else (None, -1)
        y, jac, *aux = vectorize.vmap(pushfwd, out_axes=out_axes)(_std_basis(dyn))
        if holomorphic:
            for leaf in tree_leaves(y):
                _check_complex("jacfwd", "outputs", _aval(leaf).dtype)
        jac = tree_map(lambda out, a: _unravel(example, -1, a, out), y, jac)
        return (jac, *aux) if has_aux else jac

    return jacfun


def _check_real_inputs(name: str, leaves: Sequence[Any], holomorphic: bool) -> None:
    for leaf in leaves:
        _check_jax_type(leaf)
        dt = _aval(leaf).dtype
        if holomorphic:
            _check_complex(name, "inputs", dt)
        elif not dtypes.issubdtype(dt, np.floating):
            raise TypeError(f"{name} requires real-valued inputs (input dtype that is a "
                            f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                            "differentiation, pass holomorphic=True. For differentiation of "
                            "non-holomorphic functions involving complex inputs or integer "
                            f"inputs, use jax.jvp directly.")


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable[..., Any]:
    """The Jacobian by reverse mode: one linearization, then a VJP along every output
    direction at once, ``vmap`` mapping it over the standard basis (the rows of J)."""
    check_callable(fun)

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        f, dyn, example = _jacobian_args(fun, argnums, "jacrev", args, kwargs)
        _check_input_dtypes("jacrev", dyn, allow_int, holomorphic)
        y, pullback, *aux = vjp(f, *dyn, has_aux=has_aux)
        for leaf in tree_leaves(y):
            _check_output_dtype("jacrev", _aval(leaf), holomorphic)
        jac = vectorize.vmap(pullback)(_std_basis(y))
        jac = jac[0] if isinstance(argnums, int) else jac
        jac = tree_map(lambda x, a: _unravel(y, 0, a, x), example, jac)
        jac = tree_transpose(tree_structure(example), tree_structure(y), jac)
        return (jac, *aux) if has_aux else jac

    return jacfun


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable[..., Any]:
    """The Hessian: forward mode over reverse mode (``jacfwd(jacrev(f))``)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


__all__ = ["grad", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "value_and_grad", "vjp"]
