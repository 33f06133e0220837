"""The optimised generated code computes what eager minijax computes, on random programs.

Hypothesis builds small programs from the primitives the passes and code-generation rules
rewrite (selects between constants, ``x * 1`` and friends, transposed products, reductions
over size-1 axes, reshape chains, commutative operands, loops with counters, dynamic
slices and scan buffers), runs each eagerly (every primitive's own NumPy kernel) and under
``jit`` (lowered, optimised by the full pipeline, generated code), and compares the results
bit for bit: same bits, signed zeros included (any NaN equals any NaN: XLA does not promise
a payload). Only programs with a matrix product, which BLAS may sum in another order once
a transpose is folded into it, are compared with a tolerance. The examples are derandomised.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler import eager_loops, jit_primitive, lowering, numpy_backend
from minijax.compiler.stablehlo import walk_ops
from tests.oracle import tolerances

SHAPE = (4, 4)
# Elements that catch inexact rewrites: signed zeros, one, infinities, a NaN, rounding.
ELEMENTS = [-0.0, 0.0, 1.0, -1.5, 2.0, 0.1, 0.3, 3e38, -np.inf, np.inf, np.nan, 7.25]
CONSTANTS = [-0.0, 0.0, 1.0, 2.0, -1.0, 0.1, 0.3, np.inf, -np.inf]

# name -> (number of operands, the op on arrays of SHAPE, whether it is a matrix product)
Unary = Callable[..., Any]
OPS: dict[str, tuple[int, Unary, bool]] = {
    "add": (2, lambda a, b: a + b, False),
    "add swapped": (2, lambda a, b: b + a, False),
    "multiply": (2, lambda a, b: a * b, False),
    "subtract": (2, lambda a, b: a - b, False),
    "maximum": (2, jnp.maximum, False),
    "minimum": (2, jnp.minimum, False),
    "times one": (1, lambda a: a * 1.0, False),
    "plus zero": (1, lambda a: a + 0.0, False),
    "plus minus zero": (1, lambda a: a + (-0.0), False),
    "minus zero": (1, lambda a: a - 0.0, False),
    "divided by one": (1, lambda a: a / 1.0, False),
    "double negation": (1, lambda a: jnp.negative(-a), False),
    "relu": (1, lambda a: jnp.maximum(a, 0.0), False),
    "max with a constant": (1, lambda a: jnp.maximum(a, 2.0), False),
    "min with a constant": (1, lambda a: jnp.minimum(-1.0, a), False),
    "max with -0.0": (1, lambda a: jnp.maximum(a, -0.0), False),
    "min with 0.0": (1, lambda a: jnp.minimum(a, 0.0), False),
    "max ties": (2, lambda a, b: (jnp.maximum(a, b) == a).astype(jnp.float32), False),
    "min ties": (2, lambda a, b: (b == jnp.minimum(a, b)).astype(jnp.float32), False),
    "times a mask": (2, lambda a, b: b * (a >= b).astype(jnp.float32), False),
    "mask over": (2, lambda a, b: (a < 1.0).astype(jnp.float32) / b, False),
    "tanh": (1, jnp.tanh, False),
    "exp": (1, jnp.exp, False),
    "sum over a size-1 axis": (1, lambda a: jnp.sum(a.reshape(4, 4, 1), axis=2), False),
    "max over a size-1 axis": (1, lambda a: jnp.max(a.reshape(1, 4, 4), axis=0), False),
    "reshape chain": (1, lambda a: a.reshape(16).reshape(2, 8).reshape(4, 4), False),
    "keepdims sum": (1, lambda a: a - jnp.sum(a, axis=1, keepdims=True), False),
    "same-type convert": (1, lambda a: a.astype(jnp.float32), False),
    "int round trip": (1, lambda a: jnp.clip(a, -9.0, 9.0).astype(jnp.int32)
                       .astype(jnp.float32), False),
    "where, not constants": (2, lambda a, b: jnp.where(a > b, a, b), False),
    "transposed product": (2, lambda a, b: (a @ b).T, True),
    "product": (2, lambda a, b: a @ b, True),
}


def select_op(on_true: float, on_false: float) -> Unary:
    return lambda a, b: jnp.where(a > b, on_true, on_false)


@st.composite
def programs(draw: Any) -> tuple[list[tuple[str, Unary, list[int]]], bool]:
    """A straight-line program: steps (label, op, operand indices into the values so far:
    the inputs, then each step's result)."""
    steps, has_product = [], False
    for _ in range(draw(st.integers(1, 7))):
        available = 2 + len(steps)
        if draw(st.integers(0, 4)) == 0:
            on_true, on_false = draw(st.sampled_from(CONSTANTS)), draw(st.sampled_from(CONSTANTS))
            label, arity, op, product = f"where({on_true}, {on_false})", 2, \
                select_op(on_true, on_false), False
        else:
            label = draw(st.sampled_from(sorted(OPS)))
            arity, op, product = OPS[label]
        operands = [draw(st.integers(0, available - 1)) for _ in range(arity)]
        steps.append((label, op, operands))
        has_product |= product
    return steps, has_product


def arrays() -> st.SearchStrategy[np.ndarray]:
    return st.lists(st.sampled_from(ELEMENTS), min_size=16, max_size=16).map(
        lambda xs: np.array(xs, np.float32).reshape(SHAPE))


def as_function(steps: list[tuple[str, Unary, list[int]]]) -> Callable[..., tuple]:
    def program(x, y):
        values = [x, y]
        for _, op, operands in steps:
            values.append(op(*(values[i] for i in operands)))
        return tuple(values[2:])

    return program


def assert_same_bits(ours: Any, expected: Any, tolerance: bool) -> None:
    ours, expected = np.asarray(ours), np.asarray(expected)
    assert (ours.dtype, ours.shape) == (expected.dtype, expected.shape)
    if tolerance:
        rtol, atol = tolerances(ours.dtype.name, rtol=1e-5, atol=1e-5)  # summation order
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol)
        return
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(ours), nan)
    assert ours[~nan].tobytes() == expected[~nan].tobytes(), (ours, expected)


