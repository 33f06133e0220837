"""minijax.dtypes against real JAX (the oracle), plus the laws of the promotion lattice.

Every expected answer is computed live by JAX under the same flags, never copied into a
table: for each pair of operands we compare the value (or the error class and message)
and the warnings both libraries give.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minijax import config
from minijax import dtypes as mdt

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_dtypes_internal = pytest.importorskip("jax._src.dtypes")  # dtype(), is_weakly_typed()

DTYPES = mdt.SUPPORTED_DTYPES
PY_TYPES = (bool, int, float, complex)
PY_SCALARS = (True, 1, 1.0, 1j)


# --------------------------------------------------------------------------------------
# Flags: set JAX and minijax together, and always restore both.
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def flags(x64: bool | None = None, mode: str | None = None) -> Iterator[None]:
    """Run a block with the same flags in JAX and minijax (``None`` leaves one alone)."""
    saved = (
        jax.config.jax_enable_x64,
        jax.config.jax_numpy_dtype_promotion,
        config.jax_enable_x64,
        config.jax_numpy_dtype_promotion,
    )
    try:
        if x64 is not None:
            jax.config.update("jax_enable_x64", x64)
            config.update("jax_enable_x64", x64)
        if mode is not None:
            jax.config.update("jax_numpy_dtype_promotion", mode)
            config.update("jax_numpy_dtype_promotion", mode)
        yield
    finally:
        jax.config.update("jax_enable_x64", saved[0])
        jax.config.update("jax_numpy_dtype_promotion", saved[1])
        config.update("jax_enable_x64", saved[2])
        config.update("jax_numpy_dtype_promotion", saved[3])


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request: pytest.FixtureRequest) -> Iterator[bool]:
    with flags(x64=request.param):
        yield request.param


@pytest.fixture(params=["standard", "strict"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    with flags(mode=request.param):
        yield request.param


# --------------------------------------------------------------------------------------
# Outcomes: what a call returns or raises, and which warnings it gives.
# --------------------------------------------------------------------------------------

_DTYPE_TUPLE = re.compile(r"Input dtypes (\(.*?\)) have")


def _order_free(message: str) -> str:
    """JAX lists the dtypes of a failed promotion in set order; compare them sorted."""
    match = _DTYPE_TUPLE.search(message)
    if not match:
        return message
    listed = tuple(sorted(ast.literal_eval(match.group(1))))
    return message.replace(match.group(1), repr(listed))


def outcome(fn: Callable[..., Any], *args: Any, exact: bool = True, **kwargs: Any) -> tuple:
    """``(result, warnings)`` of ``fn(*args, **kwargs)``; an error becomes its class,
    builtin base class and message. ``exact=False`` ignores the order of listed dtypes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: tuple = ("value", fn(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 - the error is the outcome under test
            builtin_bases = [c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"]
            message = str(err) if exact else _order_free(str(err))
            result = ("raises", type(err).__name__, builtin_bases[0], message)
    return result, [(w.category, str(w.message)) for w in caught]


def assert_same(label: str, ours: tuple, theirs: tuple) -> None:
    assert ours == theirs, f"{label}:\n  minijax: {ours}\n  jax:     {theirs}"


def assert_all_same(cases: list[tuple[str, tuple, tuple]]) -> None:
    """Compare many ``(label, ours, theirs)`` cases and report every mismatch at once."""
    wrong = [
        f"{label}\n  minijax: {ours}\n  jax:     {theirs}"
        for label, ours, theirs in cases
        if ours != theirs
    ]
    assert not wrong, "\n".join(wrong)


# --------------------------------------------------------------------------------------
# Operands: a pool of values and dtype-likes of every kind that result_type accepts.
# --------------------------------------------------------------------------------------


class WeakDuck:
    """A weakly typed value of any dtype, readable by both libraries (JAX looks at .aval)."""

    weak_type = True

    def __init__(self, dt: Any) -> None:
        self.dtype = np.dtype(dt)
        self.aval = self

    def __repr__(self) -> str:
        return f"WeakDuck({self.dtype})"


def _name(dt: Any) -> str:
    return np.dtype(dt).name


def _made_with(x64_on: bool, make: Callable[[], Any]) -> Callable[[], Any]:
    def build() -> Any:
        with flags(x64=x64_on):
            return make()

    return build


OPERAND_MAKERS: dict[str, Callable[[], Any]] = {
    **{f"type-{_name(t)}": (lambda t=t: t) for t in DTYPES},
    **{f"py-{v!r}": (lambda v=v: v) for v in PY_SCALARS},
    **{f"pytype-{t.__name__}": (lambda t=t: t) for t in PY_TYPES},
    **{f"np-{_name(t)}": (lambda t=t: np.ones((), t)) for t in DTYPES},
    # JAX arrays made with x64 on keep their 64-bit dtype when x64 is switched off.
    **{f"jax-{_name(t)}": _made_with(True, lambda t=t: jnp.ones((), t)) for t in DTYPES},
    **{f"jaxweak-{v!r}-x64": _made_with(True, lambda v=v: jnp.asarray(v)) for v in (1, 1.0, 1j)},
    **{f"jaxweak-{v!r}-x32": _made_with(False, lambda v=v: jnp.asarray(v)) for v in (1, 1.0, 1j)},
    # Weak values of non-default widths (JAX makes them inside lax). Only dtypes that
    # exist with x64 off: JAX would shrink the dtype of a 64-bit duck, minijax keeps it.
    **{f"weak-{_name(t)}": (lambda t=t: WeakDuck(t)) for t in DTYPES if np.dtype(t).itemsize < 8},
    "None": lambda: None,
}


# JAX warns "Explicitly requested dtype int64 ..." when, with x64 off, it shrinks the
# promoted dtype of arrays that were made 64-bit while x64 was on, although nobody asked
# for that dtype. minijax deliberately stays silent there, so those warnings are not
# compared.
MADE_WITH_X64 = {n for n in OPERAND_MAKERS if n.startswith("jax-") or n.endswith("-x64")}


def comparable(result: tuple, names: list[str]) -> tuple:
    if config.jax_enable_x64 or not MADE_WITH_X64.intersection(names):
        return result
    return result[0], "warnings not compared"


@functools.cache
def operand(name: str) -> Any:
    return OPERAND_MAKERS[name]()


def jax_result_type(*args: Any) -> tuple:
    return jax.dtypes.result_type(*args, return_weak_type_flag=True)


def our_result_type(*args: Any) -> tuple:
    return mdt.result_type(*args, return_weak_type_flag=True)


# --------------------------------------------------------------------------------------
# promote_types and result_type, pair by pair.
# --------------------------------------------------------------------------------------

SPECIFIERS = DTYPES + PY_TYPES


@pytest.mark.parametrize("a", SPECIFIERS, ids=lambda t: getattr(t, "__name__", str(t)))
def test_promote_types_matches_jax(a: Any, x64: bool, mode: str) -> None:
    cases = [
        (f"({a}, {b})", outcome(mdt.promote_types, a, b), outcome(jnp.promote_types, a, b))
        for b in SPECIFIERS
    ]
    assert_all_same(cases)


@pytest.mark.parametrize("first", list(OPERAND_MAKERS))
def test_result_type_matches_jax(first: str, x64: bool, mode: str) -> None:
    a = operand(first)
    cases = []
    for second in OPERAND_MAKERS:
        b = operand(second)
        ours = comparable(outcome(our_result_type, a, b, exact=False), [first, second])
        theirs = comparable(outcome(jax_result_type, a, b, exact=False), [first, second])
        cases.append((f"result_type({first}, {second})", ours, theirs))
    assert_all_same(cases)


@pytest.mark.parametrize("name", list(OPERAND_MAKERS))
def test_result_type_of_one_operand(name: str, x64: bool, mode: str) -> None:
    x = operand(name)
    assert_same(name, outcome(our_result_type, x), outcome(jax_result_type, x))
    assert_same(name, outcome(mdt.result_type, x), outcome(jnp.result_type, x))


@given(names=st.lists(st.sampled_from(list(OPERAND_MAKERS)), min_size=3, max_size=5))
def test_result_type_of_many_operands(names: list[str]) -> None:
    args = [operand(name) for name in names]
    for x64_on in (False, True):
        for promotion in ("standard", "strict"):
            with flags(x64=x64_on, mode=promotion):
                ours = comparable(outcome(our_result_type, *args, exact=False), names)
                theirs = comparable(outcome(jax_result_type, *args, exact=False), names)
            assert_same(f"{names} x64={x64_on} {promotion}", ours, theirs)


def test_result_type_needs_an_argument() -> None:
    assert_same("()", outcome(mdt.result_type), outcome(jax.dtypes.result_type))


def test_strict_error_class_and_message_match_jax() -> None:
    with flags(mode="strict"):
        with pytest.raises(mdt.TypePromotionError) as ours:
            mdt.promote_types(np.int8, np.uint8)
        with pytest.raises(jax.dtypes.TypePromotionError) as theirs:
            jnp.promote_types(np.int8, np.uint8)
    assert isinstance(ours.value, ValueError)
    assert str(ours.value) == str(theirs.value)


def test_flipping_x64_changes_answers_at_once() -> None:
    """The promotion caches are keyed by the flags, so no stale answer survives a flip."""
    for x64_on in (False, True, False):
        with flags(x64=x64_on):
            assert mdt.result_type(np.uint32, np.int32) == jnp.result_type(np.uint32, np.int32)
            assert mdt.result_type(1.0) == jnp.result_type(1.0)


# --------------------------------------------------------------------------------------
# Canonicalisation, dtype() and the x64 warning.
# --------------------------------------------------------------------------------------

DTYPE_LIKES = (*DTYPES, *PY_TYPES, "int", "float", "complex", "float64", "bfloat16", "i8")


@pytest.mark.parametrize("dt", DTYPE_LIKES, ids=str)
def test_canonicalize_dtype_matches_jax(dt: Any, x64: bool) -> None:
    ours = outcome(mdt.canonicalize_dtype, dt)
    assert_same(str(dt), ours, outcome(jax.dtypes.canonicalize_dtype, dt))


BAD_VALUES = ("U", object, [1, 2], np.array(["a"]), "a")


@pytest.mark.parametrize("x", [*OPERAND_MAKERS, *BAD_VALUES, *DTYPE_LIKES], ids=str)
def test_dtype_matches_jax(x: Any, x64: bool) -> None:
    value = operand(x) if isinstance(x, str) and x in OPERAND_MAKERS else x
    assert_same(str(x), outcome(mdt.dtype, value), outcome(jax_dtypes_internal.dtype, value))


@pytest.mark.parametrize("x", [*PY_SCALARS, *PY_TYPES, "float64", np.int64, np.ones(2)], ids=str)
def test_dtype_without_canonicalising_keeps_64_bits_silently(x: Any) -> None:
    with flags(x64=False):
        result, caught = outcome(mdt.dtype, x, canonicalize=False)
    natural = np.dtype(x if isinstance(x, (type, str)) else getattr(x, "dtype", type(x)))
    assert result == ("value", natural)
    assert caught == []


@pytest.mark.parametrize("dt", [*DTYPE_LIKES, "U", object], ids=str)
def test_user_dtype_request_warns_like_jnp_zeros(dt: Any, x64: bool) -> None:
    ours = outcome(mdt.check_and_canonicalize_user_dtype, dt, "zeros")
    theirs = outcome(lambda: jnp.zeros(3, dt).dtype)
    assert_same(str(dt), ours, theirs)
    assert mdt.check_user_dtype_supported is mdt.check_and_canonicalize_user_dtype


@pytest.mark.parametrize("dt", [*DTYPE_LIKES, None], ids=str)
def test_user_dtype_request_without_function_name(dt: Any, x64: bool) -> None:
    ours = outcome(mdt.check_and_canonicalize_user_dtype, dt)
    theirs = outcome(jax_dtypes_internal.check_and_canonicalize_user_dtype, dt)
    assert_same(str(dt), ours, theirs)


def test_x64_warning_points_at_the_callers_line() -> None:
    with flags(x64=False), pytest.warns(UserWarning, match="truncated to dtype int32") as record:
        mdt.check_and_canonicalize_user_dtype(np.int64, "zeros")
    assert record[0].filename == __file__


@pytest.mark.parametrize("name", list(OPERAND_MAKERS))
def test_is_weakly_typed_and_scalar_type_of_match_jax(name: str, x64: bool) -> None:
    x = operand(name)
    assert mdt.is_weakly_typed(x) == jax_dtypes_internal.is_weakly_typed(x), name
    assert_same(name, outcome(mdt.scalar_type_of, x), outcome(jax.dtypes.scalar_type_of, x))


@pytest.mark.parametrize("x", [*PY_SCALARS, *PY_TYPES], ids=str)
def test_python_scalar_dtype_is_jax_default(x: Any, x64: bool) -> None:
    assert mdt.python_scalar_dtype(x) == jax.dtypes.result_type(x)


def test_python_scalar_dtype_rejects_numpy_scalars() -> None:
    with pytest.raises(TypeError):
        mdt.python_scalar_dtype(np.float32(1))


# --------------------------------------------------------------------------------------
# issubdtype, finfo and iinfo, bfloat16 included.
# --------------------------------------------------------------------------------------

CATEGORIES = (
    np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger,
    np.inexact, np.floating, np.complexfloating, np.bool_,
)  # fmt: skip
SUBDTYPE_ARGS = (*DTYPES, *CATEGORIES, *PY_TYPES, "bfloat16", "float32")


@pytest.mark.parametrize("a", SUBDTYPE_ARGS, ids=str)
def test_issubdtype_matches_jax(a: Any) -> None:
    cases = [
        (f"issubdtype({a}, {b})", outcome(mdt.issubdtype, a, b), outcome(jnp.issubdtype, a, b))
        for b in SUBDTYPE_ARGS
    ]
    assert_all_same(cases)


@pytest.mark.parametrize("dt", [mdt.bfloat16, mdt.float16, mdt.float32, mdt.float64], ids=_name)
def test_finfo_matches_jax(dt: Any) -> None:
    ours, theirs = mdt.finfo(dt), jnp.finfo(dt)
    for field in ("bits", "eps", "max", "min", "tiny", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field


@pytest.mark.parametrize("dt", [t for t in DTYPES if np.dtype(t).kind in "iu"], ids=_name)
def test_iinfo_matches_jax(dt: Any) -> None:
    ours, theirs = mdt.iinfo(dt), jnp.iinfo(dt)
    for field in ("bits", "min", "max", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field


# --------------------------------------------------------------------------------------
# The lattice itself: its shape and the laws of a join.
# --------------------------------------------------------------------------------------

NODES = tuple(mdt.LATTICE)


def test_lattice_edges_name_only_known_nodes() -> None:
    for strict in (False, True):
        for x64_on in (False, True):
            lattice = mdt.promotion_lattice(strict=strict, x64=x64_on)
            assert set(lattice) == set(NODES)
            edges = mdt.lattice_edges(strict=strict, x64=x64_on)
            assert {node for edge in edges for node in edge} <= set(NODES)


def test_x32_lattice_differs_only_at_uint32() -> None:
    x32 = set(mdt.lattice_edges(strict=False, x64=False))
    x64 = set(mdt.lattice_edges(strict=False, x64=True))
    assert x64 - x32 == {("u32", "i64")}
    assert x32 - x64 == {("u32", "i32")}


@pytest.mark.parametrize("x64_on", [False, True])
def test_bool_is_bottom_and_complex128_is_top(x64_on: bool) -> None:
    assert mdt.upper_bounds("b1", strict=False, x64=x64_on) == set(NODES)
    for node in NODES:
        assert "c128" in mdt.upper_bounds(node, strict=False, x64=x64_on)


def test_node_round_trip() -> None:
    for t in DTYPES:
        assert mdt.node_dtype(mdt.lattice_node(t)) == np.dtype(t)
    weak_kinds = (bool, np.uint8, mdt.bfloat16, np.complex64)
    assert [mdt.lattice_node(t, weak=True) for t in weak_kinds] == ["b1", "i*", "f*", "c*"]


node = st.sampled_from(NODES)
lattice_flags = st.fixed_dictionaries({"strict": st.just(False), "x64": st.booleans()})


@given(a=node, b=node, kw=lattice_flags)
def test_join_is_commutative(a: str, b: str, kw: dict) -> None:
    assert mdt.least_upper_bound(a, b, **kw) == mdt.least_upper_bound(b, a, **kw)


@given(a=node, b=node, c=node, kw=lattice_flags)
def test_join_is_associative(a: str, b: str, c: str, kw: dict) -> None:
    join = functools.partial(mdt.least_upper_bound, **kw)
    assert join(join(a, b), c) == join(a, join(b, c)) == join(a, b, c)


@given(a=node, kw=lattice_flags)
def test_join_is_idempotent_and_bool_is_bottom(a: str, kw: dict) -> None:
    assert mdt.least_upper_bound(a, a, **kw) == a
    assert mdt.least_upper_bound("b1", a, **kw) == a


@given(a=node, b=node, kw=lattice_flags)
def test_join_is_an_upper_bound(a: str, b: str, kw: dict) -> None:
    join = mdt.least_upper_bound(a, b, **kw)
    assert join in mdt.upper_bounds(a, **kw) & mdt.upper_bounds(b, **kw)


dtype_strategy = st.sampled_from(DTYPES)


@given(a=dtype_strategy, b=dtype_strategy, x64_on=st.booleans())
def test_promote_types_is_commutative_and_idempotent_with_bool_bottom(
    a: Any, b: Any, x64_on: bool
) -> None:
    with config.override("jax_enable_x64", x64_on):
        assert mdt.promote_types(a, b) == mdt.promote_types(b, a)
        assert mdt.promote_types(a, a) == np.dtype(a)
        assert mdt.promote_types(np.bool_, a) == np.dtype(a)


@given(a=dtype_strategy, b=dtype_strategy, c=dtype_strategy, x64_on=st.booleans())
def test_promote_types_regroups_as_in_jax(a: Any, b: Any, c: Any, x64_on: bool) -> None:
    """promote_types names a weak join by its 64-bit dtype (int8 ^ uint64 = f* -> float64)
    and so forgets the weakness: regrouping can change the answer (then ^ float16 gives
    float64 one way, float16 the other). The join of lattice nodes is associative (above);
    promote_types is not, in JAX either, so we check that both groupings match JAX."""
    with flags(x64=x64_on):
        for promote in (mdt.promote_types, jnp.promote_types):
            assert promote(promote(a, b), c) == jnp.promote_types(jnp.promote_types(a, b), c)
            assert promote(a, promote(b, c)) == jnp.promote_types(a, jnp.promote_types(b, c))
