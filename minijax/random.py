"""``minijax.random``: JAX's explicit-key random numbers, bit for bit.

There is no global random state (that would make functions impure, see chapter 08): every
sampler takes a *key* and is a pure function of it. ``split`` turns one key into several
independent ones and ``fold_in`` mixes an integer (a step number, say) into a key. All
samplers start from the primitive ``random_bits`` (:mod:`minijax.prng`), which lowers to
threefry2x32 written with ``lax`` operations, and they turn those bits into numbers
exactly as JAX 0.10.2 does, so the same key gives the same bits as in JAX.

Two kinds of key, as in JAX:

* ``key(seed)`` gives a *typed* key: an array whose dtype prints ``key<fry>`` and whose
  shape is that of the batch of keys (``()`` for one key). ``key_data`` unwraps it into
  the raw ``uint32[..., 2]`` words and ``wrap_key_data`` wraps them back;
* ``PRNGKey(seed)`` gives a *raw* key: a ``uint32[2]`` array (the two threefry words),
  the typed key's data. Every function wraps a raw key first (``random_wrap`` in the
  jaxpr) and ``split``/``fold_in`` unwrap what they return, so each gives the kind it got.

Samplers are ``jit``-compiled with static shapes and dtypes under the names JAX gives them
(``_uniform``, ``_normal``, ...), so printed jaxprs nest as JAX's do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minijax import dtypes, lax, prng
from minijax import numpy as jnp
from minijax.compiler.jit import jit
from minijax.numpy.promotion import is_arraylike

__all__ = [
    "PRNGKey",
    "bernoulli",
    "bits",
    "categorical",
    "choice",
    "exponential",
    "fold_in",
    "gumbel",
    "key",
    "key_data",
    "key_impl",
    "normal",
    "permutation",
    "randint",
    "split",
    "truncated_normal",
    "uniform",
    "wrap_key_data",
]


def _check_impl(impl: Any) -> None:
    if impl not in (None, prng.THREEFRY.name):
        raise NotImplementedError(f"minijax implements only the threefry2x32 PRNG, got {impl}")


def _typed(key: Any) -> tuple[Any, bool]:
    """(the key as a typed key, whether it came raw): a raw ``uint32[..., 2]`` key is
    wrapped (``random_wrap``, which checks its dtype and shape), as JAX wraps it before
    anything else; what is no array at all is refused with JAX's errors."""
    if prng.is_key(key):
        return key, False
    if not is_arraylike(key):
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not hasattr(key, "dtype"):  # a Python scalar
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {key}")
    return prng.random_wrap(jnp.asarray(key)), True


def _single_key(name: str, key: Any) -> Any:
    """One typed key; a batch of keys is an error, as in JAX (vmap instead)."""
    typed, raw = _typed(key)
    if typed.shape != ():
        shape = jnp.shape(key) if raw else typed.shape
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shape} != (). Use jax.vmap for batching.")
    return typed


def _as_given(keys: Any, raw: bool) -> Any:
    """New keys of the kind the caller gave: raw keys are unwrapped again."""
    return prng.random_unwrap(keys) if raw else keys


# Keys ---------------------------------------------------------------------------------


