"""Comparing minijax with real JAX, the oracle.

A conformance test writes a *program* once, as a function of a namespace that holds
``jnp``, ``lax`` and ``jax``; :func:`run_both` runs it against minijax and against JAX
and :func:`assert_same` compares the two results leaf by leaf: values (with tolerances
that depend on the dtype), shapes, dtypes and weak types. Errors are compared too: the
same exception class must be raised on both sides.

JAX is a test dependency; tests that use this module should start with
``jax = pytest.importorskip("jax")`` so that they skip where it is not installed.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax


def namespaces() -> tuple[types.SimpleNamespace, types.SimpleNamespace]:
    """(minijax's, JAX's) namespaces with ``jax``, ``jnp``, ``lax`` and ``np``."""
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax

    ours = types.SimpleNamespace(jax=minijax, jnp=mjnp, lax=mlax, np=np)
    theirs = types.SimpleNamespace(jax=jax, jnp=jjnp, lax=jlax, np=np)
    return ours, theirs


def run(program: Callable[[Any], Any], ns: Any) -> tuple[str, Any]:
    """("ok", result) or ("error", exception)."""
    try:
        return "ok", program(ns)
    except Exception as e:  # noqa: BLE001 - the error is the result being compared
        return "error", e


def run_both(program: Callable[[Any], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    ours, theirs = namespaces()
    return run(program, ours), run(program, theirs)


# (rtol, atol) by dtype name: a few units in the last place of each dtype. JAX's own
# results move by that much from one CPU to another (float16 and bfloat16 run natively
# on some CPUs and in float32 inside fusions on others; BLAS and reductions sum in an
# order that depends on the machine), so a comparison is never tighter than this.
TOLERANCES = {
    "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float32": (2e-6, 2e-6),
    "float64": (1e-12, 1e-12), "complex64": (2e-6, 2e-6), "complex128": (1e-12, 1e-12),
}


def tolerances(dtype_name: str, rtol: float | None = None,
               atol: float | None = None) -> tuple[float, float]:
    """The (rtol, atol) that values of ``dtype_name`` are compared with.

    A test may loosen the dtype's tolerance (a long accumulation, an ill-conditioned
    matrix) but not tighten it: ``rtol=2e-5`` asked of a float16 result would demand
    a precision float16 does not have. Integers and bools have no tolerance (0, 0).
    """
    floor_rtol, floor_atol = TOLERANCES.get(dtype_name, (0.0, 0.0))
    return max(floor_rtol, rtol or 0.0), max(floor_atol, atol or 0.0)


def _leaves(tree: Any) -> list[Any]:
    return minijax.tree_util.tree_leaves(tree)


def assert_same_leaf(ours: Any, theirs: Any, rtol: float | None = None,
                     atol: float | None = None, where: str = "", exact: bool = False) -> None:
    """Same type of thing, shape, dtype, weak type and (close enough) values.

    Floats are compared with :func:`tolerances`, or bit for bit with ``exact=True``,
    which a test says only of a result that is exact by construction (small integers
    added and multiplied, say): no machine may round it differently.
    """
    ours_is_array = isinstance(ours, minijax.Array)
    theirs_is_array = hasattr(theirs, "aval") or type(theirs).__name__ == "ArrayImpl"
    assert ours_is_array == theirs_is_array, (
        f"{where}: minijax gave {type(ours).__name__}, JAX gave {type(theirs).__name__}"
    )
    if not ours_is_array:
        if isinstance(theirs, float) and np.isnan(theirs):
            assert isinstance(ours, float) and np.isnan(ours), f"{where}: {ours} vs nan"
        else:
            assert ours == theirs, f"{where}: minijax {ours!r} vs JAX {theirs!r}"
        return
    assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} vs JAX {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} vs JAX {theirs.dtype}"
    assert ours.weak_type == theirs.weak_type, (
        f"{where}: weak_type {ours.weak_type} vs JAX {theirs.weak_type}"
    )
    a = np.asarray(ours)
    b = np.asarray(theirs)
    if a.dtype.kind in "fcV":
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        rtol, atol = (0.0, 0.0) if exact else tolerances(ours.dtype.name, rtol, atol)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(a, b, err_msg=where)


def assert_same(ours: tuple[str, Any], theirs: tuple[str, Any], rtol: float | None = None,
                atol: float | None = None, exact: bool = False) -> None:
    """Compare two :func:`run` results: both errors of one class, or equal pytrees
    (values compared as :func:`assert_same_leaf` does)."""
    (our_kind, our_value), (their_kind, their_value) = ours, theirs
    if their_kind == "error" or our_kind == "error":
        assert our_kind == their_kind, (
            f"minijax {our_kind}: {our_value!r}; JAX {their_kind}: {their_value!r}"
        )
        assert _error_family(our_value) == _error_family(their_value), (
            f"minijax raised {type(our_value).__name__}: {our_value}\n"
            f"JAX raised {type(their_value).__name__}: {their_value}"
        )
        return
    our_leaves, their_leaves = _leaves(our_value), _leaves(their_value)
    assert len(our_leaves) == len(their_leaves), (
        f"{len(our_leaves)} leaves vs JAX {len(their_leaves)}"
    )
    for i, (a, b) in enumerate(zip(our_leaves, their_leaves)):
        assert_same_leaf(a, b, rtol, atol, where=f"leaf {i}", exact=exact)


def _error_family(error: Exception) -> str:
    """The class name, after JAX's private wrappers (e.g. JaxRuntimeError) are unwrapped."""
    return type(error).__name__


