"""The mini-XLA: StableHLO text -> graph IR -> passes -> generated NumPy code.

* the parser reads back what the printer writes (and what JAX writes), and says where
  it fails;
* each pass has the effect it promises on small programs (before/after listings);
* generated code gives the values, dtypes and shapes of eager minijax on many programs
  (control flow, gather/scatter, reductions, dot_general, sort, linear algebra...), and
  keeps XLA's semantics where NumPy's differ;
* the generated code is readable: one statement per op, NumPy calls, ``out=`` reuse.

``PROGRAMS`` is shared with ``test_lowering.py`` (text vs JAX, and real XLA).
"""

from __future__ import annotations

import re
import types
from typing import Any, NamedTuple

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax
from minijax.compiler import lowering, numpy_backend, passes
from minijax.compiler.stablehlo import parse_module, walk_ops
from minijax.compiler.stablehlo_ir import Op, print_module
from minijax.jaxpr import eval_closed_jaxpr
from minijax.tree_util import tree_leaves

MINI = types.SimpleNamespace(jnp=mjnp, lax=mlax, np=np, jax=minijax)
RNG = np.random.default_rng(0)
F = RNG.standard_normal((4, 5)).astype(np.float32)  # a matrix
V = RNG.standard_normal(5).astype(np.float32)  # a vector
W = RNG.standard_normal((5, 3)).astype(np.float32)
I = np.array([3, -1, 0, 2], np.int32)  # noqa: E741
SPD = (lambda a: a @ a.T + 5 * np.eye(3, dtype=np.float32))(RNG.standard_normal((3, 3)).astype(
    np.float32))
HERMITIAN = (SPD + 1j * (np.triu(SPD, 1) - np.tril(SPD, -1))).astype(np.complex64)


class Program(NamedTuple):
    """``fun(n)`` is the function, written against the namespace ``n`` (minijax's or
    JAX's ``jnp``/``lax``); ``same_text``: its lowering must equal JAX's character for
    character (its jaxpr is JAX's)."""

    name: str
    fun: Any
    args: tuple
    same_text: bool = True


def _scan_consts(n):
    def f(w, xs):
        return n.lax.scan(lambda c, x: (c * w + x, n.jnp.sin(c)), n.jnp.zeros(5), xs)
    return f


def _while_consts(n):
    w = np.arange(5, dtype=np.float32)

    def f(x, k):
        return n.lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * w + 1), (0, x))
    return f


def _nested_control(n):
    def f(x):
        def step(c, xi):
            return n.lax.cond(xi > 0, lambda: c + xi, lambda: c * 0.5), c
        return n.lax.scan(step, 0.0, x)
    return f


def _jit_twice(n):
    g = n.jax.jit(lambda a: a * 2.0)
    return lambda x: g(x) + g(x) + g(x[:2]).sum()


def _jit_in_scan(n):
    g = n.jax.jit(lambda c, x: (c + x, c * x))
    return lambda xs: n.lax.scan(g, 0.0, xs)


def _jit_in_cond(n):
    g = n.jax.jit(n.jnp.sin)
    return lambda x: n.lax.cond(x[0] > 0, g, lambda y: y, x)


def _jit_in_jit(n):
    inner = n.jax.jit(lambda a: a + 1.0)
    outer = n.jax.jit(lambda a: inner(a) * inner(a * 2.0))
    return lambda x: outer(x) - 1.0


def _jit_dead_output(n):
    g = n.jax.jit(lambda a: (a * 2.0, n.jnp.sin(a)))
    return lambda x: g(x)[0]


def _custom_jvp(n):
    @n.jax.custom_jvp
    def f(x):
        return n.jnp.sin(x) * 2.0
    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0]))
    return lambda x: f(x) + 1.0


def _custom_vjp_grad(n):
    @n.jax.custom_vjp
    def g(x):
        return x * 2.0
    g.defvjp(lambda x: (g(x), None), lambda _, ct: (ct * 2.0,))
    return lambda x: n.jax.grad(lambda y: g(y).sum())(x) + g(x)