def _seeds(seed_value: Any) -> Any:
    """Integer seeds as an array (a Python int keeps only the bits the default int has)."""
    if prng.is_key(seed_value) or not dtypes.issubdtype(
            dtypes.dtype(seed_value), np.integer) and dtypes.dtype(seed_value) != np.bool_:
        raise TypeError(f"PRNG key seed must be an integer; got {seed_value!r}")
    if isinstance(seed_value, int):
        bits = np.iinfo(dtypes.canonicalize_dtype(np.int64)).bits
        seed_value = np.array(seed_value % 2 ** bits, np.uint64).astype(
            dtypes.canonicalize_dtype(np.int64))
    return jnp.asarray(seed_value)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802  (JAX's name)
    """A raw key (``uint32[2]``) from an integer seed: a typed key, unwrapped."""
    _check_impl(impl)
    return prng.random_unwrap(prng.random_seed(_seeds(seed)))


def key(seed: Any, *, impl: Any = None) -> Any:
    """A typed key (dtype ``key<fry>``, shape ``()``) from an integer seed."""
    _check_impl(impl)
    return prng.random_seed(_seeds(seed))


def key_data(keys: Any) -> Any:
    """The raw uint32 words of typed keys (raw keys are returned as they are)."""
    return prng.random_unwrap(_typed(keys)[0])


def wrap_key_data(key_bits_array: Any, *, impl: Any = None) -> Any:
    """Typed keys from raw ``uint32[..., 2]`` words."""
    _check_impl(impl)
    return prng.random_wrap(jnp.asarray(key_bits_array))


def key_impl(keys: Any) -> str:
    """The name of the keys' PRNG implementation (minijax has one: threefry2x32)."""
    _typed(keys)  # raw keys too, once their data is checked
    return prng.THREEFRY.name


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``) from one key."""
    typed = _single_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (int(num),)
    return _as_given(prng.random_split(typed, shape), not prng.is_key(key))


def fold_in(key: Any, data: Any) -> Any:
    """A new key that depends on ``key`` and the 32-bit integer ``data``."""
    typed = _single_key("fold_in", key)
    return _as_given(prng.random_fold_in(typed, jnp.asarray(data, dtype=np.uint32)),
                     not prng.is_key(key))


def _unstack2(x: Any) -> tuple[Any, Any]:
    """``x[0], x[1]`` as JAX's tuple unpacking records them (``slice`` with unit strides,
    then ``squeeze``)."""
    return lax.index_in_dim(x, 0, keepdims=False), lax.index_in_dim(x, 1, keepdims=False)


def _split2(key: Any) -> tuple[Any, Any]:
    return _unstack2(prng.random_split(key, (2,)))


# Bits and uniform floats --------------------------------------------------------------


def _shape(shape: Any) -> tuple[int, ...]:
    return lax.canonicalize_shape(shape)


def _float_dtype(name: str, dtype: Any) -> np.dtype:
    if dtype is None:
        return dtypes.canonicalize_dtype(np.float64)
    dt = dtypes.check_and_canonicalize_user_dtype(dtype)
    if not dtypes.issubdtype(dt, np.floating):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def bits(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniformly random unsigned integers (uint32 by default)."""
    data = _single_key("bits", key)
    dt = (dtypes.canonicalize_dtype(np.uint64) if dtype is None
          else dtypes.check_and_canonicalize_user_dtype(dtype))
    if not dtypes.issubdtype(dt, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return prng.random_bits(data, dt.itemsize * 8, _shape(shape))


def _unit_floats(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Floats in [0, 1): random mantissa bits under the exponent of 1.0, minus 1.

    Mantissas of fewer than 8 bits (bfloat16) draw 8 random bits, widened to the dtype."""
    nbits = dtype.itemsize * 8
    mantissa_bits = dtypes.finfo(dtype).nmant
    random_width = max(nbits, 8) if mantissa_bits >= 8 else 8
    uint = prng.UINT_DTYPES[nbits]
    random = prng.random_bits(data, random_width, shape)
    if random_width != nbits:
        random = lax.convert_element_type(random, uint)
    one_bits = np.array(1, dtype).view(uint)
    in_one_two = lax.bitwise_or(
        lax.shift_right_logical(random, uint.type(random_width - mantissa_bits)), one_bits)
    return lax.sub(lax.bitcast_convert_type(in_one_two, dtype), np.array(1, dtype))


def _to_rank(x: Any, ndim: int) -> Any:
    """``x`` with leading size-1 dimensions up to rank ``ndim`` (lax does not broadcast)."""
    return lax.expand_dims(x, range(ndim - x.ndim))


@partial(jit, static_argnums=(1, 2))
def _uniform(data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
             maxval: Any) -> Any:
    minval, maxval = (lax.convert_element_type(x, dtype) for x in (minval, maxval))
    minval, maxval = (_to_rank(x, len(shape)) for x in (minval, maxval))
    floats = _unit_floats(data, shape, dtype)
    return lax.max(minval, lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval))


def _check_bounds(name: str, shape: tuple[int, ...], *bounds: Any) -> None:
    """Parameters must broadcast to ``shape`` (and not beyond it)."""
    shapes = [np.shape(bound) for bound in bounds]
    try:
        result = np.broadcast_shapes(shape, *shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={[shape, *shapes]}"
                         ) from None
    if result != shape:
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         "argument, and the result of broadcasting the shapes must equal the "
                         f"shape argument, but got result {result} for shape argument "
                         f"{shape}.")


def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Floats drawn uniformly from ``[minval, maxval)``."""
    data = _single_key("uniform", key)
    dt, shape = _float_dtype("uniform", dtype), _shape(shape)
    _check_bounds("uniform", shape, minval, maxval)
    return _uniform(data, shape, dt, minval, maxval)


# Normal and friends -------------------------------------------------------------------


@partial(jit, static_argnums=(1, 2))
def _normal_real(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """√2 · erf⁻¹(u) for u uniform on (-1, 1): the inverse-CDF method."""
    low = np.nextafter(np.array(-1, dtype), np.array(0, dtype))
    u = _uniform(data, shape, dtype, low, np.array(1, dtype))
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


@partial(jit, static_argnums=(1, 2))
def _normal(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if not dtypes.issubdtype(dtype, np.complexfloating):
        return _normal_real(data, shape, dtype)
    real_dtype = np.finfo(dtype).dtype
    key_re, key_im = _split2(data)
    real = lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
    imag = lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
    unit = lax.add(real, lax.mul(np.array(1j, dtype), imag))
    return lax.div(unit, np.array(np.sqrt(2), dtype))


def normal(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal floats (complex dtypes: real and imaginary parts each of variance ½)."""
    data = _single_key("normal", key)
    if dtype is None:
        dt = dtypes.canonicalize_dtype(np.float64)
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype)
        if not dtypes.issubdtype(dt, np.inexact):
            raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                             f"got {dt}")
    return _normal(data, _shape(shape), dt)


@partial(jit, static_argnums=(3, 4))
def _truncated_normal(data: Any, lower: Any, upper: Any, shape: tuple[int, ...],
                      dtype: np.dtype) -> Any:
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    out = lax.mul(sqrt2, lax.erf_inv(_uniform(data, shape, dtype, a, b)))
    # Rounding can land exactly on a bound: clamp into the open interval.
    low = lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype))
    high = lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype))
    return jnp.clip(out, low, high)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None,
                     dtype: Any = None) -> Any:
    """Normal floats conditioned on ``lower < x < upper`` (bounds broadcast)."""
    data = _single_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = np.broadcast_shapes(np.shape(lower), np.shape(upper))
    shape = _shape(shape)
    _check_bounds("truncated_normal", shape, lower, upper)
    return _truncated_normal(data, lower, upper, shape, dt)


def _tiny(dtype: np.dtype) -> np.ndarray:
    return np.array(dtypes.finfo(dtype).tiny, dtype)


@partial(jit, static_argnums=(1, 2, 3))
def _gumbel(data: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    """-log(-log u): the inverse CDF of the Gumbel distribution."""
    one = np.array(1, dtype)
    if mode == "high":  # two uniforms per sample: finer resolution near u = 0
        coarse, fine = _unstack2(_uniform(data, (2, *shape), dtype, np.array(0, dtype), one))
        eps = np.array(dtypes.finfo(dtype).eps, dtype)
        refined = lax.add(lax.add(coarse, lax.mul(eps, fine)), _tiny(dtype))
        u = jnp.where(lax.ge(coarse, np.array(0.5, dtype)), coarse, refined)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(u)))))
    u = _uniform(data, shape, dtype, _tiny(dtype), one)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def _check_mode(mode: Any) -> str:
    if mode is None:
        return "low"
    if mode not in ("low", "high"):
        raise ValueError(f"Must specify either 'high' or 'low' for mode, got {mode}")
    return mode


def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel floats (mode ``"high"`` spends twice the bits for accuracy)."""
    data = _single_key("gumbel", key)
    return _gumbel(data, _shape(shape), _float_dtype("gumbel", dtype), _check_mode(mode))


@partial(jit, static_argnums=(1, 2))
def _exponential(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(data, shape, dtype, np.array(0, dtype), np.array(1, dtype))
    return lax.neg(lax.log1p(lax.neg(u)))


def exponential(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Exponential floats with rate 1: -log(1 - u)."""
    data = _single_key("exponential", key)
    return _exponential(data, _shape(shape), _float_dtype("exponential", dtype))


# Discrete samplers --------------------------------------------------------------------


@partial(jit, static_argnums=(2, 3))
def _bernoulli(data: Any, p: Any, shape: tuple[int, ...], mode: str) -> Any:
    dtype = p.dtype
    if mode == "high":  # p - u1 > eps·u2 resolves probabilities below 2**-24
        u0, u1 = _unstack2(_uniform(data, (2, *shape), dtype, 0.0, 1.0))
        eps = np.array(dtypes.finfo(dtype).eps, dtype)
        return lax.lt(lax.mul(u1, eps), lax.sub(p, u0))
    return lax.lt(_uniform(data, shape, dtype, 0.0, 1.0), p)


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p``."""
    data = _single_key("bernoulli", key)
    p = jnp.asarray(p)
    if not dtypes.issubdtype(p.dtype, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    p = lax.convert_element_type(p, p.dtype)  # a strong dtype from here on
    shape = p.shape if shape is None else _shape(shape)
    _check_bounds("bernoulli", shape, p)
    if mode not in ("low", "high"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    return _bernoulli(data, p, shape, mode)


def _clip_to(x: Any, dtype: np.dtype) -> Any:
    """``x`` (an integer array) clamped to ``dtype``'s range, then converted to it."""
    info, source = dtypes.iinfo(dtype), dtypes.iinfo(x.dtype)
    if source.min < info.min or source.max > info.max:
        x = jnp.clip(x, np.array(max(info.min, source.min), x.dtype),
                     np.array(min(info.max, source.max), x.dtype))
    return lax.convert_element_type(x, dtype)


def _integer_bound(x: Any) -> Any:
    x = jnp.asarray(x)
    return x if dtypes.issubdtype(x.dtype, np.integer) else x.astype(int)


@partial(jit, static_argnums=(1, 4))
def _randint(data: Any, shape: tuple[int, ...], minval: Any, maxval: Any,
             dtype: np.dtype) -> Any:
    """minval + (a random integer of twice the dtype's bits) mod span: doubling the bits
    keeps the modulo bias small when the span is not a power of two."""
    type_max = np.array(dtypes.iinfo(dtype).max, dtype)
    too_high = lax.gt(maxval, _clip_to(lax.convert_element_type(type_max, type_max.dtype),
                                       maxval.dtype))
    minval = _to_rank(_clip_to(minval, dtype), len(shape))
    maxval = _to_rank(_clip_to(maxval, dtype), len(shape))
    nbits = dtype.itemsize * 8
    uint = prng.UINT_DTYPES[nbits]
    key_high, key_low = _split2(data)
    high = prng.random_bits(key_high, nbits, shape)
    low = prng.random_bits(key_low, nbits, shape)
    span = lax.convert_element_type(lax.sub(maxval, minval), uint)
    # An empty range returns minval; a maxval above the dtype's max means one more value.
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    span = lax.select(lax.bitwise_and(too_high, lax.gt(maxval, minval)),
                      lax.add(span, uint.type(1)), span)
    # (high·2**nbits + low) mod span, without overflow: 2**nbits mod span is (2**(nbits/2)
    # mod span) squared, mod span.
    multiplier = lax.rem(uint.type(2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(high, span), multiplier), lax.rem(low, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers drawn uniformly from ``[minval, maxval)``."""
    data = _single_key("randint", key)
    dt = (dtypes.canonicalize_dtype(np.int64) if dtype is None
          else dtypes.check_and_canonicalize_user_dtype(dtype))
    if not dtypes.issubdtype(dt, np.integer):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = _shape(shape)
    _check_bounds("randint", shape, minval, maxval)
    minval, maxval = _integer_bound(minval), _integer_bound(maxval)
    if dt.itemsize >= 4:
        return _randint(data, shape, minval, maxval, dt)
    # Narrow dtypes are drawn as int32 within the dtype's range (maxval is exclusive).
    info = dtypes.iinfo(dt)
    minval = jnp.clip(lax.convert_element_type(minval, np.int32), info.min, info.max)
    maxval = jnp.clip(lax.convert_element_type(maxval, np.int32), info.min, info.max + 1)
    wide = _randint(data, shape, minval, maxval, np.dtype(np.int32))
    return lax.convert_element_type(wide, dt)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Indices drawn with probabilities softmax(logits) along ``axis``: the Gumbel-max
    trick, argmax(logits + Gumbel noise)."""
    data = _single_key("categorical", key)
    logits = jnp.asarray(logits)
    if not replace:
        raise NotImplementedError("minijax's categorical supports only replace=True")
    axis = axis % logits.ndim if axis < 0 else axis
    if axis >= logits.ndim:
        raise ValueError(f"axis {axis} out of bounds for array of dimension {logits.ndim}")
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    shape = batch_shape if shape is None else _shape(shape)
    if shape[len(shape) - len(batch_shape):] != batch_shape:
        raise ValueError(f"Shape {shape} is not broadcast-compatible with batch shape "
                         f"{batch_shape}")
    prefix = shape[:len(shape) - len(batch_shape)]
    noise_shape = (*prefix, *batch_shape[:axis], logits.shape[axis], *batch_shape[axis:])
    noise = gumbel(data, noise_shape, logits.dtype, mode)
    shifted = lax.add(noise, lax.expand_dims(logits, range(len(prefix))))
    return jnp.argmax(shifted, axis=axis + len(prefix))


@partial(jit, static_argnums=(2,))
def _shuffle(data: Any, x: Any, axis: int) -> Any:
    """Sort by random 32-bit keys, enough rounds that ties are unlikely (3·log(n)/log(2**32))."""
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        data, subkey = _split2(data)
        sort_keys = prng.random_bits(subkey, 32, x.shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (integer ``x``) or of ``x`` along ``axis``."""
    data = _single_key("permutation", key)
    if np.ndim(x) == 0 and dtypes.issubdtype(dtypes.dtype(x), np.integer):
        return _shuffle(data, jnp.arange(x), 0)
    x = jnp.asarray(x)
    if x.ndim == 0:
        raise TypeError("x must be an integer or at least 1-dimensional")
    axis = axis % x.ndim
    if independent or x.ndim == 1:
        return _shuffle(data, x, axis)
    order = _shuffle(data, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, order, axis=axis, unique_indices=True)


def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """Samples from ``arange(a)`` (integer ``a``) or from ``a`` along ``axis``."""
    data = _single_key("choice", key)
    shape = _shape(shape)
    if np.ndim(a) == 0:
        n_inputs = int(a)
    else:
        a = jnp.asarray(a)
        n_inputs = a.shape[axis % a.ndim]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=jnp.asarray(a).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    indices = _choice_indices(data, n_inputs, shape, replace, p, mode)
    if np.ndim(a) == 0:
        return indices
    axis = axis % a.ndim
    flat = jnp.take(a, jnp.ravel(indices), axis=axis)
    return jnp.reshape(flat, a.shape[:axis] + shape + a.shape[axis + 1:])


def _choice_indices(data: Any, n_inputs: int, shape: tuple[int, ...], replace: bool, p: Any,
                    mode: str | None) -> Any:
    n_draws = math.prod(shape)
    if p is None:
        if replace:
            return randint(data, shape, 0, n_inputs)
        return jnp.reshape(permutation(data, n_inputs)[:n_draws], shape)
    p = jnp.asarray(p)
    if p.shape != (n_inputs,):
        raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. "
                         f"p has shape {p.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
        cumulative = jnp.cumsum(p)
        r = cumulative[-1] * (1 - uniform(data, shape, dtype=cumulative.dtype))
        return jnp.searchsorted(cumulative, r).astype(int)
    noise = gumbel(data, (n_inputs,), p.dtype, mode)
    ranked = lax.top_k(lax.add(noise, jnp.log(p)), n_draws)[1]
    return jnp.reshape(ranked.astype(int), shape)
