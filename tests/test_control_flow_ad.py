"""Differentiating control flow (``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``)
against JAX.

* values, dtypes and weak types of ``jvp``, ``grad``, ``vjp``, ``linearize``, Jacobians and
  Hessians through every control-flow primitive, and through nests of them;
* printed jaxprs of ``make_jaxpr(grad(f))`` and friends, character for character where
  minijax builds the same program as JAX (see ``KNOWN_JAXPR_DIFFERENCES`` for the rest);
* reverse mode of a ``while_loop``: JAX's error, word for word;
* the rules on their own: the transposed ``scan`` runs in the opposite direction, the
  partial evaluation of a ``cond`` gives all branches the same residual slots.
"""

from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from tests.oracle import check_program, namespaces, run_both, x64_mode

jax = pytest.importorskip("jax")

F32 = np.float32
X = np.array([0.5, -1.2, 2.0], F32)
XS = (np.arange(12, dtype=F32).reshape(4, 3) / 10).astype(F32)


# ---------------------------------------------------------------------------------------
# The functions differentiated (written once, for either namespace)
# ---------------------------------------------------------------------------------------


def _cond(n, x):
    return n.lax.cond(x.sum() > 0, lambda x: n.jnp.sin(x) * x, lambda x: n.jnp.cos(x) + x, x)


def _switch(n, i, x):
    return n.lax.switch(i, [lambda x: x * 2., lambda x: n.jnp.sin(x), lambda x: x * x * x], x)


def _while(n, x):
    def body(c):
        return c[0] + 1, c[1] * n.jnp.sin(c[1]) + 1.
    return n.lax.while_loop(lambda c: c[0] < 5, body, (0, x))[1]


def _fori(n, x):
    return n.lax.fori_loop(0, 4, lambda i, c: c * n.jnp.cos(c) + i, x)


def _rnn(n, w, xs):
    """A tiny recurrent net: carry and stacked outputs both depend on ``w``."""
    def body(c, x):
        c = n.jnp.tanh(c * w + x)
        return c, c * 2.
    return n.lax.scan(body, n.jnp.zeros(3), xs)


def _rnn_loss(n, w, xs):
    carry, ys = _rnn(n, w, xs)
    return carry.sum() + ys.sum()


