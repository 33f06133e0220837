"""A primitive of one's own: ``cube``, declared here and nowhere in minijax.

Everything a primitive needs is registered from this file, with the helpers the base
set uses for its own primitives (``minijax.lax.base``): the NumPy kernel, a shape rule
with ``lax``'s dtype checks, a JVP rule built with ``defjvp``, and a lowering to
existing StableHLO ops (two ``stablehlo.multiply``). No transpose rule is needed: cube is
not linear, and its JVP is written with ``mul``, whose transpose the base set has. With
that, the primitive works eagerly, under ``jit`` (on the NumPy backend and on real XLA),
under ``grad`` and ``grad(grad)``.
"""

from __future__ import annotations

import functools
import pathlib

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.compiler import jit_primitive, lowering, numpy_backend, xla_backend
from minijax.compiler.stablehlo_ir import print_module
from minijax.core import Primitive
from minijax.lax.base import INEXACT, defjvp, operand, unary_rule
from tests.oracle import tolerances

F32 = dict(zip(("rtol", "atol"), tolerances("float32")))  # the dtype's precision

cube_p = Primitive("cube")
cube_p.def_impl(lambda x: x * x * x)
cube_p.def_abstract_eval(functools.partial(unary_rule, "cube", INEXACT, None))


def cube(x):
    """x ** 3, elementwise."""
    return cube_p.bind(operand(x, cube_p))


# d(x³) = 3x² dx, written with lax functions so that it can be differentiated again.
defjvp(cube_p, lambda t, out, x: lax.mul(t, lax.mul(lax.full_like(x, 3, shape=()),
                                                    lax.mul(x, x))))


@lowering.register(cube_p)
def _cube_lowering(ctx: lowering.RuleContext, x):
    square = ctx.b.emit("stablehlo.multiply", x, x)
    return ctx.b.emit("stablehlo.multiply", square, x)


X = np.array([-1.5, 0.0, 0.5, 2.0], np.float32)


def test_minijax_itself_knows_nothing_of_cube() -> None:
    """The primitive and its rules are this file's: no minijax module names them."""
    package = pathlib.Path(minijax.__file__).parent
    assert not [path for path in package.rglob("*.py") if "cube_p" in path.read_text()]


def test_eager() -> None:
    out = cube(X)
    assert out.dtype == np.float32 and out.shape == (4,)
    np.testing.assert_allclose(np.asarray(out), X ** 3, **F32)


def test_shape_rule_checks_dtypes_as_lax_does() -> None:
    with pytest.raises(TypeError, match="cube does not accept dtype int32. Accepted dtypes "
                                        "are subtypes of floating, complexfloating."):
        cube(np.arange(3, dtype=np.int32))


def test_jaxpr_shows_the_primitive() -> None:
    jaxpr = str(minijax.make_jaxpr(lambda x: cube(x) + 1.0)(X))
    assert "cube" in jaxpr and "add" in jaxpr


def test_jit_on_the_numpy_backend() -> None:
    out = minijax.jit(lambda x: cube(x) * 2.0)(X)
    np.testing.assert_allclose(np.asarray(out), 2 * X ** 3, **F32)


def _lowered(fun, *args) -> str:
    return lowering.lower_jaxpr(minijax.make_jaxpr(fun)(*args), module_name="jit_f")


def test_lowering_is_stablehlo_the_numpy_backend_parses() -> None:
    text = _lowered(cube, X)
    assert text.count("stablehlo.multiply") == 2
    # The NumPy backend compiles from the text: it must parse back.
    (out,) = numpy_backend.compile(text)(X)
    np.testing.assert_allclose(out, X ** 3, **F32)


@pytest.mark.skipif(not xla_backend.available(), reason="no usable JAX")
def test_real_xla_accepts_the_lowering() -> None:
    (out,) = xla_backend.compile(_lowered(cube, X))(X)
    np.testing.assert_allclose(out, X ** 3, **F32)


@pytest.mark.skipif(not xla_backend.available(), reason="no usable JAX")
def test_jit_on_the_xla_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """``jit`` with real XLA as its compiler: the lowering, then XLA, then the result."""
    compiled = []

    def compile_module(module):
        compiled.append(module)
        return xla_backend.compile(print_module(module))

    monkeypatch.setattr(jit_primitive, "_backend",
                        jit_primitive.Backend(compile_module, xla_backend.compile))
    out = minijax.jit(lambda x: cube(x) - x)(X)
    assert compiled, "jit did not compile through the XLA backend"
    np.testing.assert_allclose(np.asarray(out), X ** 3 - X, **F32)


def test_grad() -> None:
    g = minijax.grad(lambda x: cube(x).sum())(X)
    np.testing.assert_allclose(np.asarray(g), 3 * X ** 2, **F32)


def test_grad_of_grad() -> None:
    d2 = minijax.grad(lambda x: minijax.grad(lambda y: cube(y).sum())(x).sum())(X)
    np.testing.assert_allclose(np.asarray(d2), 6 * X, **F32)


def test_grad_under_jit() -> None:
    g = minijax.jit(minijax.grad(lambda x: cube(x).sum()))(X)
    np.testing.assert_allclose(np.asarray(g), 3 * X ** 2, **F32)
