"""``minijax.test_util``: numerical derivatives meet the error bounds its docstring states.

The bounds are those chapter 03 plots: truncation error (Taylor) plus rounding error
(machine epsilon over the step). Each test computes the bound from known derivatives of
``exp``/``sin`` and checks the helper's error stays below it, on NumPy float64, NumPy
float32 and minijax arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import test_util

EPS64 = np.finfo(np.float64).eps
EPS32 = np.finfo(np.float32).eps

# f, f', and a bound on every derivative near the test points (|f^(k)| <= bound(x, h)).
FUNCTIONS = {
    "exp": (np.exp, np.exp, lambda x, h: np.exp(x + h)),
    "sin": (np.sin, np.cos, lambda x, h: 1.0),
}
POINTS = [-1.0, 0.3, 1.7]
STEPS = [1e-1, 1e-3, 1e-5, 1e-7, 1e-9, 1e-11]


def bound(method: str, f, derivative_bound, x: float, h: float, eps: float) -> float:
    """The docstring's error bound. The rounding term covers f's values and the rounding
    of x + h (eps |x f'|), with a factor 2 for the half-ulp errors of the evaluations;
    the final subtraction and division add a relative error of a few eps of the result."""
    m = derivative_bound(x, abs(h))
    fx = abs(f(x)) + abs(x) * m
    last_operations = 2 * eps * m
    if method in ("forward", "backward"):
        return h / 2 * m + 2 * (2 * eps * fx / h) + last_operations
    return h**2 / 6 * m + 2 * (eps * fx / h) + last_operations


HELPERS = {
    "forward": test_util.forward_difference,
    "backward": test_util.backward_difference,
    "central": test_util.central_difference,
}


@pytest.mark.parametrize("method", HELPERS)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_differences_meet_their_error_bound_in_float64(method, name):
    f, df, m = FUNCTIONS[name]
    for x in POINTS:
        for h in STEPS:
            error = abs(HELPERS[method](f, x, h) - df(x))
            assert error <= bound(method, f, m, x, h, EPS64), (x, h, error)


@pytest.mark.parametrize("method", HELPERS)
def test_differences_meet_their_error_bound_in_float32(method):
    f, df, m = FUNCTIONS["exp"]
    for x in POINTS:
        for h in [1e-1, 1e-2, 1e-3, 1e-4]:
            got = HELPERS[method](f, np.float32(x), np.float32(h))
            assert got.dtype == np.float32
            # the effective step is fl(x + h) - x, not h: allow for that in the rounding part
            error = abs(float(got) - df(x))
            assert error <= 2 * bound(method, f, m, x, h, EPS32), (x, h, error)


def _slope(errors, steps):
    return np.polyfit(np.log(steps), np.log(errors), 1)[0]


@pytest.mark.parametrize("method, order", [("forward", 1), ("backward", 1), ("central", 2)])
def test_truncation_error_has_the_stated_order(method, order):
    steps = np.logspace(-1, -3, 9)  # large enough that rounding error is negligible
    errors = [abs(HELPERS[method](np.exp, 0.5, h) - np.exp(0.5)) for h in steps]
    assert abs(_slope(errors, steps) - order) < 0.05


def test_rounding_error_grows_like_one_over_h():
    steps = np.logspace(-11, -13, 9)
    errors = [abs(test_util.forward_difference(np.exp, 0.5, h) - np.exp(0.5)) for h in steps]
    assert -1.6 < _slope(errors, steps) < -0.5  # noisy, but clearly growing as h shrinks


def test_complex_step_is_exact_to_machine_precision_at_a_tiny_step():
    for x in POINTS:
        for f, df in [(np.exp, np.exp), (np.sin, np.cos), (lambda z: z**3 / (1 + z**2),
                                                           lambda z: (z**4 + 3 * z**2)
                                                           / (1 + z**2) ** 2)]:
            got = test_util.complex_step(f, x)
            assert abs(got - df(x)) <= 2 * EPS64 * abs(df(x)), (x, got, df(x))
    assert test_util.complex_step(np.exp, 0.5, 1e-20) == pytest.approx(np.exp(0.5), rel=1e-15)


def test_complex_step_truncation_error_is_second_order():
    steps = np.logspace(-1, -3, 9)
    errors = [abs(test_util.complex_step(np.exp, 0.5, h) - np.exp(0.5)) for h in steps]
    assert abs(_slope(errors, steps) - 2) < 0.05
    for h, error in zip(steps, errors, strict=True):
        assert error <= h**2 / 6 * np.exp(0.5) * 1.01


def test_default_steps_balance_the_two_errors():
    assert test_util.default_step("forward") == pytest.approx(EPS64**0.5)
    assert test_util.default_step("central", np.float32(1)) == pytest.approx(EPS32 ** (1 / 3))
    assert test_util.default_step("backward", 3) == pytest.approx(EPS64**0.5)  # ints: float64
    assert test_util.default_step("complex_step") == 1e-20
    # at the default step the total error is about sqrt(eps) resp. eps^(2/3)
    x = 0.5
    assert abs(test_util.forward_difference(np.exp, x) - np.exp(x)) < 3 * EPS64**0.5
    assert abs(test_util.central_difference(np.exp, x) - np.exp(x)) < 3 * EPS64 ** (2 / 3)
    with pytest.raises(ValueError, match="unknown method 'upwind'"):
        test_util.default_step("upwind")


def test_helpers_broadcast_over_arrays_of_steps_and_points():
    steps = np.logspace(-1, -4, 4)
    got = test_util.central_difference(np.sin, 0.3, steps)
    assert got.shape == (4,)
    np.testing.assert_allclose(got, np.cos(0.3), rtol=2e-3)
    points = np.linspace(0, 1, 5)
    np.testing.assert_allclose(test_util.complex_step(np.sin, points), np.cos(points), rtol=1e-15)


def test_helpers_work_on_minijax_arrays():
    x = jnp.asarray(np.float32(0.7))
    for name, helper in [*HELPERS.items(), ("complex_step", test_util.complex_step)]:
        got = helper(jnp.sin, x)
        assert isinstance(got, minijax.Array), name
        assert got.dtype == np.float32, name
        tolerance = 1e-6 if name == "complex_step" else 2e-3
        assert abs(float(got) - np.cos(0.7)) < tolerance, (name, float(got))


@settings(max_examples=50, deadline=None)
@given(x=st.floats(-3, 3), log_h=st.floats(-9, -1))
def test_central_difference_bound_holds_everywhere(x, log_h):
    h = 10.0**log_h
    error = abs(test_util.central_difference(np.sin, x, h) - np.cos(x))
    assert error <= bound("central", np.sin, lambda x, h: 1.0, x, h, EPS64)


def test_numerical_jvp_on_pytrees():
    def f(p, xs):
        return {"sum": p["w"] * xs[0] + np.sin(xs[1]), "prod": (p["w"] * xs[1],)}

    primals = ({"w": np.array([1.0, 2.0])}, (np.array([0.5, -1.0]), np.array([0.3, 0.1])))
    tangents = ({"w": np.array([1.0, 0.0])}, (np.array([0.0, 1.0]), np.array([2.0, 1.0])))
    got = test_util.numerical_jvp(f, primals, tangents)
    w, (a, b) = primals[0]["w"], primals[1]
    tw, (ta, tb) = tangents[0]["w"], tangents[1]
    np.testing.assert_allclose(got["sum"], tw * a + w * ta + np.cos(b) * tb, rtol=1e-8)
    np.testing.assert_allclose(got["prod"][0], tw * b + w * tb, rtol=1e-8)


def test_numerical_jvp_in_float32_with_minijax_is_good_to_the_documented_tolerance():
    x = jnp.asarray(np.float32([0.2, 1.0, 3.0]))
    t = jnp.asarray(np.float32([1.0, -2.0, 0.5]))
    got = test_util.numerical_jvp(lambda v: jnp.exp(v) * jnp.sin(v), (x,), (t,))
    assert isinstance(got, minijax.Array) and got.dtype == np.float32
    xs, ts = np.asarray(x, np.float64), np.asarray(t, np.float64)
    want = (np.exp(xs) * (np.sin(xs) + np.cos(xs))) * ts
    np.testing.assert_allclose(np.asarray(got), want, atol=2e-3 * np.abs(want).max())


class Counted:
    """Wrap ``f`` and count its calls."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, x):
        self.calls += 1
        return self.f(x)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


@pytest.mark.parametrize("method, calls, rtol", [
    ("forward", lambda n: n + 1, 1e-5), ("backward", lambda n: n + 1, 1e-5),
    ("central", lambda n: 2 * n, 1e-8), ("complex_step", lambda n: n, 1e-14),
])
def test_numerical_grad_cost_and_accuracy(method, calls, rtol):
    x = np.linspace(-1.0, 1.5, 7)
    f = Counted(rosenbrock)
    got = test_util.numerical_grad(f, x, method=method)
    assert f.calls == calls(x.size)
    np.testing.assert_allclose(got, rosenbrock_grad(x), rtol=rtol, atol=rtol * 100)


def test_numerical_grad_of_a_matrix_argument_on_minijax_arrays():
    x = jnp.asarray(np.float32([[0.5, 1.0], [-1.0, 2.0]]))
    got = test_util.numerical_grad(lambda m: jnp.sum(jnp.sin(m) * m), x)
    assert got.shape == (2, 2) and got.dtype == np.float32
    xs = np.asarray(x, np.float64)
    np.testing.assert_allclose(got, np.cos(xs) * xs + np.sin(xs), atol=5e-3)


def test_numerical_grad_rejects_an_unknown_method():
    with pytest.raises(ValueError, match="unknown method 'sideways'"):
        test_util.numerical_grad(np.sum, np.ones(2), h=0.1, method="sideways")