PROGRAMS = {
    # cond and switch
    "cond_jvp": lambda n: n.jax.jvp(lambda x: _cond(n, x), (X,), (n.jnp.ones(3),)),
    "cond_grad_true": lambda n: n.jax.grad(lambda x: _cond(n, x).sum())(X),
    "cond_grad_false": lambda n: n.jax.grad(lambda x: _cond(n, x).sum())(-X),
    "cond_vjp": lambda n: n.jax.vjp(lambda x: _cond(n, x), X)[1](X),
    "cond_jacrev": lambda n: n.jax.jacrev(lambda x: _cond(n, x))(X),
    "cond_jacfwd": lambda n: n.jax.jacfwd(lambda x: _cond(n, x))(X),
    "cond_hessian": lambda n: n.jax.hessian(lambda x: _cond(n, x).sum())(X),
    "cond_linearize": lambda n: n.jax.linearize(lambda x: _cond(n, x), X)[1](X),
    "cond_closure_true": lambda n: n.jax.grad(
        lambda y: n.lax.cond(True, lambda x: x * y, lambda x: x + y, 2.))(3.),
    "cond_closure_false": lambda n: n.jax.grad(
        lambda y: n.lax.cond(False, lambda x: x * y, lambda x: x + y, 2.))(3.),
    "cond_int_operand": lambda n: n.jax.grad(
        lambda x: n.lax.cond(x > 0, lambda x, k: x * k, lambda x, k: x - k, x, 3))(2.),
    "cond_several_outputs": lambda n: n.jax.jacrev(lambda x: n.lax.cond(
        x[0] > 0, lambda x: (x[0] * x[1], x), lambda x: (x[1], x * 2.), x))(X),
    "cond_constant_branch": lambda n: n.jax.grad(
        lambda x: n.lax.cond(x > 0, lambda x: 1., lambda x: x * x, x))(2.),
    "cond_only_one_operand_differentiated": lambda n: n.jax.grad(
        lambda x, y: n.lax.cond(x > 0, lambda x, y: x * y, lambda x, y: y, x, y))(2., 5.),
    "cond_pytree_operand": lambda n: n.jax.grad(lambda p: n.lax.cond(
        p["a"] > 0, lambda p: p["a"] * p["b"], lambda p: p["b"], p))({"a": 2., "b": 3.}),
    "cond_float64_x64_off": lambda n: n.jax.grad(
        lambda x: n.lax.cond(x > 0, n.jnp.sin, n.jnp.cos, x))(np.float64(0.3)),
    **{f"switch_grad_{i}": (lambda n, i=i: n.jax.grad(lambda x: _switch(n, i, x).sum())(X))
       for i in range(-1, 4)},
    **{f"switch_jvp_{i}": (lambda n, i=i: n.jax.jvp(lambda x: _switch(n, i, x), (X,), (X,)))
       for i in range(3)},
    # while_loop: forward mode only
    "while_jvp": lambda n: n.jax.jvp(lambda x: _while(n, x), (X,), (n.jnp.ones(3),)),
    "while_jacfwd": lambda n: n.jax.jacfwd(lambda x: _while(n, x))(X),
    "while_linearize": lambda n: n.jax.linearize(lambda x: _while(n, x), X)[1](X),
    "while_closure_jvp": lambda n: n.jax.jvp(lambda y: n.lax.while_loop(
        lambda c: c < 10., lambda c: c * y, 1.), (2.,), (1.,)),
    "while_zero_iterations": lambda n: n.jax.jvp(lambda x: n.lax.while_loop(
        lambda c: c > 10., lambda c: c * 2., x), (1.,), (1.,)),
    "while_grad_error": lambda n: n.jax.grad(lambda x: _while(n, x).sum())(X),
    "while_vjp_error": lambda n: n.jax.vjp(lambda x: _while(n, x), X)[1](X),
    "fori_concrete_bounds_from_arguments": lambda n: n.jax.grad(
        lambda x, k: n.lax.fori_loop(0, k, lambda i, c: c * 2., x))(1., 3),
    "fori_traced_bounds_error": lambda n: n.jax.make_jaxpr(n.jax.grad(
        lambda x, k: n.lax.fori_loop(0, k, lambda i, c: c * 2., x)))(1., 3),
    # fori_loop with static bounds: a scan
    "fori_grad": lambda n: n.jax.grad(lambda x: _fori(n, x).sum())(X),
    "fori_jvp": lambda n: n.jax.jvp(lambda x: _fori(n, x), (X,), (X,)),
    "fori_hessian": lambda n: n.jax.hessian(lambda x: _fori(n, x).sum())(X),
    "fori_uses_counter": lambda n: n.jax.grad(lambda x: n.lax.fori_loop(
        1, 4, lambda i, c: c * i + n.jnp.sin(c), x))(0.5),
    "fori_zero_trips": lambda n: n.jax.grad(lambda x: n.lax.fori_loop(
        3, 3, lambda i, c: c * 2., x))(0.5),
    # scan
    "scan_grad": lambda n: n.jax.grad(lambda w, xs: _rnn_loss(n, w, xs), argnums=(0, 1))(X, XS),
    "scan_jvp": lambda n: n.jax.jvp(lambda w, xs: _rnn(n, w, xs), (X, XS), (X, XS)),
    "scan_vjp": lambda n: n.jax.vjp(lambda w: _rnn(n, w, XS), X)[1]((X, XS)),
    "scan_jacrev": lambda n: n.jax.jacrev(lambda w: _rnn(n, w, XS)[1])(X),
    "scan_jacfwd": lambda n: n.jax.jacfwd(lambda w: _rnn(n, w, XS)[0])(X),
    # the cotangent of a weakly typed init is weak only where JAX's is
    "scan_grad_of_weak_init": lambda n: n.jax.grad(lambda c0: n.lax.scan(
        lambda c, x: (c * x, None), c0, XS[:, 0])[0])(2.),
    "scan_grad_of_weak_init_through_ys": lambda n: n.jax.grad(lambda c0: n.lax.scan(
        lambda c, x: (c * 2., c * x), c0, XS[:, 0])[1].sum())(2.),
    "scan_reverse": lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: (c * w + x, c), 1., XS[:, 0], reverse=True)[1].sum())(0.9),
    "scan_int_carry": lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: ((c[0] + 1, c[1] * w + x * c[0]), None), (0, 1.), XS[:, 0])[0][1])(0.9),
    "scan_carry_becomes_dependent": lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: ((c[1], c[0] * w), None), (1., 2.), None, length=3)[0][0])(0.7),
    "scan_weak_carry": lambda n: n.jax.jvp(lambda x: n.lax.scan(
        lambda c, x: (c * x, c), x, n.jnp.arange(1., 4.)), (2.,), (1.,)),
    "scan_xs_only": lambda n: n.jax.grad(
        lambda xs: n.lax.scan(lambda c, x: (c + x * x, None), 0., xs)[0])(XS[:, 1]),
    "scan_unroll": lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: (c * w + x, None), 1., XS[:, 0], unroll=2)[0])(0.9),
    "scan_length_zero": lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: (c * w, None), w, None, length=0)[0])(0.9),
    "map_grad": lambda n: n.jax.grad(
        lambda w: n.lax.map(lambda x: n.jnp.sin(x * w).sum(), XS).sum())(0.3),
    "scan_float16": lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: (c * w + x, None), n.jnp.float16(1), XS[:, 0].astype(np.float16))[0])(
            np.float16(0.9)),
    # nests of control flow
    "cond_in_scan": lambda n: n.jax.grad(lambda w: n.lax.scan(lambda c, x: (n.lax.cond(
        x > 0.5, lambda c: c * w, lambda c: c + w, c), c), 1., XS[:, 0])[1].sum())(0.9),
    "scan_in_cond": lambda n: n.jax.grad(lambda w: n.lax.cond(w > 0, lambda w: n.lax.scan(
        lambda c, x: (c * w + x, c), 1., XS[:, 0])[0], lambda w: w, w))(0.9),
    "scan_in_scan": lambda n: n.jax.grad(lambda w: n.lax.scan(lambda c, row: (n.lax.scan(
        lambda d, x: (n.jnp.sin(d * w + x), None), c, row)[0], None), 0.1, XS)[0])(0.9),
    "fori_in_fori_hessian": lambda n: n.jax.hessian(lambda x: n.lax.fori_loop(
        0, 2, lambda i, c: n.lax.fori_loop(0, 2, lambda j, d: n.jnp.sin(d) * c, c), x))(0.4),
    "while_in_scan_jvp": lambda n: n.jax.jvp(lambda x: n.lax.scan(lambda c, _: (
        n.lax.while_loop(lambda d: d < 3., lambda d: d * 1.5, c), c), x, None, length=2),
        (0.5,), (1.,)),
    "while_in_scan_grad_error": lambda n: n.jax.grad(lambda x: n.lax.scan(lambda c, _: (
        n.lax.while_loop(lambda d: d < 3., lambda d: d * 1.5, c), c), x, None, length=2)[0])(0.5),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_derivatives_match_jax(name):
    check_program(PROGRAMS[name], rtol=2e-5, atol=2e-5)