def interpreted(fun: Callable, *args: Any) -> Any:
    """``fun(*args)`` eagerly, loops interpreted body jaxpr by body jaxpr (not compiled)."""
    eager_loops.enabled = False
    try:
        return minijax.block_until_ready(fun(*args))
    finally:
        eager_loops.enabled = True


def check(fun: Callable, args: tuple, tolerance: bool = False) -> None:
    with np.errstate(all="ignore"):
        eager = interpreted(fun, *args)
        compiled = minijax.jit(fun)(*args)
    for ours, expected in zip(minijax.tree_util.tree_leaves(compiled),
                              minijax.tree_util.tree_leaves(eager)):
        assert_same_bits(ours, expected, tolerance)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(programs(), arrays(), arrays())
def test_straight_line_programs(program: tuple, x: np.ndarray, y: np.ndarray) -> None:
    steps, has_product = program
    check(as_function(steps), (jnp.asarray(x), jnp.asarray(y)), tolerance=has_product)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(programs(), arrays(), arrays())
def test_gradients_of_programs(program: tuple, x: np.ndarray, y: np.ndarray) -> None:
    """Backward passes are where selects between constants and transposed products come
    from (the gradients of ``max`` and of a matrix product)."""
    steps, _ = program
    body = as_function(steps)
    loss = lambda x, y: sum(jnp.sum(jnp.tanh(v)) for v in body(x, y))
    finite = lambda a: jnp.asarray(np.nan_to_num(a, posinf=2.0, neginf=-2.0))
    check(minijax.grad(loss, argnums=(0, 1)), (finite(x), finite(y)), tolerance=True)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(programs(), arrays(), st.integers(-3, 6), st.integers(0, 5), st.integers(1, 4))
def test_loops(program: tuple, x: np.ndarray, offset: int, lower: int, length: int) -> None:
    """fori_loop (a counter, a dynamic slice at a clamped start), while_loop and scan (an
    output buffer updated in place) around random bodies."""
    steps, has_product = program
    body = as_function(steps)
    last = lambda a, b: body(a, b)[-1]

    def fori(x, table):
        def step(i, carry):
            window = lax.dynamic_slice(table, (i + offset, 0), (4, 4))
            return last(carry, window)
        return lax.fori_loop(lower, lower + length, step, x)

    def while_(x, table):
        cond = lambda c: c[0] < lower + length
        return lax.while_loop(cond, lambda c: (c[0] + 1, last(c[1], table[4:])), (lower, x))[1]

    def scan(x, table):
        return lax.scan(lambda c, row: (last(c, row), c * 1.0), x, table.reshape(2, 4, 4))

    def reverse_scan(x, table):  # reads and writes at n - 1 - i
        return lax.scan(lambda c, row: (last(c, row), c), x, table.reshape(2, 4, 4),
                        reverse=True)

    table = jnp.asarray(np.concatenate([x, x[::-1]]))
    for loop in (fori, while_, scan, reverse_scan):
        check(loop, (jnp.asarray(x), table), tolerance=has_product)


