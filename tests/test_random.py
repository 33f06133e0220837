"""minijax.random against JAX 0.10.2: the same keys must give the same *bits*.

Results are compared exactly (their bytes), eagerly and under ``jit``, in both x64 modes.
The samplers that end in a transcendental function (normal, truncated_normal, gumbel,
exponential) and uniform with bounds other than [0, 1) are the exception: XLA evaluates
``erf_inv``/``log`` with its own approximations and fuses ``a * b + c`` into one FMA, so
their last bits can differ; for them the uniform stage is compared exactly and the values to
the dtype's tolerance. A few expected bits are recorded here, so the core (threefry, seeds,
split, fold_in, bits, uniform, randint, permutation) is checked even without JAX.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import prng
from minijax import random as mrandom
from tests.oracle import tolerances

SEEDS = [0, 1, 42, -7, 2 ** 31 - 1]
SHAPES = [(), (5,), (4, 1, 3)]


def as_bits(x) -> np.ndarray:
    """The bytes of an array, so that two arrays compare equal only if bit-identical."""
    x = np.ascontiguousarray(np.asarray(x))
    return np.atleast_1d(x).view(np.uint8)


def assert_same_bits(ours, theirs) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours, theirs)
    np.testing.assert_array_equal(as_bits(ours), as_bits(theirs))


# Without JAX: recorded bits -----------------------------------------------------------


def test_threefry_known_answers():
    """The Random123 known-answer vectors of threefry2x32 with 20 rounds."""
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for (k0, k1), (x0, x1), expected in cases:
        y = prng.threefry2x32(np.uint32(k0), np.uint32(k1), np.array([x0], np.uint32),
                              np.array([x1], np.uint32))
        assert (int(y[0][0]), int(y[1][0])) == expected


def test_recorded_bits():
    key = mrandom.PRNGKey(0)
    assert np.asarray(key).tolist() == [0, 0]
    assert np.asarray(mrandom.split(key)).tolist() == [[1797259609, 2579123966],
                                                        [928981903, 3453687069]]
    assert np.asarray(mrandom.fold_in(key, 7)).tolist() == [2716826189, 292468403]
    assert np.asarray(mrandom.bits(mrandom.PRNGKey(42), (4,))).tolist() == [
        2098992034, 2919706841, 2646866425, 2409546199]
    assert np.asarray(mrandom.uniform(key, (4,))).view(np.uint32).tolist() == [
        1064475214, 1064993846, 1051337244, 1055913296]
    assert np.asarray(mrandom.randint(mrandom.PRNGKey(1), (5,), 0, 100)).tolist() == [
        96, 27, 40, 53, 68]
    assert np.asarray(mrandom.split(mrandom.PRNGKey(2 ** 31 - 1), (2, 2))).tolist() == [
        [[3894554595, 3657610310], [2391852627, 3342111533]],
        [[1746298583, 1015193934], [911888559, 1412594465]]]
    assert np.asarray(mrandom.permutation(mrandom.PRNGKey(3), 8)).tolist() == [
        0, 5, 6, 7, 4, 2, 1, 3]
    assert np.asarray(mrandom.uniform(key, (3,), "bfloat16")).view(np.uint16).tolist() == [
        16166, 16146, 15904]
    assert np.asarray(mrandom.bits(mrandom.PRNGKey(5), (3,), "uint8")).tolist() == [
        134, 100, 144]


def test_typed_keys():
    key = mrandom.key(0)
    assert key.shape == () and str(key.dtype) == "key<fry>"
    keys = mrandom.split(key, 3)
    assert mjnp.issubdtype(keys.dtype, minijax.dtypes.prng_key) and keys.shape == (3,)
    assert len(keys) == 3
    np.testing.assert_array_equal(np.asarray(mrandom.key_data(keys)),
                                  np.asarray(mrandom.split(mrandom.PRNGKey(0), 3)))
    first, *_ = keys
    assert_same_bits(mrandom.uniform(first, (3,)), mrandom.uniform(keys[0], (3,)))
    wrapped = mrandom.wrap_key_data(mrandom.key_data(keys))
    assert_same_bits(mrandom.key_data(wrapped), mrandom.key_data(keys))
    assert repr(key) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"


def test_samplers_trace_into_random_primitives_that_lower_to_threefry():
    """Jaxprs show JAX's random primitives; their lowering is threefry's lax operations."""
    sample = lambda k: mrandom.uniform(k, (3,))  # noqa: E731
    text = str(minijax.make_jaxpr(sample)(mrandom.PRNGKey(0)))
    for name in ("random_wrap[impl=fry]", "jit[name=_uniform", "random_bits[bit_width=32",
                 "bitcast_convert_type"):
        assert name in text
    assert "xor" not in text
    lowered = minijax.jit(sample).lower(mrandom.PRNGKey(0)).as_text()
    for op in ("stablehlo.xor", "stablehlo.shift_left", "stablehlo.shift_right_logical"):
        assert op in lowered


# Against JAX --------------------------------------------------------------------------

jax = pytest.importorskip("jax")


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request) -> Iterator[bool]:
    minijax.config.update("jax_enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    try:
        yield request.param
    finally:
        minijax.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


def both(program, seed, jit=False):
    """``program(random, key)`` run by minijax (eagerly or jitted, the key an argument)
    and by JAX."""
    ours_key = mrandom.PRNGKey(seed)
    ours_fun = (lambda k: program(mrandom, k))
    ours = (minijax.jit(ours_fun) if jit else ours_fun)(ours_key)
    theirs = program(jax.random, jax.random.PRNGKey(seed))
    return ours, theirs


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_keys(x64, jit):
    programs = [lambda r, k: k,
                lambda r, k: r.split(k),
                lambda r, k: r.split(k, 5),
                lambda r, k: r.split(k, (2, 3)),
                lambda r, k: r.fold_in(k, 3),
                lambda r, k: r.fold_in(k, np.int32(-12345)),
                lambda r, k: r.fold_in(r.split(k)[1], 2 ** 31 - 1)]
    for seed in SEEDS[:2] if jit else SEEDS:
        for program in programs:
            assert_same_bits(*both(program, seed, jit))


@pytest.mark.parametrize("seed", [0, 1, -1, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 40, -2 ** 40])
def test_seeds(x64, seed):
    assert_same_bits(mrandom.PRNGKey(seed), jax.random.PRNGKey(seed))
    for typed in (np.int8(-1), np.uint8(200), np.uint32(7), np.int64(-3), True):
        assert_same_bits(mrandom.PRNGKey(typed), jax.random.PRNGKey(typed))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("shape", SHAPES)
def test_bits_and_uniform(x64, shape, jit):
    floats = ["float32", "float16", "bfloat16"] + (["float64"] if x64 else [])
    uints = ["uint8", "uint16", "uint32"] + (["uint64"] if x64 else [])
    seed = SEEDS[len(shape)]
    for dt in uints:
        assert_same_bits(*both(lambda r, k, dt=dt: r.bits(k, shape, dt), seed, jit))
    for dt in floats:
        assert_same_bits(*both(lambda r, k, dt=dt: r.uniform(k, shape, dt), seed, jit))
    assert_same_bits(*both(lambda r, k: r.bits(k, shape), seed, jit))
    assert_same_bits(*both(lambda r, k: r.uniform(k, shape), seed, jit))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("shape", SHAPES)
def test_bernoulli(x64, shape, jit):
    for seed in SEEDS[:1]:
        assert_same_bits(*both(lambda r, k: r.bernoulli(k, 0.3, shape), seed, jit))
        assert_same_bits(*both(lambda r, k: r.bernoulli(k, 0.3, shape, mode="high"), seed, jit))
        assert_same_bits(*both(lambda r, k: r.randint(k, shape, 0, 10), seed, jit))


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int8", "uint8", "int16", "int64"])
def test_randint(x64, dtype):
    """All the bound cases (empty range, beyond the dtype's range) for each dtype."""
    for low, high in [(0, 10), (-5, 300), (3, 3), (0, 256), (-2 ** 31, 2 ** 31 - 1)]:
        program = (lambda r, k, low=low, high=high: r.randint(k, (5,), low, high, dtype))
        assert_same_bits(*both(program, 1))
    assert_same_bits(*both(lambda r, k: r.randint(k, (5,), -5, 300, dtype), 2, jit=True))


def test_randint_array_bounds(x64):
    low, high = np.array([0, 5, -3]), np.array([[10, 6, 100]])
    for seed in SEEDS[:2]:
        assert_same_bits(*both(lambda r, k: r.randint(k, (4, 3), low, high), seed))
    ours, theirs = both(lambda r, k: r.uniform(k, (4, 3), minval=low, maxval=high), 0)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)  # FMA


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_permutation_choice_categorical(x64, jit):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
    programs = [
        lambda r, k: r.permutation(k, 10),
        lambda r, k: r.permutation(k, x),
        lambda r, k: r.permutation(k, x, axis=1),
        lambda r, k: r.permutation(k, x, axis=1, independent=True),
        lambda r, k: r.choice(k, 5, (3,)),
        lambda r, k: r.choice(k, 5, (3,), replace=False),
        lambda r, k: r.choice(k, 4, (2, 3), p=p),
        lambda r, k: r.choice(k, 4, (3,), replace=False, p=p),
        lambda r, k: r.choice(k, x, (2,), axis=1),
        lambda r, k: r.categorical(k, logits),
        lambda r, k: r.categorical(k, logits, axis=0),
        lambda r, k: r.categorical(k, logits, shape=(4, 2)),
    ]
    for seed in SEEDS[1:2] if jit else SEEDS[:2]:
        for program in programs:
            assert_same_bits(*both(program, seed, jit))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_continuous_samplers(x64, jit):
    """Exact where only exact arithmetic is involved; else to the dtype's tolerance."""
    floats = ["float32", "float16"] + (["float64"] if x64 else [])
    for seed in SEEDS[:1]:
        for dt in floats:
            rtol, atol = tolerances(dt)
            for program in [lambda r, k, dt=dt: r.normal(k, (3, 4), dt),
                            lambda r, k, dt=dt: r.truncated_normal(k, -1.0, 2.0, (3, 4), dt),
                            lambda r, k, dt=dt: r.gumbel(k, (3, 4), dt),
                            lambda r, k, dt=dt: r.gumbel(k, (3, 4), dt, mode="high"),
                            lambda r, k, dt=dt: r.exponential(k, (3, 4), dt),
                            lambda r, k, dt=dt: r.uniform(k, (3, 4), dt, -2.0, 3.0)]:
                ours, theirs = both(program, seed, jit)
                assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
                np.testing.assert_allclose(np.asarray(ours, np.float64),
                                           np.asarray(theirs, np.float64),
                                           rtol=10 * rtol, atol=10 * atol)
    ours, theirs = both(lambda r, k: r.normal(k, (3,), "complex64"), 0, jit)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5)