def test_x64_derivatives_keep_float64():
    with x64_mode():
        check_program(lambda n: n.jax.grad(lambda w: _rnn_loss(n, w, XS.astype(np.float64)))(
            X.astype(np.float64)), rtol=1e-10, atol=1e-10)
        check_program(lambda n: n.jax.jvp(lambda x: _cond(n, x), (X.astype(np.float64),),
                                          (X.astype(np.float64),)))


@pytest.mark.parametrize("name", ["while_grad_error", "while_vjp_error",
                                  "fori_traced_bounds_error", "while_in_scan_grad_error"])
def test_reverse_mode_of_while_loop_says_what_to_do_instead(name):
    ours, theirs = run_both(PROGRAMS[name])
    assert ours[0] == theirs[0] == "error"
    assert type(ours[1]) is ValueError
    assert str(ours[1]) == str(theirs[1])
    assert "Try using lax.scan, or using fori_loop with static start/stop." in str(ours[1])


# ---------------------------------------------------------------------------------------
# Printed jaxprs
# ---------------------------------------------------------------------------------------

W3 = np.ones(3, F32)

JAXPRS = {
    "jvp_of_cond": (lambda n: lambda x, t: n.jax.jvp(lambda x: n.lax.cond(
        x > 0, lambda x: n.jnp.sin(x) * x, lambda x: n.jnp.cos(x), x), (x,), (t,)), (1., 1.)),
    "grad_of_fori_loop": (lambda n: n.jax.grad(lambda x: n.lax.fori_loop(
        0, 3, lambda i, c: c * n.jnp.sin(c), x)), (1.,)),
    "jvp_of_while": (lambda n: lambda x: n.jax.jvp(lambda x: n.lax.while_loop(
        lambda c: c < 10., lambda c: c * 2., x), (x,), (1.,)), (1.,)),
    "linearize_of_while": (lambda n: lambda x: n.jax.linearize(lambda x: n.lax.while_loop(
        lambda c: c < 10., lambda c: c * 2., x), x)[1](1.), (1.,)),
    "grad_of_scan_over_xs": (lambda n: n.jax.grad(lambda x: n.lax.scan(
        lambda c, x: (c * x, None), x, n.jnp.arange(3.))[0]), (F32(2),)),
    # Weakly typed carries (the init is a Python float): the transposed body gives the
    # carry the type of its cotangent, so no convert_element_type appears (as in JAX).
    "grad_of_scan_with_weak_carry": (lambda n: n.jax.grad(lambda x: n.lax.scan(
        lambda c, xi: (c * n.jnp.sin(xi), c + xi), 1.0, x)[0]), (W3,)),
    "grad_of_scan_with_two_weak_carries": (lambda n: n.jax.grad(lambda x: sum(n.lax.scan(
        lambda c, xi: ((c[0] * xi, c[1] + c[0]), None), (1.0, 0.0), x)[0])), (W3,)),
    "grad_of_scan_wrt_its_init": (lambda n: n.jax.grad(lambda c0: n.lax.scan(
        lambda c, xi: (c * xi, None), c0, n.jnp.arange(1.0, 4.0))[0]), (F32(2),)),
    "grad_of_grad_of_scan": (lambda n: n.jax.grad(n.jax.grad(lambda w: n.lax.scan(
        lambda c, xi: (c * n.jnp.sin(w * xi), None), 1.0, n.jnp.arange(3.0))[0])), (F32(.3),)),
    "jit_of_grad_of_scan": (lambda n: n.jax.jit(n.jax.grad(lambda w: n.lax.scan(
        lambda c, xi: (c * n.jnp.sin(w * xi), None), 1.0, n.jnp.arange(3.0))[0])), (F32(.3),)),
    "grad_of_fori_loop_wrt_a_constant": (lambda n: n.jax.grad(lambda w: n.lax.fori_loop(
        0, 3, lambda i, c: c * w + 1.0, 1.0)), (F32(.3),)),
    "grad_of_jit_of_cond": (lambda n: n.jax.grad(n.jax.jit(lambda x: n.lax.cond(
        x > 0, n.jnp.sin, n.jnp.cos, x))), (F32(.3),)),
    "vjp_of_cond_with_two_outputs": (lambda n: lambda x: n.jax.vjp(lambda y: n.lax.cond(
        y > 0, lambda u: (u * 2.0, n.jnp.exp(u)), lambda u: (u, u * u), y), x)[1]((1.0, 1.0)),
        (F32(.3),)),
    # Loop-invariant residuals (sin w, cos w) are computed once, before the loop, and
    # passed to the transposed loop as consts (JAX's hoisting).
    "grad_of_scan_hoisting_residuals": (lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: (c * n.jnp.sin(w) + x, None), 1.0, n.jnp.asarray(XS[:, 0]))[0]),
        (F32(.7),)),
    "linearize_of_scan_hoisting_residuals": (lambda n: lambda w: n.jax.linearize(
        lambda w: n.lax.scan(lambda c, x: (c * n.jnp.sin(w) + x, None), 1.0,
                             n.jnp.asarray(XS[:, 0]))[0], w)[1](w), (F32(.7),)),
    "grad_of_scan_with_consts_in_both_arguments": (lambda n: n.jax.grad(
        lambda w, x: n.lax.scan(lambda c, x: (c * n.jnp.sin(w) + x, c), x,
                                n.jnp.arange(3.) * w)[0].sum(), argnums=(0, 1)), (W3, W3)),
    # A zero tangent for the carry's init (the init is not differentiated) is made in the
    # linear part, with the other tangent computations, as JAX's linearize does.
    "grad_of_scan_with_consts": (lambda n: n.jax.grad(lambda w, x: n.lax.scan(
        lambda c, x: (c * n.jnp.sin(w) + x, c), x, n.jnp.arange(3.) * w)[0].sum()),
        (W3, W3)),
    "grad_of_rnn_with_zero_init": (lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda h, x: (n.jnp.tanh(h @ w.T + x), None), n.jnp.zeros(3),
        n.jnp.ones((4, 3)))[0].sum()), (np.outer(W3, W3),)),
    # xs built inside the function with jnp (not a NumPy array) is passed on as it is
    "grad_of_scan_passing_xs_on": (lambda n: n.jax.grad(lambda w: n.lax.scan(
        lambda c, x: (c + (w * 2.0) * x, c), 0.0, n.jnp.asarray(XS[:, 0]))[1].sum()),
        (F32(.7),)),
    # A branch pads the residual slots that only the other branch fills with `empty2`
    # placeholders (one per slot, broadcast for arrays), as JAX does.
    "grad_of_cond": (lambda n: n.jax.grad(lambda x: n.lax.cond(
        x > 0, lambda x: n.jnp.sin(x) * x, lambda x: n.jnp.cos(x), x)), (1.,)),
    "jvp_of_scan": (lambda n: lambda w, t: n.jax.jvp(lambda w: n.lax.scan(
        lambda c, x: (c * n.jnp.sin(w) + x, c), w, n.jnp.ones((2, 3)))[0], (w,), (t,)),
        (W3, W3)),
}