def check_program(program: Callable[[Any], Any], rtol: float | None = None,
                  atol: float | None = None, exact: bool = False) -> None:
    """Run ``program`` on both and compare: the one-line body of most conformance tests."""
    assert_same(*run_both(program), rtol=rtol, atol=atol, exact=exact)


def assert_same_error(program: Callable[[Any], Any], error_class: type[Exception] = Exception,
                      words: Sequence[str] = ()) -> None:
    """The body of a "bad input" test: JAX raises ``error_class`` (or a subclass), minijax
    an error of the same class as JAX's, whose message holds each of ``words``."""
    (ours_kind, ours), (theirs_kind, theirs) = run_both(program)
    assert theirs_kind == "error" and isinstance(theirs, error_class), theirs
    assert ours_kind == "error" and _error_family(ours) == _error_family(theirs), ours
    for word in words:
        assert word in str(ours), (word, str(ours))


def check_jaxpr(fun: Callable[[Any], Callable[..., Any]], *args: Any) -> None:
    """``make_jaxpr(fun(ns))(*args)`` prints the same text in minijax and in JAX: the
    same primitives, in the same order, with the same parameters and ``jit`` wrappers."""
    ours, theirs = namespaces()
    expected = str(theirs.jax.make_jaxpr(fun(theirs))(*args))
    got = str(ours.jax.make_jaxpr(fun(ours))(*args))
    assert got == expected, f"minijax's jaxpr:\n{got}\nJAX's:\n{expected}"


def array_of(value: Any) -> Callable[[Any], Any]:
    """A piece of a program: ``value`` as an array of whichever library runs it."""
    return lambda ns: ns.jnp.asarray(value)


def jax_jitted(program: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``program``, run by JAX under ``jax.jit`` (minijax runs it as it is).

    JAX's op-by-op mode compiles every operation it meets, so a program that makes
    hundreds of small operations (a Hessian, a fourth derivative) takes seconds; under
    ``jit`` it is compiled once. Values agree to the usual tolerances. Not for programs
    that raise, or that use Python control flow on traced values.
    """
    return lambda ns: program(ns) if ns.jax is minijax else ns.jax.jit(lambda: program(ns))()


def assert_traced_matches_eager(fun: Callable[..., Any], *args: Any) -> None:
    """Trace ``fun`` with minijax, evaluate the jaxpr, and compare with calling ``fun``
    eagerly: same shapes, dtypes, weak types and (bit for bit) the same values."""
    from minijax.jaxpr import eval_closed_jaxpr

    expected = _leaves(fun(*args))
    traced = eval_closed_jaxpr(minijax.make_jaxpr(fun)(*args), *_leaves(args))
    assert len(traced) == len(expected)
    for i, (a, b) in enumerate(zip(traced, expected)):
        assert a.aval == b.aval, f"leaf {i}: traced {a.aval} vs eager {b.aval}"
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "V":  # bfloat16: NumPy's testing cannot see its NaNs
            a, b = a.astype(np.float32), b.astype(np.float32)
        np.testing.assert_array_equal(a, b, err_msg=f"leaf {i}")


def primitive_names(closed_jaxpr: Any) -> list[str]:
    """The primitives of a (minijax or JAX) jaxpr in order, looking inside ``jit``
    equations: what a computation does, whichever functions are wrapped in ``jit``."""
    names = []
    for eqn in closed_jaxpr.eqns:
        inner = eqn.params.get("jaxpr") if eqn.primitive.name in ("jit", "pjit") else None
        names += primitive_names(inner) if inner is not None else [eqn.primitive.name]
    return names


@contextlib.contextmanager
def x64_mode() -> Iterator[None]:
    """Run a block with ``jax_enable_x64`` on, in minijax and in JAX."""
    import jax

    minijax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        minijax.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)