def _grad_through_cond(n):
    """Residual slots that only one branch fills: placeholders (``empty2``) in the other."""
    def f(x):
        return n.lax.cond(x[0] > 0, lambda u: n.jnp.sin(u) * u, lambda u: u * 2.0, x).sum()
    return n.jax.grad(f)


def _grad_hoisting_scan_residuals(n):
    """sin(w) and cos(w) do not change in the loop: computed once, before it."""
    def loss(w, x):
        return n.lax.scan(lambda c, xi: (c * n.jnp.sin(w) + xi, c), x,
                          n.jnp.arange(5.) * w)[0].sum()
    return n.jax.grad(loss, argnums=(0, 1))


def _mlp_value_and_grad(n):
    def loss(params, x):
        w, b = params
        logits = n.jnp.tanh(x @ w + b)
        return -n.jnp.mean(logits - n.jnp.log(n.jnp.sum(n.jnp.exp(logits), axis=1,
                                                         keepdims=True)))
    return n.jax.value_and_grad(loss)


PROGRAMS = [
    Program("sin_mul_add", lambda n: lambda x, y: n.jnp.sin(x) * y + 1.0, (V, 2.0)),
    Program("tuple_out", lambda n: lambda x: (x * 2, x + 1), (V,)),
    Program("dict_out", lambda n: lambda x: {"a": x, "b": [x, x * 2]}, (V,)),
    Program("matmul", lambda n: lambda a, b: a @ b, (F, W)),
    Program("matmul_vec", lambda n: lambda a, b: a @ b, (F, V)),
    Program("batched_dot", lambda n: lambda a, b: n.lax.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,)))), (np.stack([F, F]), np.stack([W, W]))),
    Program("dot_transposed", lambda n: lambda a, b: n.lax.dot_general(
        a, b, (((0,), (0,)), ((), ()))), (F, F)),
    Program("int_dot", lambda n: lambda a: a @ a.T, (np.arange(6, dtype=np.int32).reshape(2, 3),)),
    Program("sum_all", lambda n: lambda x: x.sum(), (F,)),
    Program("reductions", lambda n: lambda x: (
        n.lax.reduce_max(x, (1,)), n.lax.reduce_min(x, (0,)), n.lax.reduce_prod(x, (1,)),
        n.lax.reduce_or(x > 0, (1,)), n.lax.reduce_and(x > -1, (0,))), (F,)),
    Program("argmax", lambda n: lambda x: (n.lax.argmax(x, 1, np.int32),
                                           n.lax.argmin(x, 0, np.int32)), (F,)),
    Program("cumulative", lambda n: lambda x: (n.lax.cumsum(x, 1), n.lax.cumprod(x, 0, True),
                                               n.lax.cummax(x, 1)), (F,)),
    Program("cummin_int", lambda n: lambda x: n.lax.cummin(x, 0), (I,)),
    Program("cond", lambda n: lambda x: n.lax.cond(x.sum() > 0, lambda x: x * 2,
                                                    lambda x: x - 1, x), (V,)),
    Program("switch", lambda n: lambda i, x: n.lax.switch(
        i, [lambda x: x, lambda x: x * 2, n.lax.sin], x), (np.int32(2), V)),
    Program("while", lambda n: lambda x: n.lax.while_loop(
        lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, x)), (V,)),
    Program("while_consts", _while_consts, (V, 4)),
    Program("fori_dynamic", lambda n: lambda x, k: n.lax.fori_loop(
        0, k, lambda i, c: c + i, x), (V, np.int32(3))),
    Program("fori_static", lambda n: lambda x: n.lax.fori_loop(0, 5, lambda i, c: c * 2.0, x),
            (V,)),
    Program("scan", lambda n: lambda x: n.lax.scan(lambda c, xi: (c + xi, c * xi), 0.0, x),
            (V,)),
    Program("scan_consts", _scan_consts, (V, F)),
    Program("scan_reverse", lambda n: lambda xs: n.lax.scan(
        lambda c, x: (c + x, None), 0.0, xs, reverse=True), (V,)),
    Program("nested_control", _nested_control, (V,)),
    Program("sort", lambda n: lambda x: n.lax.sort(x), (np.array([3., np.nan, -0., 0., -1.],
                                                                  np.float32),)),
    Program("sort_keys", lambda n: lambda a, b: n.lax.sort((a, b), num_keys=2),
            (np.array([1., 0., 1., 0.], np.float32), I)),
    Program("sort_int_rows", lambda n: lambda x: n.lax.sort(x, dimension=0),
            (np.array([[3, 1], [1, 2], [2, 0]], np.int32),)),
    Program("top_k", lambda n: lambda x: n.lax.top_k(x, 2), (F,)),
    Program("constants", lambda n: lambda x: np.array([1., 2., 3., 4., 5.], np.float32) * x,
            (V,)),
    Program("slices", lambda n: lambda x: (x[1:], x[::2], x[1:3, ::2]), (F,)),
    Program("dynamic_index", lambda n: lambda x, i: x[i], (F, -1)),
    Program("dynamic_update", lambda n: lambda m, u, i: n.lax.dynamic_update_slice(
        m, u, (i, 0)), (F, np.ones((1, 5), np.float32), 7)),
    Program("gather", lambda n: lambda x: x[np.array([0, 2, -1])], (F,)),
    Program("gather_clip", lambda n: lambda x, i: x.at[i].get(mode="clip"), (V, I + 3)),
    Program("gather_fill", lambda n: lambda x, i: x.at[i].get(mode="fill", fill_value=0.0),
            (V, I * 2)),
    Program("scatter_add", lambda n: lambda x: x.at[np.array([0, 2, 0])].add(1.0), (V,)),
    Program("scatter_set_drop", lambda n: lambda x, i: x.at[i].set(2.0), (V, I * 2)),
    Program("scatter_mul_clip", lambda n: lambda x, i: x.at[i].mul(3.0, mode="clip"),
            (V, I * 2)),
    Program("scatter_max", lambda n: lambda x, i: x.at[i].max(0.5), (V, I)),
    Program("chlo_ops", lambda n: lambda x: (n.lax.asinh(x), n.lax.nextafter(x, x + 1),
                                             n.lax.square(x), n.lax.atan(x)), (V,)),
    Program("shapes", lambda n: lambda m: (m.T, m.reshape(5, 4), n.jnp.concatenate([m, m]),
                                           n.lax.rev(m, (0,)), m[None], n.lax.pad(
                                               m, 0.0, ((1, 2, 0), (0, -1, 1)))), (F,)),
    Program("iota", lambda n: lambda: n.lax.broadcasted_iota(np.int32, (2, 3), 1), ()),
    Program("integer_pow", lambda n: lambda x: (n.lax.integer_pow(x, 5),
                                                n.lax.integer_pow(x, -3), x ** 2), (V,)),
    Program("converts", lambda n: lambda x: (x.astype(np.int32), (x * 1e10).astype(np.int32),
                                             x.astype(bool), x.astype(np.uint8)), (V,)),
    Program("select_n", lambda n: lambda i, x: n.lax.select_n(i, x, x * 2, x * 3),
            (np.int32(1), V)),
    Program("clamp", lambda n: lambda x: n.lax.clamp(-0.5, x, 0.5), (V,)),
    Program("logistic_exp2", lambda n: lambda x: (n.lax.logistic(x), n.lax.exp2(x)), (V,)),
    Program("mlp_loss", lambda n: lambda x, w, b: n.jnp.tanh(x @ w + b).sum(), (F, W, V[:3])),
    Program("complex_max", lambda n: lambda c: n.lax.max(c, c * 1j), (V + 2j * V,)),
    Program("int_div_rem", lambda n: lambda a, b: (n.lax.div(a, b), n.lax.rem(a, b)),
            (np.array([7, -7, 7, -7, 5], np.int32), np.array([2, 2, -2, 0, 0], np.int32))),
    Program("round", lambda n: lambda x: (n.lax.round(x), n.lax.round(x, 1)),
            (np.array([0.5, 1.5, -0.5, -2.5, 2.4], np.float32),)),
    Program("nan_max", lambda n: lambda x: (n.lax.max(x, 0.0), n.lax.reduce_max(x, (0,))),
            (np.array([np.nan, 1.0, -1.0], np.float32),)),
    Program("bits", lambda n: lambda x: (n.lax.shift_left(x, 3), n.lax.shift_right_logical(
        x, 1), n.lax.population_count(x), ~x), (I,)),
    Program("unsigned_sign", lambda n: lambda x: n.lax.sign(x), (np.array([0, 3], np.uint32),)),
    Program("half_floats", lambda n: lambda x: (x * 2 + 1, n.jnp.exp(x), x.sum()),
            (V.astype(np.float16),)),
    Program("dead_code", lambda n: lambda x: (n.jnp.sin(x), x * 2)[1], (V,)),
    Program("unused_argument", lambda n: lambda x, y, z: x * z, (1.0, V, 3.0)),
    Program("jit_twice", _jit_twice, (V,)),
    Program("jit_in_scan", _jit_in_scan, (V,)),
    Program("jit_in_cond", _jit_in_cond, (V,)),
    Program("jit_in_jit", _jit_in_jit, (V,)),
    Program("jit_dead_output", _jit_dead_output, (V,)),
    Program("custom_jvp", _custom_jvp, (V,)),
    Program("custom_vjp_grad", _custom_vjp_grad, (V,)),
    Program("grad_through_cond", _grad_through_cond, (V,)),
    Program("grad_through_cond_other_branch", _grad_through_cond, (-V,)),
    Program("grad_hoisting_scan_residuals", _grad_hoisting_scan_residuals, (V, V)),
    Program("mlp_value_and_grad", _mlp_value_and_grad, ((W, V[:3]), F), False),
    Program("cholesky", lambda n: lambda a: n.lax.linalg.cholesky(a), (SPD,), False),
    Program("eigh", lambda n: lambda a: n.lax.linalg.eigh(a), (SPD,)),
    Program("qr", lambda n: lambda a: n.lax.linalg.qr(a, full_matrices=False), (F,)),
    Program("svd", lambda n: lambda a: n.lax.linalg.svd(a), (F,)),
    Program("triangular_solve", lambda n: lambda a, b: n.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), (SPD, SPD)),
    Program("eigh_batched", lambda n: lambda a: n.lax.linalg.eigh(a), (np.stack([SPD, 2 * SPD]),)),
    Program("eigh_complex", lambda n: lambda a: n.lax.linalg.eigh(a), (HERMITIAN,), False),
    Program("svd_batched", lambda n: lambda a: n.lax.linalg.svd(a, full_matrices=False),
            (np.stack([F, 2 * F]),)),
    Program("singular_values", lambda n: lambda a: n.lax.linalg.svd(a, compute_uv=False), (F,)),
    Program("qr_batched", lambda n: lambda a: n.lax.linalg.qr(a), (np.stack([F, 2 * F]),)),
    Program("qr_wide", lambda n: lambda a: n.lax.linalg.qr(a), (F.T.copy(),)),
    Program("solve_batched", lambda n: lambda a, b: n.lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True, transpose_a=True), (np.stack([SPD, SPD]),) * 2),
    Program("lu", lambda n: lambda a: n.lax.linalg.lu(a), (SPD,), False),
    Program("lu_wide", lambda n: lambda a: n.lax.linalg.lu(a), (F,), False),
    Program("where", lambda n: lambda x: n.jnp.where(x > 0, x, 0.0), (V,), False),
]
BY_NAME = {p.name: p for p in PROGRAMS}
EXACT = [p for p in PROGRAMS if p.same_text]