def test_typed_keys_match_jax(x64):
    ours, theirs = mrandom.key(3), jax.random.key(3)
    assert str(ours.dtype) == str(theirs.dtype) and repr(ours) == repr(theirs)
    ours, theirs = mrandom.split(ours, 4), jax.random.split(theirs, 4)
    assert repr(ours) == repr(theirs)
    assert_same_bits(mrandom.key_data(ours), jax.random.key_data(theirs))
    assert_same_bits(mrandom.uniform(ours[2], (3,)), jax.random.uniform(theirs[2], (3,)))
    jitted = minijax.jit(lambda k: mrandom.normal(mrandom.fold_in(k, 1), (2,)))
    np.testing.assert_allclose(np.asarray(jitted(ours[1])),
                               np.asarray(jax.random.normal(jax.random.fold_in(theirs[1], 1),
                                                            (2,))), rtol=1e-6)


def test_weak_typed_bounds_and_default_dtypes(x64):
    for program in [lambda r, k: r.uniform(k, (2,), minval=mjnp.float32(0) if r is mrandom
                                           else jax.numpy.float32(0)),
                    lambda r, k: r.randint(k, (2,), 0, 5)]:
        ours, theirs = both(program, 0)
        assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type


@pytest.mark.parametrize("program, error", [
    (lambda r, k: r.uniform(np.zeros(2, np.float32), (3,)), TypeError),
    (lambda r, k: r.uniform(np.zeros(3, np.uint32), (3,)), TypeError),
    (lambda r, k: r.uniform(r.split(k), (3,)), ValueError),
    (lambda r, k: r.split(r.split(k)), ValueError),
    (lambda r, k: r.uniform(k, (3,), np.int32), ValueError),
    (lambda r, k: r.bits(k, (3,), np.int32), ValueError),
    (lambda r, k: r.randint(k, (2,), 0, 3, np.float32), TypeError),
    (lambda r, k: r.PRNGKey(3.0), TypeError),
])
def test_errors(program, error):
    with pytest.raises(error) as theirs:
        program(jax.random, jax.random.PRNGKey(0))
    with pytest.raises(error) as ours:
        program(mrandom, mrandom.PRNGKey(0))
    first_line = str(theirs.value).split(";")[0].split(",")[0]
    assert first_line in str(ours.value)


def test_x64_warnings_match_jax():
    """A 64-bit dtype requested with x64 off warns with JAX's words, then is truncated."""
    import warnings

    def messages(module):
        key = module.PRNGKey(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module.randint(key, (2,), 0, 3, "int64")
            module.uniform(key, (2,), "float64")
            module.bits(key, (2,), "uint64")
        return [str(w.message) for w in caught]

    assert messages(mrandom) == messages(jax.random)