def optimised_ir(fun: Callable, *args: Any) -> str:
    closed = minijax.make_jaxpr(fun)(*args)
    module, _ = lowering.lower_to_module(closed, module_name="jit_f")
    return numpy_backend.compile_module(module).optimized_ir()


@pytest.mark.parametrize("on_true, on_false, has", [
    (1.0, 0.0, "stablehlo.convert"), (2.0, 1.0, "stablehlo.add"),
    (0.1, 0.3, "stablehlo.select")])  # 0.1 - 0.3 + 0.3 is not 0.1: left alone
def test_select_between_constants_becomes_arithmetic_only_when_exact(
        on_true: float, on_false: float, has: str) -> None:
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    ir = optimised_ir(lambda x: jnp.where(x > 0, on_true, on_false), x)
    assert has in ir
    assert ("stablehlo.select" in ir) == (has == "stablehlo.select")


def test_transpose_of_a_product_is_the_product_swapped() -> None:
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    ir = optimised_ir(lambda a, b: (a @ b).T, a, b)
    assert "stablehlo.transpose" not in ir and "stablehlo.dot_general %arg1, %arg0" in ir


def test_identities_leave_nothing_but_the_operand() -> None:
    x = np.ones((4, 1), np.float32)
    ir = optimised_ir(lambda x: jnp.max(x * 1.0 - 0.0, axis=1).reshape(4, 1) / 1.0, x)
    assert "stablehlo." not in ir.split("{", 2)[2] and "return %arg0" in ir


def generated(fun: Callable, *args: Any) -> str:
    closed = minijax.make_jaxpr(fun)(*args)
    module, _ = lowering.lower_to_module(closed, module_name="jit_f")
    return numpy_backend.compile_module(module).as_text()


@pytest.mark.parametrize("fun, ufunc", [
    (lambda x: jnp.maximum(x, 0.0), True), (lambda x: jnp.maximum(2.0, x), True),
    (lambda x: jnp.minimum(x, np.nan), True), (lambda x: jnp.maximum(x, -0.0), False),
    (lambda x: jnp.minimum(x, 0.0), False), (lambda x: jnp.maximum(x, x[::-1]), False)])
def test_max_and_min_with_a_constant_are_numpy_ufuncs_where_exact(fun: Callable, ufunc: bool
                                                                  ) -> None:
    """Only a tie between zeros tells XLA's max from NumPy's: a constant that is not a
    zero cannot tie, nor can +0.0 with ``x + 0.0`` (never -0.0)."""
    x = np.array([-0.0, 0.0, -1.0, 3.0, np.nan], np.float32)
    source = generated(fun, x)
    assert (("k_max" not in source and "k_min" not in source) == ufunc), source
    check(fun, (jnp.asarray(x),))


def test_relu_gradient_compares_the_input_and_recomputes_the_activation() -> None:
    """The gradient of ``max(z, 0)`` asks ``max(z, 0) == z``, which is ``z >= 0``; then the
    activation, used again by the backward product, is computed again from ``z`` there
    instead of being kept from the forward pass."""
    w = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)

    def loss(w, x):
        h = jnp.maximum(x @ w, 0.0)
        return jnp.sum(jnp.tanh(h @ w))

    grad = minijax.grad(loss)
    ir = optimised_ir(grad, w, x)
    assert "compare EQ" not in ir and "compare GE" in ir
    assert generated(grad, w, x).count("np.maximum(") == 2
    check(grad, (jnp.asarray(w), jnp.asarray(x)), tolerance=True)


def test_a_boolean_mask_times_an_array_is_left_to_numpy_promotion() -> None:
    x = np.array([-0.0, 0.0, -1.0, 3.0, np.nan, np.inf], np.float32)
    f = lambda x, y: y * (x >= 0).astype(jnp.float32)
    assert ".astype(" not in generated(f, x, x[::-1])
    check(f, (jnp.asarray(x), jnp.asarray(x[::-1])))


def test_counter_arithmetic_is_python_ints_and_needs_no_clamp() -> None:
    """A reverse scan reads row ``n - 1 - i``: Python ints, in bounds by the counter's
    range, so no ``min(max(...))`` clamp."""
    xs = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = lambda xs: lax.scan(lambda c, x: (c + x, c * x), jnp.zeros(4), xs, reverse=True)
    source = generated(f, xs)
    assert re.search(r"= \(\(3 - iterArg\) - 1\)", source) and "min(max(" not in source
    check(f, (jnp.asarray(xs),))