def lower_program(program: Program) -> tuple[Any, str, list[np.ndarray]]:
    """(minijax's closed jaxpr, its StableHLO text, the arguments ``main`` takes)."""
    fun = program.fun(MINI)
    closed = minijax.make_jaxpr(fun)(*program.args)
    text = lowering.lower_jaxpr(closed, module_name=lowering.module_name(program.name))
    used = lowering.used_inputs(closed)
    args = [x for x, u in zip(tree_leaves(program.args), used) if u]
    return closed, text, args


def expected_outputs(closed: Any, program: Program) -> list[np.ndarray]:
    """What eager minijax computes: the jaxpr, evaluated op by op."""
    return [np.asarray(v) for v in eval_closed_jaxpr(closed, *tree_leaves(program.args))]


def assert_same_outputs(outs: list[np.ndarray], expected: list[np.ndarray],
                        rtol: float = 2e-5) -> None:
    assert len(outs) == len(expected)
    for i, (out, want) in enumerate(zip(outs, expected)):
        assert type(out) is np.ndarray, f"output {i} is a {type(out).__name__}"
        assert (out.dtype, out.shape) == (want.dtype, want.shape), f"output {i}"
        if out.dtype.kind in "fc" and out.dtype.itemsize >= 4:
            np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(out.astype(np.float64) if out.dtype.kind == "V"
                                          else out, want, err_msg=f"output {i}")


