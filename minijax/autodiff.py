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

from minijax import core, dtypes, lax
from minijax.array import is_jax_value
from minijax.core import ShapedArray
from minijax.errors import check_callable
from minijax.interpreters import ad
from minijax.interpreters.ad import Zero, instantiate, is_differentiable, tangent_aval
from minijax.interpreters.partial_eval import PartialEvalTrace, without_dead_code
from minijax.interpreters.transpose import backward_pass
from minijax.jaxpr import ClosedJaxpr
from minijax.runtime import as_jax_value, put_numpy
from minijax.tree_util import PyTreeDef, tree_flatten, tree_map, tree_structure, tree_unflatten


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
        return x.primal if isinstance(x, ad.JVPTracer) and x._trace is trace else x

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
        self.out_mask = out_mask  # which outputs are differentiable (have a jaxpr output)
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
        out_mask = [is_differentiable(core.get_aval(p)) for p in primals_out]
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


def _check_input_dtypes(name: str, args: Any, allow_int: bool, holomorphic: bool) -> None:
    for leaf in tree_flatten(args)[0]:
        if not is_jax_value(leaf):  # JAX's message (with a full stop, unlike _as_value's)
            raise TypeError(f"Argument {leaf!r} of type {type(leaf)} is not a valid JAX type.")
        dt = core.get_aval(as_jax_value(leaf)).dtype
        if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
            raise TypeError(f"{name} with holomorphic=True requires inputs with complex "
                            f"dtype, but got {dt.name}.")
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
    if holomorphic:
        if not dtypes.issubdtype(aval.dtype, np.complexfloating):
            raise TypeError("grad with holomorphic=True requires outputs with complex dtype, "
                            f"but got {aval.dtype.name}.")
    else:
        _check_real_output("grad", aval)


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
        grads = vjp_fun(lax.full_like(as_jax_value(value), 1))
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
# Jacobians and Hessians
# ---------------------------------------------------------------------------------------


def _basis(aval: ShapedArray) -> list[Any]:
    """One-hot arrays of ``aval``'s type, one per element (the directions of a Jacobian)."""
    eye = np.eye(aval.size, dtype=aval.dtype)
    return [put_numpy(row.reshape(aval.shape), aval.weak_type) for row in eye]


def _check_real_inputs(name: str, leaves: Sequence[Any], holomorphic: bool) -> None:
    for leaf in leaves:
        dt = core.get_aval(leaf).dtype
        kind = np.complexfloating if holomorphic else np.floating
        if not dtypes.issubdtype(dt, kind):
            raise TypeError(f"{name} requires real-valued inputs (input dtype that is a "
                            f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                            "differentiation, pass holomorphic=True. For differentiation of "
                            "non-holomorphic functions involving complex inputs or integer "
                            f"inputs, use jax.jvp directly.")