def test_plus_zero_is_kept_for_floats() -> None:
    """-0.0 + 0.0 is +0.0: dropping the addition would change the sign of a zero."""
    ir = optimised_ir(lambda x: x + 0.0, np.zeros(3, np.float32))
    assert "add" in ir


def test_commutative_operands_are_one_value() -> None:
    x = np.ones(3, np.float32)
    ir = optimised_ir(lambda x, y: (x * y) - (y * x) * 2.0, x, x)
    assert ir.count("stablehlo.multiply") == 2  # x * y once, and the product by 2


def test_jit_hands_the_backend_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """No text printed for the mini-XLA to parse back; AOT's ``.compile()`` still
    compiles the text it is given."""
    parsed = []
    original = numpy_backend.parse_module
    monkeypatch.setattr(numpy_backend, "parse_module", lambda t: parsed.append(t) or original(t))
    f = lambda x: jnp.sin(x) + 1.0
    x = jnp.ones(3)
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(x)), np.sin(1.0) + 1.0, rtol=1e-6)
    assert parsed == [] and jit_primitive.compile_jaxpr is not None
    minijax.jit(f).lower(x).compile()
    assert len(parsed) == 1


def newton(a: Any, n: int = 20) -> Any:
    body = lambda c: (c[0] + 1, c[1] - (c[1] * c[1] - a) / (2 * c[1]))
    return lax.while_loop(lambda c: c[0] < n, body, (0, a))[1]


EAGER_LOOPS: dict[str, Callable[..., Any]] = {
    "while_loop": newton,
    "fori_loop": lambda x: lax.fori_loop(0, 7, lambda i, c: c * 0.5 + jnp.sin(c) * i, x),
    "scan": lambda x: lax.scan(lambda c, r: (c + r, c * r), x, jnp.stack([x, -x, x * x])),
}


@pytest.mark.parametrize("name", sorted(EAGER_LOOPS))
def test_eager_loops_run_compiled_and_agree_with_the_interpreter(name: str) -> None:
    """An eager loop runs as one compiled program, found again for the next call (the
    body is traced again, to an equal jaxpr); the results are the interpreter's."""
    loop = EAGER_LOOPS[name]
    x = jnp.asarray(np.array([0.5, 2.0, -0.0, 9.0], np.float32))
    eager_loops._programs.clear()  # another test in this process may have compiled it
    first, second = minijax.block_until_ready((loop(x), loop(x)))
    assert len(eager_loops._programs) == 1
    for ours, expected in zip(minijax.tree_util.tree_leaves((first, second)),
                              minijax.tree_util.tree_leaves((interpreted(loop, x),) * 2)):
        assert_same_bits(ours, expected, tolerance=False)


def test_eager_loop_programs_tell_apart_literals_by_their_bits() -> None:
    x = jnp.ones(3)
    plus, minus = (lax.fori_loop(0, 1, lambda i, c, z=z: c * z, x) for z in (0.0, -0.0))
    assert np.signbit(np.asarray(minus)).all() and not np.signbit(np.asarray(plus)).any()


def test_eager_loops_with_side_effects_are_interpreted(capsys: pytest.CaptureFixture) -> None:
    before = len(eager_loops._programs)
    lax.fori_loop(0, 3, lambda i, c: (minijax.debug.print("step {}", i), c + 1)[1], 0.0)
    minijax.block_until_ready(jnp.ones(1))
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n"
    assert len(eager_loops._programs) == before


def test_loop_carries_that_never_change_or_copy_another_are_dropped() -> None:
    def f(x):
        body = lambda c: (c[0] + 1, c[1] * 2.0, c[2] * 2.0, c[3])
        return lax.while_loop(lambda c: c[0] < 3, body, (0, x, x, x))

    x = np.array([1.0, -0.0, 3.0], np.float32)
    closed = minijax.make_jaxpr(f)(x)
    module, _ = lowering.lower_to_module(closed, module_name="jit_f")
    loops = [op for op in walk_ops(numpy_backend.compile_module(module).module.funcs[0].body)
             if op.name == "stablehlo.while"]
    assert [len(op.operands) for op in loops] == [2]  # the counter and one doubled x
    check(f, (jnp.asarray(x),))