def run(program: Program, compile_text: Any = numpy_backend.compile) -> tuple[list, list]:
    closed, text, args = lower_program(program)
    executable = compile_text(text)
    args = [np.asarray(a, dtype=aval.dtype) for a, aval in zip(args, executable.in_avals)]
    return executable(*args), expected_outputs(closed, program)


# ---------------------------------------------------------------------------------------
# Generated code computes what eager minijax computes
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_generated_code_matches_eager(program: Program) -> None:
    outs, expected = run(program)
    assert_same_outputs(outs, expected)


@pytest.mark.parametrize("name", ["sin_mul_add", "while", "sort_keys", "gather_fill"])
def test_unoptimised_code_matches_too(name: str) -> None:
    """Without any pass, the code generator alone gives the same results."""
    program = BY_NAME[name]
    outs, expected = run(program, lambda text: numpy_backend.compile(text, pipeline=()))
    assert_same_outputs(outs, expected)


def test_executable_interface() -> None:
    _, text, _ = lower_program(BY_NAME["tuple_out"])
    executable = numpy_backend.compile(text)
    assert [a.str_short() for a in executable.in_avals] == ["f32[5]"]
    assert [a.str_short() for a in executable.out_avals] == ["f32[5]", "f32[5]"]
    assert executable.as_text().startswith("import numpy as np")
    assert print_module(parse_module(executable.optimized_ir())) == executable.optimized_ir()
    outs = executable(V)
    assert isinstance(outs, list) and len(outs) == 2


