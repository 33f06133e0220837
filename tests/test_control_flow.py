"""Control flow (``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``) vs JAX.

Four kinds of checks:

* values, dtypes and weak types of eager programs (``oracle.check_program``);
* printed jaxprs, character for character, and evaluating our jaxpr gives the eager value;
* bad input: JAX's error class *and* JAX's message, word for word;
* a Hypothesis property: ``scan`` agrees with a plain Python loop over NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.jaxpr import eval_jaxpr
from tests.oracle import check_program, namespaces, run_both

jax = pytest.importorskip("jax")

F32 = np.float32
ARANGE = np.arange(4, dtype=F32)  # NumPy data: each side turns it into its own array


# ---------------------------------------------------------------------------------------
# Eager values, dtypes and weak types
# ---------------------------------------------------------------------------------------


def _nested(n):
    """cond inside scan inside while_loop."""
    def body(c):
        def step(cc, a):
            return n.lax.cond(a > 1, lambda: cc + a, lambda: cc - a), cc * 2
        return n.lax.scan(step, c, ARANGE)[0]
    return n.lax.while_loop(lambda c: c < 100.0, body, F32(1))


def _closure_over_array(n):
    w = n.jnp.asarray(ARANGE)
    return n.lax.cond(False, lambda x: x * w, lambda x: x - w, F32(2))


PROGRAMS = {
    "cond_true": lambda n: n.lax.cond(True, lambda x: x * 2, lambda x: x - 1, F32(3)),
    "cond_false": lambda n: n.lax.cond(False, lambda x: x * 2, lambda x: x - 1, F32(3)),
    "cond_array_pred": lambda n: n.lax.cond(n.jnp.asarray(2.0) > 1, lambda: 1, lambda: 2),
    "cond_int_pred": lambda n: n.lax.cond(n.jnp.int8(0), lambda x: x, lambda x: -x, 2.0),
    "cond_python_int_pred": lambda n: n.lax.cond(7, lambda x: x + 1, lambda x: x, 2),
    "cond_float_pred": lambda n: n.lax.cond(0.0, lambda: F32(1), lambda: F32(2)),
    "cond_weak_branch": lambda n: n.lax.cond(True, lambda x: 1.0, lambda x: x, F32(5)),
    "cond_both_weak": lambda n: n.lax.cond(True, lambda x: 1.0, lambda x: 2.0, F32(5)),
    "cond_pytree": lambda n: n.lax.cond(
        True, lambda d: {"a": d["b"], "b": (d["a"], 1)}, lambda d: {"a": d["a"], "b": (d["b"], 2)},
        {"a": F32(1), "b": F32(2)}),
    "cond_several_operands": lambda n: n.lax.cond(
        False, lambda x, y: x * y, lambda x, y: x + y, ARANGE, F32(3)),
    "cond_operand_keyword": lambda n: n.lax.cond(True, lambda x: x + 1, lambda x: x,
                                                 operand=ARANGE),
    "cond_closure_over_array": _closure_over_array,
    "switch": lambda n: n.lax.switch(1, [lambda x: x, lambda x: x * 2, lambda x: -x], F32(3)),
    "switch_clamp_high": lambda n: n.lax.switch(9, [lambda: 0, lambda: 1, lambda: 2]),
    "switch_clamp_low": lambda n: n.lax.switch(-4, [lambda: 0, lambda: 1, lambda: 2]),
    "switch_array_index": lambda n: n.lax.switch(n.jnp.uint8(1), [lambda x: x, lambda x: x + 1],
                                                 ARANGE),
    "switch_single_branch": lambda n: n.lax.switch(5, [lambda x: x + 1], F32(1)),
    "while": lambda n: n.lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1),
    "while_pytree": lambda n: n.lax.while_loop(
        lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, n.jnp.ones(2))),
    "while_weak_carry_promoted": lambda n: n.lax.while_loop(lambda c: c < 3, lambda c: c + 1.0, 0),
    "while_weak_to_strong": lambda n: n.lax.while_loop(
        lambda c: c < 3, lambda c: c + n.jnp.float32(1), 0.0),
    "while_zero_iterations": lambda n: n.lax.while_loop(lambda c: c > 3, lambda c: 5.0, F32(0)),
    # (JAX hands back a NumPy carry passed through unchanged as it is, NumPy; we give an
    # Array. Hence jnp arrays in the passthrough programs.)
    "while_passthrough_carry": lambda n: n.lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]), (0, n.jnp.asarray(ARANGE))),
    "fori": lambda n: n.lax.fori_loop(0, 5, lambda i, x: x + i, 0),
    "fori_float_carry": lambda n: n.lax.fori_loop(1, 4, lambda i, x: x * i, F32(1)),
    "fori_empty_range": lambda n: n.lax.fori_loop(5, 3, lambda i, x: x + i, 1.0),
    "fori_array_bounds": lambda n: n.lax.fori_loop(n.jnp.int8(0), 3, lambda i, x: x + i, 1.0),
    "fori_unrolled": lambda n: n.lax.fori_loop(0, 3, lambda i, x: x * 2, F32(1), unroll=True),
    "scan": lambda n: n.lax.scan(lambda c, x: (c + x, c * x), F32(1), ARANGE),
    "scan_reverse": lambda n: n.lax.scan(lambda c, x: (c + x, c), 0.0, ARANGE, reverse=True),
    "scan_weak_init": lambda n: n.lax.scan(lambda c, x: (c + x, c), 0, ARANGE),
    "scan_length_only": lambda n: n.lax.scan(lambda c, x: (c * 2, c), F32(1), None, length=4),
    "scan_no_ys": lambda n: n.lax.scan(lambda c, x: (c + x, None), F32(0), ARANGE),
    "scan_length_zero": lambda n: n.lax.scan(lambda c, x: (c + x, c), 0.0, np.ones(0, F32)),
    "scan_pytrees": lambda n: n.lax.scan(
        lambda c, x: ((c[0] + x["a"], c[1] * x["b"]), {"s": c[0], "t": [x["a"], c[1]]}),
        (0.0, F32(1)), {"a": ARANGE, "b": ARANGE + 1}),
    "scan_passthrough": lambda n: n.lax.scan(lambda c, x: (c, (x, c * x)), n.jnp.float32(2),
                                             n.jnp.asarray(ARANGE)),
    "scan_2d_xs": lambda n: n.lax.scan(lambda c, row: (c + row, n.jnp.sum(row)), np.zeros(3, F32),
                                       np.arange(6, dtype=F32).reshape(2, 3)),
    "map": lambda n: n.lax.map(lambda x: x * 2, ARANGE),
    "map_pytree": lambda n: n.lax.map(lambda x: (x[0] * 2, {"q": x[1]}), (ARANGE, ARANGE > 1)),
    "nested_while_scan_cond": _nested,
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_eager_matches_jax(name):
    check_program(PROGRAMS[name])


def test_x64_counter_and_carry_dtypes():
    minijax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        check_program(lambda n: n.lax.fori_loop(0, 3, lambda i, c: c + i, 1.0))
        check_program(lambda n: n.lax.scan(lambda c, a: (c + a, c * 2), 1, np.arange(3.0)))
    finally:
        minijax.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(-10, 10, width=32), max_size=6), reverse=st.booleans())
def test_scan_is_a_python_loop(values, reverse):
    xs = np.array(values, dtype=F32)
    carry, ys = lax.scan(lambda c, x: (c * 0.5 + x, c - x), F32(1), xs, reverse=reverse)
    c, expected = F32(1), [None] * len(xs)
    for i in reversed(range(len(xs))) if reverse else range(len(xs)):
        expected[i] = c - xs[i]
        c = c * F32(0.5) + xs[i]
    np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ys), np.array(expected, F32).reshape(-1), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Printed jaxprs
# ---------------------------------------------------------------------------------------

W = np.arange(3, dtype=F32)


def _outer_closure(n):
    w = n.jnp.asarray(W)  # captured by both branches: one constant, shared

    def f(x, y):
        return n.lax.cond(x > 0, lambda z: z * y + w, lambda z: z - w * y, x)
    return f


def _nested_fn(n):
    def f(x):
        def body(c):
            def step(cc, a):
                return n.lax.cond(a > 0, lambda: cc + a, lambda: cc - a), cc
            return n.lax.scan(step, c, W)[0]
        return n.lax.while_loop(lambda c: c < 10.0, body, x)
    return f


JAXPR_PROGRAMS = {  # name: (function of the namespace, example arguments)
    "cond": (lambda n: lambda x: n.lax.cond(x > 0, lambda x: x * 2, lambda x: x - 1, x), (1.0,)),
    "cond_int_pred": (lambda n: lambda p: n.lax.cond(p, lambda: 1, lambda: 2), (3,)),
    "cond_concrete_pred": (lambda n: lambda x: n.lax.cond(True, lambda: 1.0, lambda: x),
                           (F32(3),)),
    "cond_closure": (lambda n: lambda x: n.lax.cond(x > 0, lambda: x, lambda: -x), (1.0,)),
    "cond_closure_consts": (_outer_closure, (1.0, 2.0)),
    "cond_forwarded_output": (lambda n: lambda x, y: n.lax.cond(
        x > 0, lambda x, y: (x, y * 2), lambda x, y: (x, y), x, y), (1.0, 2.0)),
    "cond_all_forwarded": (lambda n: lambda p, x: n.lax.cond(
        p, lambda x: (x * 3, x)[1], lambda x: x, x), (True, F32(1))),
    "switch": (lambda n: lambda i: n.lax.switch(i, [lambda: 1.0, lambda: 2.0, lambda: 3.0]), (1,)),
    "while": (lambda n: lambda x, m: n.lax.while_loop(
        lambda c: c[0] < m, lambda c: (c[0] + 1, c[1] * 2), (0, x)), (1.0, 5)),
    "while_closure": (lambda n: lambda x: n.lax.while_loop(lambda c: c < x, lambda c: c + x, 0.0),
                      (1.0,)),
    "while_passthrough": (lambda n: lambda x: n.lax.while_loop(
        lambda c: (c[1] * 2, c[0] < 3)[1], lambda c: (c[0] + 1, c[1]), (0, x)), (F32(1),)),
    "fori_scan": (lambda n: lambda x: n.lax.fori_loop(0, 3, lambda i, x: x * 2, x), (1.0,)),
    "fori_while": (lambda n: lambda x, m: n.lax.fori_loop(0, m, lambda i, c: c + i, x),
                   (F32(2), 3)),
    "fori_int8_bound": (lambda n: lambda x, m: n.lax.fori_loop(m, 5, lambda i, c: c + i, x),
                        (F32(2), np.int8(3))),
    "scan": (lambda n: lambda c, xs: n.lax.scan(lambda c, x: (c + x, c * x), c, xs),
             (1.0, np.ones(3, F32))),
    "scan_reverse_unroll": (lambda n: lambda c, xs: n.lax.scan(
        lambda c, x: (c + x, c * x), c, xs, reverse=True, unroll=2), (1.0, np.ones(3, F32))),
    "scan_consts": (lambda n: lambda x, xs: n.lax.scan(
        lambda c, a: (c + a * x + c, a * x), x, xs), (1.0, np.ones(3, F32))),
    "scan_forwarding": (lambda n: lambda c, xs: n.lax.scan(lambda c, x: (c, x), c, xs),
                        (F32(1), np.ones(3, F32))),
    "scan_ys_from_xs": (lambda n: lambda c, xs: n.lax.scan(lambda c, x: (c * 2, (x, c)), c, xs),
                        (F32(1), np.ones(3, F32))),
    "map": (lambda n: lambda xs: n.lax.map(lambda x: x * 2, xs), (np.ones(3, F32),)),
    "nested": (_nested_fn, (1.0,)),
}


@pytest.mark.parametrize("name", list(JAXPR_PROGRAMS))
def test_jaxpr_text_matches_jax(name):
    program, args = JAXPR_PROGRAMS[name]
    ours, theirs = namespaces()
    expected = str(jax.make_jaxpr(program(theirs))(*args))
    assert str(minijax.make_jaxpr(program(ours))(*args)) == expected


@pytest.mark.parametrize("name", ["cond", "cond_closure_consts", "while", "fori_while",
                                  "scan_consts", "nested"])
def test_evaluating_the_jaxpr_gives_the_eager_result(name):
    program, args = JAXPR_PROGRAMS[name]
    ours, _ = namespaces()
    f = program(ours)
    closed = minijax.make_jaxpr(f)(*args)
    flat_args = minijax.tree_util.tree_leaves(args)
    from_jaxpr = eval_jaxpr(closed.jaxpr, closed.consts, *flat_args)
    eager = minijax.tree_util.tree_leaves(f(*args))
    assert len(from_jaxpr) == len(eager)
    for a, b in zip(from_jaxpr, eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------------------------------
# Bad input: JAX's error class and message
# ---------------------------------------------------------------------------------------


def _to_int(n, x):
    return n.lax.convert_element_type(x, np.int32)


def _carry_named(n):
    def body(carry, x):
        return carry * n.jnp.ones(2), x
    return n.lax.scan(body, F32(0), ARANGE)


BAD_INPUTS = {
    "cond_branch_dtypes_differ": lambda n: n.lax.cond(
        True, lambda x: x, lambda x: _to_int(n, x), F32(1)),
    "cond_branch_shapes_differ": lambda n: n.lax.cond(
        True, lambda x: n.jnp.ones(3), lambda x: x, F32(1)),
    "cond_branch_several_types_differ": lambda n: n.lax.cond(
        True, lambda x: (x, x, x), lambda x: (x, n.jnp.ones(2), n.jnp.ones(2, np.int32)), F32(1)),
    "cond_branch_structures_differ": lambda n: n.lax.cond(
        True, lambda x: (x, x), lambda x: x, F32(1)),
    "cond_branch_dict_keys_differ": lambda n: n.lax.cond(
        True, lambda x: {"a": x}, lambda x: {"b": x}, F32(1)),
    "cond_branch_dict_sizes_differ": lambda n: n.lax.cond(
        True, lambda x: {"a": x, "b": x}, lambda x: {"a": x}, F32(1)),
    "cond_nonscalar_pred": lambda n: n.lax.cond(
        n.jnp.asarray(np.array([True, False])), lambda: 1, lambda: 2),
    "cond_list_pred": lambda n: n.lax.cond([True], lambda: 1, lambda: 2),
    "cond_complex_pred": lambda n: n.lax.cond(1j, lambda: 1, lambda: 2),
    "cond_string_pred": lambda n: n.lax.cond("yes", lambda: 1, lambda: 2),
    "cond_none_pred": lambda n: n.lax.cond(None, lambda: 1, lambda: 2),
    "cond_not_callable": lambda n: n.lax.cond(True, 1, lambda: 2),
    "switch_no_branches": lambda n: n.lax.switch(0, [], F32(1)),
    "switch_float_index": lambda n: n.lax.switch(0.5, [lambda x: x, lambda x: x], F32(1)),
    "switch_vector_index": lambda n: n.lax.switch(
        n.jnp.asarray(np.array([0, 1])), [lambda: 1, lambda: 2]),
    "switch_branch_types_differ": lambda n: n.lax.switch(
        1, [lambda x: x, lambda x: x, lambda x: n.jnp.ones(2)], F32(1)),
    "switch_not_callable": lambda n: n.lax.switch(1, [lambda: 1, 3]),
    "while_body_changes_dtype": lambda n: n.lax.while_loop(
        lambda c: c < 3, lambda c: n.lax.convert_element_type(c, np.float32), n.jnp.int32(0)),
    "while_body_changes_structure": lambda n: n.lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1,), (0, 1)),
    "while_body_changes_several": lambda n: n.lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1.5, c[1] * n.jnp.ones(2), c[2]),
        (n.jnp.int32(0), 1.0, 2.0)),
    "while_cond_not_bool": lambda n: n.lax.while_loop(lambda c: c, lambda c: c + 1, 0),
    "while_cond_not_scalar": lambda n: n.lax.while_loop(
        lambda c: c < 3, lambda c: c + 1, n.jnp.zeros(2)),
    "while_cond_returns_tuple": lambda n: n.lax.while_loop(lambda c: (c < 3,), lambda c: c, 0),
    "scan_length_mismatch": lambda n: n.lax.scan(
        lambda c, x: (c, x), 0.0, (np.ones(3, F32), np.ones(4, F32))),
    "scan_length_argument_mismatch": lambda n: n.lax.scan(
        lambda c, x: (c, x), 0.0, np.ones(3, F32), length=4),
    "scan_no_length": lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, None),
    "scan_scalar_xs": lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, 1.0),
    "scan_carry_dtype_changes": lambda n: n.lax.scan(
        lambda c, x: (_to_int(n, c), x), F32(0), ARANGE),
    "scan_carry_component_changes": lambda n: n.lax.scan(
        lambda c, x: ((c[0], _to_int(n, c[1])), x), (F32(0), F32(0)), ARANGE),
    "scan_carry_shape_changes": _carry_named,
    "scan_body_not_a_pair": lambda n: n.lax.scan(lambda c, x: c, 0.0, ARANGE),
    "scan_body_returns_triple": lambda n: n.lax.scan(lambda c, x: (c, x, x), 0.0, ARANGE),
    "scan_negative_unroll": lambda n: n.lax.scan(lambda c, x: (c, x), 0.0, ARANGE, unroll=-1),
    "fori_float_and_int_bounds": lambda n: n.lax.fori_loop(0.0, 3, lambda i, x: x, 1.0),
    "fori_int8_and_int32_bounds": lambda n: n.lax.fori_loop(
        n.jnp.int8(0), n.jnp.int32(3), lambda i, x: x, 1.0),
    "fori_not_callable": lambda n: n.lax.fori_loop(0, 3, None, 1.0),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_raises_jaxs_error(name):
    (our_kind, ours), (their_kind, theirs) = run_both(BAD_INPUTS[name])
    assert our_kind == their_kind == "error", (ours, theirs)
    assert type(ours).__name__ == type(theirs).__name__
    assert str(ours) == str(theirs)


STATIC_ARGUMENT_ERRORS = {  # arguments that must be known while tracing
    "fori_unroll_needs_static_bounds": (ValueError, lambda n: lambda m: n.lax.fori_loop(
        0, m, lambda i, x: x, 1.0, unroll=2)),
    "scan_length_must_be_concrete": ("ConcretizationTypeError", lambda n: lambda m: n.lax.scan(
        lambda c, x: (c, x), 0.0, None, length=m)),
}


@pytest.mark.parametrize("name", list(STATIC_ARGUMENT_ERRORS))
def test_traced_static_argument_raises_jaxs_error(name):
    error, program = STATIC_ARGUMENT_ERRORS[name]
    ours, theirs = namespaces()
    expected_class = getattr(jax.errors, error) if isinstance(error, str) else error
    our_class = getattr(minijax.errors, error) if isinstance(error, str) else error
    with pytest.raises(expected_class) as expected:
        jax.make_jaxpr(program(theirs))(3)
    with pytest.raises(our_class) as got:
        minijax.make_jaxpr(program(ours))(3)
    assert str(got.value) == str(expected.value)


# ---------------------------------------------------------------------------------------
# Python ``if`` on traced values, inside and outside control flow
# ---------------------------------------------------------------------------------------


def test_python_if_on_concrete_arrays_still_works():
    x = minijax.numpy.asarray(2.0)
    assert (1 if x > 0 else 2) == 1


IF_PROGRAMS = {  # traced ``if``s: the message names the function, purpose and argument
    "cond_branch": (lambda n: lambda x: n.lax.cond(
        x > 0, lambda y: 1 if y else 2, lambda y: 3, x), (1.0,)),
    "switch_branch": (lambda n: lambda x: n.lax.switch(
        1, [lambda y: 1 if y else 2, lambda y: 3], x), (1.0,)),
    "while_cond": (lambda n: lambda x: n.lax.while_loop(
        lambda c: c < 3 if c else True, lambda c: c, x), (1.0,)),
    "while_body": (lambda n: lambda x: n.lax.while_loop(
        lambda c: True, lambda c: 1.0 if c else 2.0, x), (1.0,)),
    "scan_body_pytree": (lambda n: lambda x: n.lax.scan(
        lambda c, a: (c if c[0] else c, a), x, None, length=2), ((1.0, 2.0),)),
    "fori_counter": (lambda n: lambda x: n.lax.fori_loop(
        0, 3, lambda i, y: 1.0 if i else 2.0, x), (1.0,)),
    "fori_while_carry": (lambda n: lambda x, m: n.lax.fori_loop(
        0, m, lambda i, y: 1.0 if y[1] else 2.0, x), ((1.0, 2.0), 3)),
}


@pytest.mark.parametrize("name", list(IF_PROGRAMS))
def test_traced_if_inside_control_flow_names_the_function(name):
    program, args = IF_PROGRAMS[name]
    ours, theirs = namespaces()
    with pytest.raises(jax.errors.TracerBoolConversionError) as expected:
        jax.make_jaxpr(program(theirs))(*args)
    with pytest.raises(minijax.errors.TracerBoolConversionError) as got:
        minijax.make_jaxpr(program(ours))(*args)
    assert str(got.value) == str(expected.value)