def _stack(columns: list[Any], lead: tuple[int, ...]) -> Any:
    """Stack per-direction results: result[..direction] with the direction axes ``lead``."""
    from minijax.numpy import reshape, stack

    stacked = stack(columns)
    return reshape(stacked, lead + stacked.shape[1:])


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian by forward mode: one JVP per input element (columns of J)."""
    check_callable(fun)
    nums = _argnums_tuple(argnums)

    def jacfun(*args: Any, **kwargs: Any) -> Any:
        _check_argnums(nums, len(args), "jacfwd")
        dyn, rebuild = _split_args(args, nums)
        dyn = dyn[0] if isinstance(argnums, int) else tuple(dyn)
        flat_in, in_tree = tree_flatten(dyn)
        flat_in = [as_jax_value(x) for x in flat_in]
        _check_real_inputs("jacfwd", flat_in, holomorphic)
        f = _dyn_function(fun, rebuild, kwargs, isinstance(argnums, int))
        columns: list[list[list[Any]]] = []  # [input leaf][direction][output leaf]
        out_tree = aux = None
        for i, x in enumerate(flat_in):
            per_direction = []
            for e in _basis(core.get_aval(x)):
                tangents = [e if j == i else instantiate(Zero.like(v))
                            for j, v in enumerate(flat_in)]
                res = jvp(f, (tree_unflatten(in_tree, flat_in),),
                          (tree_unflatten(in_tree, tangents),), has_aux=has_aux)
                out, t_out = res[0], res[1]
                aux = res[2] if has_aux else None
                flat_t, out_tree = tree_flatten(t_out)
                per_direction.append(flat_t)
            columns.append(per_direction)
        if out_tree is None:  # no input elements: call once for the output's structure
            out = f(tree_unflatten(in_tree, flat_in))
            out, aux = (out if has_aux else (out, None))
            out_tree = tree_structure(out)
        jac = _assemble_forward(columns, flat_in, in_tree, out_tree, f, has_aux)
        return (jac, aux) if has_aux else jac

    return jacfun


def _dyn_function(fun: Callable, rebuild: Callable, kwargs: dict, single: bool) -> Callable:
    if single:
        return lambda d: fun(*rebuild(d), **kwargs)
    return lambda d: fun(*rebuild(*d), **kwargs)


def _assemble_forward(columns: list, flat_in: list, in_tree: PyTreeDef, out_tree: PyTreeDef,
                      f: Callable, has_aux: bool) -> Any:
    """out leaf o, input leaf i -> array of shape out_o.shape + in_i.shape."""
    from minijax.numpy import moveaxis, zeros

    n_out = out_tree.num_leaves
    per_output = []
    for o in range(n_out):
        blocks = []
        for i, x in enumerate(flat_in):
            in_shape = core.get_aval(x).shape
            if columns[i]:
                block = _stack([col[o] for col in columns[i]], in_shape)
                block = moveaxis(block, tuple(range(len(in_shape))),
                                 tuple(range(block.ndim - len(in_shape), block.ndim)))
            else:
                block = zeros(in_shape)  # an empty input
            blocks.append(block)
        per_output.append(tree_unflatten(in_tree, blocks))
    return tree_unflatten(out_tree, per_output)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable[..., Any]:
    """The Jacobian by reverse mode: one linearization, then one VJP per output element."""
    check_callable(fun)
    nums = _argnums_tuple(argnums)

    def jacfun(*args: Any, **kwargs: Any) -> Any:
        _check_argnums(nums, len(args), "jacrev")
        dyn, rebuild = _split_args(args, nums)
        dyn = dyn[0] if isinstance(argnums, int) else tuple(dyn)
        _check_input_dtypes("jacrev", dyn, allow_int, holomorphic)
        f = _dyn_function(fun, rebuild, kwargs, isinstance(argnums, int))
        res = vjp(f, dyn, has_aux=has_aux)
        out, vjp_fun = res[0], res[1]
        flat_out, out_tree = tree_flatten(out)
        flat_out = [as_jax_value(o) for o in flat_out]
        if not holomorphic:
            for y in flat_out:
                _check_real_output("jacrev", core.get_aval(y))
        in_leaves, in_tree = tree_flatten(dyn)
        per_output = []
        for o, y in enumerate(flat_out):
            rows = []
            for e in _basis(core.get_aval(y)):
                cts = [e if k == o else instantiate(Zero.like(v)) for k, v in enumerate(flat_out)]
                (grads,) = vjp_fun(tree_unflatten(out_tree, cts))
                rows.append(tree_flatten(grads)[0])
            blocks = [_stack([r[i] for r in rows], core.get_aval(y).shape) if rows
                      else _empty_block(y, x) for i, x in enumerate(in_leaves)]
            per_output.append(tree_unflatten(in_tree, blocks))
        jac = tree_unflatten(out_tree, per_output)
        return (jac, res[2]) if has_aux else jac

    return jacfun


def _empty_block(y: Any, x: Any) -> Any:
    from minijax.numpy import zeros

    return zeros(core.get_aval(y).shape + core.get_aval(as_jax_value(x)).shape)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable[..., Any]:
    """The Hessian: forward mode over reverse mode (``jacfwd(jacrev(f))``)."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


__all__ = ["grad", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "value_and_grad", "vjp"]