def test_scalar_outputs_are_arrays() -> None:
    outs, _ = run(BY_NAME["sum_all"])
    assert type(outs[0]) is np.ndarray and outs[0].shape == ()


# ---------------------------------------------------------------------------------------
# XLA's semantics where NumPy's differ
# ---------------------------------------------------------------------------------------


def _compile_fun(fun: Any, *args: Any) -> tuple[Any, list]:
    closed = minijax.make_jaxpr(fun)(*args)
    text = lowering.lower_jaxpr(closed, module_name="jit_f", keep_unused=True)
    return numpy_backend.compile(text), [np.asarray(a) for a in tree_leaves(args)]


def test_integer_division_rounds_toward_zero_and_by_zero_is_minus_one() -> None:
    exe, args = _compile_fun(mlax.div, np.array([7, -7, 3], np.int32), np.array([2, 2, 0],
                                                                               np.int32))
    assert exe(*args)[0].tolist() == [3, -3, -1]


def test_float_to_int_saturates_and_nan_is_zero() -> None:
    x = np.array([1e10, -1e10, np.nan, 2.7, -2.7], np.float32)
    exe, args = _compile_fun(lambda x: x.astype(np.int32), x)
    info = np.iinfo(np.int32)
    assert exe(*args)[0].tolist() == [info.max, info.min, 0, 2, -2]