# Where minijax's program differs from JAX's, and why (checked to stay different: when a
# difference disappears, move the case to JAXPRS).
KNOWN_JAXPR_DIFFERENCES = {
    # Second order through cond: JAX's jvp of the first-order program keeps some zero
    # placeholders as literals and shares the branches' jaxprs with `let` bindings;
    # minijax differentiates the same program but prints each branch in place.
    "grad_of_grad_of_cond": (lambda n: n.jax.grad(n.jax.grad(lambda x: n.lax.cond(
        x > 0, lambda x: n.jnp.sin(x) * n.jnp.exp(x), lambda x: n.jnp.cos(x) * 3., x))),
        (0.7,)),
    # xs that is a NumPy array: JAX stacks a copy as a residual rather than passing it on
    # (minijax, which made it an Array like jnp.asarray does, passes it on).
    "grad_of_scan_over_numpy_xs": (lambda n: n.jax.grad(lambda c0: n.lax.scan(
        lambda c, x: (c * x, None), c0, XS[:, 0])[0]), (F32(2),)),

}


def _both_jaxprs(case):
    make, args = case
    ours, theirs = namespaces()
    return (str(minijax.make_jaxpr(make(ours))(*args)),
            str(jax.make_jaxpr(make(theirs))(*args)))


@pytest.mark.parametrize("name", JAXPRS)
def test_jaxpr_prints_like_jax(name):
    ours, theirs = _both_jaxprs(JAXPRS[name])
    assert ours == theirs