def test_gather_clamps_and_scatter_drops_out_of_bounds() -> None:
    x = np.arange(5, dtype=np.float32)
    idx = np.array([7, -9], np.int32)
    exe, args = _compile_fun(lambda x, i: mlax.dynamic_slice(x, (i[0],), (2,)), x, idx)
    assert exe(*args)[0].tolist() == [3.0, 4.0]
    exe, args = _compile_fun(lambda x, i: x.at[i].set(9.0), x, np.array([1, 9], np.int32))
    assert exe(*args)[0].tolist() == [0.0, 9.0, 2.0, 3.0, 4.0]


def test_sort_puts_nans_last() -> None:
    x = np.array([np.nan, 2.0, -np.inf, 1.0], np.float32)
    exe, args = _compile_fun(mlax.sort, x)
    np.testing.assert_array_equal(exe(*args)[0], [-np.inf, 1.0, 2.0, np.nan])


# ---------------------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_parse_print_round_trip(program: Program) -> None:
    _, text, _ = lower_program(program)
    assert print_module(parse_module(text)) == text


def test_parser_reports_the_line() -> None:
    _, text, _ = lower_program(BY_NAME["sin_mul_add"])
    broken = text.replace("stablehlo.sine", "stablehlo.sinus")
    with pytest.raises(SyntaxError, match=r"line 3: unknown operation stablehlo.sinus"):
        parse_module(broken)
    with pytest.raises(SyntaxError, match="use of undefined value %9"):
        parse_module(text.replace("%0, %2", "%9, %2"))


def test_parser_checks_types() -> None:
    _, text, _ = lower_program(BY_NAME["sin_mul_add"])
    with pytest.raises(SyntaxError, match="do not match"):
        parse_module(text.replace("stablehlo.multiply %0, %2 : tensor<5xf32>",
                                  "stablehlo.multiply %0, %2 : tensor<4xf32>"))


def test_parsed_graph_structure() -> None:
    _, text, _ = lower_program(BY_NAME["while"])
    module = parse_module(text)
    (main,) = module.funcs
    loop = next(op for op in main.body.ops if op.name == "stablehlo.while")
    cond, body = loop.regions
    assert len(loop.operands) == len(cond.args) == len(body.args) == 2
    assert cond.terminator.name == "stablehlo.return"
    assert main.body.terminator.operands == loop.results


# ---------------------------------------------------------------------------------------
# The passes, one by one
# ---------------------------------------------------------------------------------------


def _module(fun: Any, *args: Any) -> Any:
    closed = minijax.make_jaxpr(fun)(*args)
    return parse_module(lowering.lower_jaxpr(closed, module_name="jit_f"))


def _names(module: Any) -> list[str]:
    return [op.name for op in walk_ops(module.funcs[0].body)]


def test_inlining_replaces_calls_by_bodies() -> None:
    module = _module(lambda x: (mlax.argmax(x, 0, np.int32), mlax.cumsum(x, 1)), F)
    assert [f.name for f in module.funcs] == ["main", "argmax", "cumsum"]
    passes.inline_calls(module)
    assert "func.call" not in _names(module)
    assert "stablehlo.reduce" in _names(module) and "stablehlo.reduce_window" in _names(module)
    passes.dead_code_elimination(module)
    assert [f.name for f in module.funcs] == ["main"]


def test_cse_merges_repeated_constants_and_ops() -> None:
    module = _module(lambda x: (x * 2.0) + (x * 2.0), V)
    before = _names(module)
    assert before.count("stablehlo.constant") == 2 and before.count("stablehlo.multiply") == 2
    passes.common_subexpression_elimination(module)
    after = _names(module)
    assert after.count("stablehlo.constant") == 1 and after.count("stablehlo.multiply") == 1


def test_cse_does_not_share_between_sibling_regions() -> None:
    module = _module(lambda x: mlax.cond(x[0] > 0, lambda: x * 3.0, lambda: x * 3.0), V)
    passes.common_subexpression_elimination(module)
    case = next(op for op in walk_ops(module.funcs[0].body) if op.name == "stablehlo.case")
    assert all(any(o.name == "stablehlo.multiply" for o in r.ops) for r in case.regions)


def test_constant_folding_makes_splats() -> None:
    module = _module(lambda x: x + mlax.full((5,), 2.0) * 3.0, V)
    passes.constant_folding(module, numpy_backend.evaluate)
    passes.dead_code_elimination(module)
    names = _names(module)
    assert names == ["stablehlo.constant", "stablehlo.add", "func.return"]
    text = print_module(module)
    assert "stablehlo.constant dense<6.000000e+00> : tensor<5xf32>" in text


def test_constant_folding_keeps_large_non_splats() -> None:
    module = _module(lambda: mlax.iota(np.float32, 5000) * 2.0)
    passes.constant_folding(module, numpy_backend.evaluate)
    assert "stablehlo.iota" in _names(module)


def test_dce_removes_unused_ops_and_functions() -> None:
    module = _module(lambda x: (mlax.argmax(x, 0, np.int32), x + 1.0)[1], F)
    # Lowering already dropped the argmax (dead in the jaxpr); make some dead code here.
    main = module.funcs[0]
    main.body.ops.insert(0, Op("stablehlo.sine", [main.body.args[0]], [main.body.args[0].type]))
    passes.dead_code_elimination(module)
    assert "stablehlo.sine" not in _names(module)
    module = parse_module(lowering.lower_jaxpr(
        minijax.make_jaxpr(lambda x: mlax.argmax(x, 0, np.int32))(F), module_name="jit_f"))
    module.funcs[0].body.ops[-1].operands = list(module.funcs[0].body.args)
    module.funcs[0].result_types = [module.funcs[0].body.args[0].type]
    passes.dead_code_elimination(module)
    assert [f.name for f in module.funcs] == ["main"]


def test_fusion_groups_elementwise_chains() -> None:
    module = _module(lambda x, y: mjnp.tanh(x * y + 1.0) - y, V, V)
    numpy_backend.run_passes(module)
    main = module.funcs[0]
    assert [op.name for op in main.body.ops] == ["stablehlo.constant", "minijax.fusion",
                                                 "func.return"]
    fusion = main.body.ops[1]
    inner = [op.name for op in fusion.regions[0].ops]
    assert inner == ["stablehlo.multiply", "stablehlo.add", "stablehlo.tanh",
                     "stablehlo.subtract", "stablehlo.return"]
    assert '"minijax.fusion"(%arg0, %arg1, %cst)' in print_module(module)


def test_fusion_stops_at_values_used_twice() -> None:
    module = _module(lambda x: ((mjnp.exp(x) + 1.0) * 3.0, mjnp.exp(x) * 2.0 - 1.0), V)
    numpy_backend.run_passes(module)
    ops = [op.name for op in module.funcs[0].body.ops]
    assert ops.count("minijax.fusion") == 2 and "stablehlo.exponential" in ops