@pytest.mark.parametrize("name", KNOWN_JAXPR_DIFFERENCES)
def test_known_jaxpr_differences_are_still_differences(name):
    ours, theirs = _both_jaxprs(KNOWN_JAXPR_DIFFERENCES[name])
    assert ours != theirs
    assert ours.count(" scan[") + ours.count(" cond[") == \
        theirs.count(" scan[") + theirs.count(" cond[")  # the same control flow, though


@pytest.mark.parametrize("name", [*JAXPRS, *KNOWN_JAXPR_DIFFERENCES])
def test_evaluating_the_derivative_jaxpr_gives_the_eager_result(name):
    make, args = {**JAXPRS, **KNOWN_JAXPR_DIFFERENCES}[name]
    ours, _ = namespaces()
    fun = make(ours)
    closed = minijax.make_jaxpr(fun)(*args)
    leaves = minijax.tree_util.tree_leaves(args)
    from minijax.jaxpr import eval_closed_jaxpr

    traced = eval_closed_jaxpr(closed, *leaves)
    eager = minijax.tree_util.tree_leaves(fun(*args))
    for a, b in zip(traced, eager, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# The rules themselves
# ---------------------------------------------------------------------------------------


def _eqns(closed, name):
    return [e for e in closed.eqns if e.primitive.name == name]


def test_transposed_scan_runs_backwards_and_sums_constant_cotangents():
    """grad w.r.t. a loop constant: one forward scan, one reversed scan whose carry
    accumulates the constant's cotangent."""
    f = minijax.grad(lambda w: lax.scan(lambda c, x: (c + w * x, None), 0., XS[:, 0])[0])
    forward, backward = _eqns(minijax.make_jaxpr(f)(F32(2)), "scan")
    assert (forward.params["reverse"], backward.params["reverse"]) == (False, True)
    assert backward.params["num_carry"] == 2  # the sum for w, the carry's cotangent
    assert float(f(F32(2))) == pytest.approx(float(XS[:, 0].sum()))


def test_known_and_unknown_halves_of_a_scan():
    f = minijax.grad(lambda x: lax.scan(lambda c, _: (jnp.sin(c), None), x, None, length=5)[0])
    forward, backward = _eqns(minijax.make_jaxpr(f)(F32(0.3)), "scan")
    assert forward.params["reverse"] is False and backward.params["reverse"] is True
    # the forward scan stacks one residual (cos c) per iteration for the backward one
    assert [v.aval.shape for v in forward.outvars[1:]] == [(5,)]


def test_cond_branches_share_residual_slots():
    """Branch 0 needs one f32 residual, branch 1 three: three slots in all, not four."""
    f = minijax.grad(lambda x: lax.cond(x > 0, lambda x: jnp.sin(x) * x, jnp.cos, x))
    known, linear = _eqns(minijax.make_jaxpr(f)(1.), "cond")
    assert len(known.outvars) == 1 + 3
    assert len(linear.invars) == 1 + 3 + 1  # index, residual slots, cotangent


def test_jvp_with_zero_tangent_for_some_operands_passes_only_the_others():
    closed = minijax.make_jaxpr(lambda x, y: minijax.jvp(
        lambda x: lax.cond(x > 0, lambda x: x * y, lambda x: x, x), (x,), (1.,)))(1., 2.)
    (eqn,) = _eqns(closed, "cond")
    assert len(eqn.invars) == 1 + 2 + 1  # index, y and x, the tangent of x only


def test_forward_mode_through_while_does_not_retrace_per_iteration():
    calls = []

    def body(c):
        calls.append(1)
        return c * 2.
    minijax.jvp(lambda x: lax.while_loop(lambda c: c < 1e6, body, x), (1.,), (1.,))
    assert len(calls) == 1  # traced once, then the loop runs as a primitive


def test_linear_scan_transpose_of_the_same_scan_twice_is_the_identity():
    """The transpose of the transpose of a linear map is the map itself."""
    a = np.array([[0.5, 0.2], [0.1, 0.9]], F32)

    def linear(x):
        return lax.scan(lambda c, _: (c @ a, c), x, None, length=3)[1]

    x = np.array([1.0, -2.0], F32)
    _, f_vjp = minijax.vjp(linear, x)
    ct = np.arange(6, dtype=F32).reshape(3, 2)
    (g,) = f_vjp(ct)
    _, g_vjp = minijax.vjp(lambda c: f_vjp(c)[0], ct)
    (back,) = g_vjp(x)
    # atol: float32's precision at the inputs' scale; an output cancels to -0.01, where a
    # differently ordered (or fused) multiply-add changes the relative error tenfold.
    np.testing.assert_allclose(np.asarray(back), np.asarray(linear(x)), rtol=1e-6, atol=2e-6)
    assert np.asarray(g) == pytest.approx(
        sum(np.linalg.matrix_power(a, k) @ ct[k] for k in range(3)), rel=1e-6)