def test_deep_chains_are_cut_into_several_fusions() -> None:
    def chain(x):
        for _ in range(100):
            x = mjnp.sin(x) * 1.01 + 0.1
        return x

    module = _module(chain, V)
    numpy_backend.run_passes(module)
    fusions = [op for op in module.funcs[0].body.ops if op.name == "minijax.fusion"]
    assert len(fusions) == 300 // passes.MAX_FUSION_DEPTH + 1
    exe, args = _compile_fun(chain, V)
    np.testing.assert_allclose(exe(*args)[0], chain(V), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# The generated code is readable, and fast where it matters
# ---------------------------------------------------------------------------------------


def _source(name: str) -> str:
    _, text, _ = lower_program(BY_NAME[name])
    return numpy_backend.compile(text).as_text()


def test_generated_code_reads_like_numpy() -> None:
    source = _source("mlp_loss")
    assert "def main(arg0, arg1, arg2):" in source
    assert "np.matmul(arg0, arg1)" in source
    assert "np.tanh(np.add(v0, arg2.reshape((1, 3)), out=v0), out=v0)" in source
    assert "np.add.reduce(" in source


def test_control_flow_becomes_python_control_flow() -> None:
    assert "while True:" in _source("while") and "break" in _source("while")
    switch = _source("switch")
    assert re.search(r"if index_v\d+ == 0:\n.*\n\s+elif index_v\d+ == 1:", switch)
    assert "else:" in switch
    scan = _source("scan")  # inlined helpers; the ys buffer is made once, then updated
    assert "def f_" not in scan and "np.zeros((5,), np.float32)" in scan
    # the counter is a Python int known to lie in [0, 5): it indexes without a clamp
    assert re.search(r"iterArg_\d+\[iterArg:iterArg \+ 1\] = v\d+", scan)
    assert "min(max(" not in scan


def test_fused_chain_reuses_one_buffer() -> None:
    source = _source("sin_mul_add")
    assert "(v0 := np.sin(arg0))" in source and source.count("out=v0") == 2


def test_known_region_bodies_use_numpy_routines() -> None:
    assert "np.add.accumulate" in _source("cumulative")
    assert "k_sort(" in _source("sort_keys")
    assert "np.add.at" in _source("scatter_add")


# ---------------------------------------------------------------------------------------
# General regions: the slow, general fallbacks
# ---------------------------------------------------------------------------------------

_GENERIC = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
     reducer(%arg2: tensor<f32>, %arg3: tensor<f32>)  {
      %3 = stablehlo.multiply %arg3, %arg3 : tensor<f32>
      %4 = stablehlo.add %arg2, %3 : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }
    %1 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %3 = stablehlo.compare GT, %arg2, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %c = stablehlo.constant dense<[[0], [0], [3]]> : tensor<3x1xi32>
    %cst_0 = stablehlo.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
    %2 = "stablehlo.scatter"(%arg0, %c, %cst_0) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %3 = stablehlo.multiply %arg2, %arg3 : tensor<f32>
      %4 = stablehlo.add %3, %arg3 : tensor<f32>
      stablehlo.return %4 : tensor<f32>
    }) : (tensor<4xf32>, tensor<3x1xi32>, tensor<3xf32>) -> tensor<4xf32>
    return %0, %1, %2 : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}
"""  # noqa: E501


def test_general_reduce_sort_and_scatter_regions() -> None:
    assert print_module(parse_module(_GENERIC)) == _GENERIC
    executable = numpy_backend.compile(_GENERIC)
    x = np.array([3.0, 1.0, 4.0, 2.0], np.float32)
    total, ordered, scattered = executable(x, np.zeros(4, np.int32))
    assert total == np.float32(30.0)
    assert ordered.tolist() == [4.0, 3.0, 2.0, 1.0]  # a descending comparator
    # element 0: (3*1 + 1) then (4*2 + 2); element 3: 2*3 + 3
    assert scattered.tolist() == [10.0, 1.0, 4.0, 9.0]
    assert "reduce_generic(" in executable.as_text()
    assert "sort_generic(" in executable.as_text()


def test_unknown_custom_call_is_a_clear_error() -> None:
    text = _GENERIC.replace('%1 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = '
                            'true}> ({', '%1 = stablehlo.custom_call @mystery(%arg0) : '
                            '(tensor<4xf32>) -> tensor<4xf32>\n    %9 = "stablehlo.sort"(%arg0)'
                            ' <{dimension = 0 : i64, is_stable = true}> ({')
    with pytest.raises(NotImplementedError, match="'mystery'"):
        numpy_backend.compile(text)
