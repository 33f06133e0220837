"""The threefry2x32 counter-based PRNG, written with ``lax`` operations only.

A *counter-based* generator is a pure function ``bits = hash(key, counter)``: there is no
hidden state to advance, so the same key and counter always give the same bits, on any
device, in any order, inside ``jit``. Threefry (Salmon et al., "Parallel random numbers:
as easy as 1, 2, 3", SC 2011) is such a hash, built from three cheap 32-bit operations:
add, rotate and xor. threefry2x32 mixes a pair of 32-bit words ``(x0, x1)`` under a key
pair ``(k0, k1)`` with 20 rounds of

    x0 += x1;  x1 = rotate_left(x1, r);  x1 ^= x0

and adds ("injects") the key schedule every four rounds. Because everything here is a
``lax`` call on uint32 arrays, the generator traces, jits and lowers like any other
program: its jaxpr is made of ``add``, ``shift_left``, ``shift_right_logical``, ``or`` and
``xor``.

The module has two halves. First the algorithm on key *data*: uint32 arrays whose last
axis holds a key's two words, for a whole array of keys at once. The derivations of keys
from seeds, of split keys and of random bits follow JAX 0.10.2's default
(``jax_threefry_partitionable=True``): every output element hashes its own index in the
output, so the bits at one position do not depend on the shape of the rest.

Then JAX's *typed keys* and their primitives. A typed key array has the extended dtype
``key<fry>`` (:class:`KeyDType`): a jaxpr sees ``key<fry>[3]``, three opaque keys, and only
the primitives ``random_seed``, ``random_bits``, ``random_split``, ``random_fold_in``,
``random_wrap`` and ``random_unwrap`` look inside them. Each has all its rules here: a
shape rule, a batching rule, and a lowering that is the threefry code of the first half
(traced on the stored words). Data movement (``slice``, ``squeeze``, ``gather``, ...) works
on keys as on any array: its lowering moves both words of every key alike. Eagerly, an
operation on keys is compiled, as under ``jit``. :mod:`minijax.random` builds the
user-facing API on these primitives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, lax, runtime
from minijax.compiler import lowering
from minijax.compiler.jit import jit
from minijax.interpreters import batching
from minijax.lax import base, shapes, slicing

# Threefry-2x32's rotation distances: the first group of four rounds uses the first tuple,
# the second group the other, and so on alternately (five groups, twenty rounds).
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
# The key schedule's third word is k0 ^ k1 ^ this constant (the paper's C240).
KEY_PARITY = 0x1BD11BDA

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


def _u32(value: int) -> np.uint32:
    return np.uint32(value)


def rotate_left(x: Any, distance: int) -> Any:
    """Rotate every uint32 of ``x`` left by ``distance`` bits."""
    return lax.bitwise_or(lax.shift_left(x, _u32(distance)),
                          lax.shift_right_logical(x, _u32(32 - distance)))


def _rounds(x0: Any, x1: Any, rotations: Sequence[int]) -> tuple[Any, Any]:
    for r in rotations:
        x0 = lax.add(x0, x1)
        x1 = lax.bitwise_xor(rotate_left(x1, r), x0)
    return x0, x1


def threefry2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Hash the word pairs ``(x0, x1)`` (uint32 arrays of one shape) under key ``(k0, k1)``
    (uint32 scalars): the 20-round Threefry-2x32 block function, applied elementwise."""
    schedule = (k0, k1, lax.bitwise_xor(lax.bitwise_xor(k0, k1), _u32(KEY_PARITY)))
    x0 = lax.add(x0, schedule[0])
    x1 = lax.add(x1, schedule[1])
    for group in range(5):
        x0, x1 = _rounds(x0, x1, ROTATIONS[group % 2])
        # After group g, inject key words g+1 and g+2 (cyclically), plus the counter g+1.
        x0 = lax.add(x0, schedule[(group + 1) % 3])
        x1 = lax.add(lax.add(x1, schedule[(group + 2) % 3]), _u32(group + 1))
    return x0, x1


# ---------------------------------------------------------------------------------------
# Threefry on key data: arrays of keys of any batch shape K, stored as uint32[*K, 2]
# ---------------------------------------------------------------------------------------


def _word(data: Any, i: int) -> Any:
    """Word ``i`` of every key: ``data[..., i]``."""
    return lax.index_in_dim(data, i, axis=data.ndim - 1, keepdims=False)


def _join(first: Any, second: Any) -> Any:
    """Two word arrays of one shape as key data (the words on a new last axis)."""
    axis = first.ndim
    return lax.concatenate([lax.expand_dims(first, (axis,)), lax.expand_dims(second, (axis,))],
                           axis)


def flat_index(shape: tuple[int, ...]) -> Any:
    """The row-major position of every element of ``shape``, as uint32.

    Positions are 64-bit counters split into two words; for fewer than 2**32 elements the
    high word is zero, which is all minijax supports."""
    if math.prod(shape) >= 2 ** 32:
        raise NotImplementedError("random bits array of size exceeding 2 ** 32")
    index = lax.full(shape, 0, np.uint32)
    stride = 1
    for dim in reversed(range(len(shape))):
        position = lax.broadcasted_iota(np.uint32, shape, dim)
        index = lax.add(index, lax.mul(position, _u32(stride)) if stride > 1 else position)
        stride *= shape[dim]
    return index


def hash_positions(data: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Both output words of threefry for every key and every position of ``shape``
    (counter = the position's index): two arrays of shape ``(*K, *shape)``."""
    batch = data.shape[:-1]
    full = (*batch, *shape)
    k0, k1 = (lax.broadcast_in_dim(_word(data, i), full, range(len(batch))) for i in (0, 1))
    count = lax.broadcast_in_dim(flat_index(shape), full, range(len(batch), len(full)))
    return threefry2x32(k0, k1, lax.full(full, 0, np.uint32), count)


def seed_data(seeds: Any) -> Any:
    """Key data from integer seeds: the high and low 32-bit words of each seed (the high
    word is zero unless the seeds are 64-bit integers)."""
    dtype = np.dtype(seeds.dtype)
    low = lax.convert_element_type(seeds, np.uint32)
    if dtype.itemsize == 8:
        high = lax.convert_element_type(
            lax.shift_right_logical(seeds, np.array(32, dtype)), np.uint32)
    else:
        high = lax.full(seeds.shape, 0, np.uint32)
    return _join(high, low)


def split_data(data: Any, shape: tuple[int, ...]) -> Any:
    """Key data of shape ``(*K, *shape, 2)``: the new key at each position is the pair of
    threefry words of that position's index."""
    return _join(*hash_positions(data, shape))


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    if x.shape == shape:
        return x
    return lax.broadcast_in_dim(x, shape, range(len(shape) - x.ndim, len(shape)))


def fold_in_data(data: Any, messages: Any) -> Any:
    """New keys from keys and 32-bit integers (the two broadcast together): threefry of
    the pair ``(0, message)``."""
    shape = np.broadcast_shapes(data.shape[:-1], messages.shape)
    k0, k1 = (_broadcast_to(_word(data, i), shape) for i in (0, 1))
    messages = _broadcast_to(messages, shape)
    return _join(*threefry2x32(k0, k1, lax.full(shape, 0, np.uint32), messages))


def bits_data(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Unsigned integers of ``bit_width`` bits filling ``(*K, *shape)``: both threefry
    words of each position, joined (64 bits) or xor-ed together (32 bits or fewer,
    truncated)."""
    y0, y1 = hash_positions(data, shape)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        high = lax.convert_element_type(y0, dtype)
        low = lax.convert_element_type(y1, dtype)
        return lax.bitwise_or(lax.shift_left(high, dtype.type(32)), low)
    mixed = lax.bitwise_xor(y0, y1)
    return mixed if bit_width == 32 else lax.convert_element_type(mixed, dtype)


# ---------------------------------------------------------------------------------------
# Typed keys: the dtype key<fry> and its implementation
# ---------------------------------------------------------------------------------------


class PRNGImpl:
    """A PRNG implementation as the ``impl`` parameter of the random primitives: printed
    by its short tag (``impl=fry``), as JAX prints it."""

    name = "threefry2x32"
    tag = "fry"

    def __repr__(self) -> str:
        return self.tag

    def __str__(self) -> str:
        return self.tag


THREEFRY = PRNGImpl()


class KeyDType(dtypes.ExtendedDType):
    """The dtype of typed threefry keys, ``key<fry>``: each key is stored as two uint32
    words (``physical_shape`` (2,)), hidden from shape rules and jaxprs."""

    type = dtypes.prng_key
    physical_shape = (2,)
    physical_dtype = np.dtype(np.uint32)

    def __init__(self, impl: PRNGImpl = THREEFRY) -> None:
        self.impl = impl
        self.name = f"key<{impl.tag}>"


KEY_DTYPE = KeyDType()


def is_key(x: Any) -> bool:
    """Is ``x`` (an array or tracer) a typed key array?"""
    return isinstance(getattr(x, "dtype", None), KeyDType)


def _key_aval(shape: tuple[int, ...]) -> core.ShapedArray:
    return core.ShapedArray(shape, KEY_DTYPE)


def _check_key_data_aval(data: core.ShapedArray) -> None:
    if data.dtype != np.uint32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={data.dtype}")
    if data.shape[-1:] != (2,):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with (2,); got shape={data.shape} for impl={THREEFRY.name}")


def _check_keys(name: str, keys: core.ShapedArray) -> None:
    if not isinstance(keys.dtype, KeyDType):
        raise TypeError(f"{name} expects a typed key array, got {keys.str_short()}")


# ---------------------------------------------------------------------------------------
# The primitives, each with its shape rule, batching rule and lowering
# ---------------------------------------------------------------------------------------


def _eval_on_keys(primitive: core.Primitive, args: tuple, params: dict) -> Any:
    """An operation on keys, run eagerly: compiled (and remembered) like a ``jit``."""
    try:
        key = (primitive, tuple(params.items()))
        program = _eager_programs.get(key)
    except TypeError:  # an unhashable parameter
        key, program = None, None
    if program is None:
        program = jit(lambda *xs: primitive.bind(*xs, **params))
        if key is not None:
            _eager_programs[key] = program
    return program(*args)


_eager_programs: dict[tuple, Any] = {}
runtime.install_extended_eval(_eval_on_keys)


def _key_primitive(name: str, shape_rule: Any, lowering_fun: Any) -> core.Primitive:
    """A random primitive: its shape rule, eager evaluation (compiled) and lowering (the
    threefry code of ``lowering_fun``, traced on the stored words)."""
    prim = core.Primitive(name)
    prim.def_abstract_eval(shape_rule)
    prim.def_eager_rule(lambda *args, **params: _eval_on_keys(prim, args, params))
    lowering.extended_lowering_rules[prim] = lowering.lower_fun(lowering_fun)
    return prim


def _batch_at_front(primitive: core.Primitive) -> None:
    """A batching rule for a primitive that maps over the leading axis of its one
    operand: move the batch axis to the front."""
    def rule(axis_data: Any, vals: list, dims: list, **params: Any) -> tuple[Any, int]:
        (x,), (bdim,) = vals, dims
        return primitive.bind(batching.moveaxis(x, bdim, 0), **params), 0
    batching.batching_rules[primitive] = rule


def _seed_rule(seeds: core.ShapedArray, *, impl: PRNGImpl) -> core.ShapedArray:
    return _key_aval(seeds.shape)


random_seed_p = _key_primitive("random_seed", _seed_rule,
                               lambda seeds, *, impl: seed_data(seeds))
batching.defvectorized(random_seed_p)


def _bits_rule(keys: core.ShapedArray, *, bit_width: int, shape: tuple[int, ...]
               ) -> core.ShapedArray:
    _check_keys("random_bits", keys)
    return core.ShapedArray((*keys.shape, *shape), UINT_DTYPES[bit_width])


random_bits_p = _key_primitive("random_bits", _bits_rule, bits_data)
_batch_at_front(random_bits_p)


def _split_rule(keys: core.ShapedArray, *, shape: tuple[int, ...]) -> core.ShapedArray:
    _check_keys("random_split", keys)
    return _key_aval((*keys.shape, *shape))


random_split_p = _key_primitive("random_split", _split_rule, split_data)
_batch_at_front(random_split_p)


def _fold_in_rule(keys: core.ShapedArray, messages: core.ShapedArray) -> core.ShapedArray:
    _check_keys("random_fold_in", keys)
    return _key_aval(np.broadcast_shapes(keys.shape, messages.shape))


random_fold_in_p = _key_primitive("random_fold_in", _fold_in_rule, fold_in_data)


def _fold_in_batching(axis_data: Any, vals: list, dims: list) -> tuple[Any, int]:
    """Keys and messages broadcast together: batch axes go to the front, at one rank; an
    unbatched scalar stays as it is (the shape rule broadcasts it), as in JAX."""
    rank = max(x.ndim - (d is not None) for x, d in zip(vals, dims))
    vals = [x if d is None and x.ndim == 0 else _front_at_rank(x, d, axis_data.size, rank)
            for x, d in zip(vals, dims)]
    return random_fold_in_p.bind(*vals), 0


def _front_at_rank(x: Any, bdim: int | None, size: int, rank: int) -> Any:
    """``x`` with its batch axis first, then padded with size-1 axes to ``1 + rank``."""
    x = batching.bdim_at_front(x, bdim, size)
    if x.ndim == rank + 1:
        return x
    return lax.expand_dims(x, range(1, rank + 2 - x.ndim))


batching.batching_rules[random_fold_in_p] = _fold_in_batching


def _wrap_rule(data: core.ShapedArray, *, impl: PRNGImpl) -> core.ShapedArray:
    _check_key_data_aval(data)
    return _key_aval(data.shape[:-1])


random_wrap_p = _key_primitive("random_wrap", _wrap_rule, lambda data, *, impl: data)
_batch_at_front(random_wrap_p)


def _unwrap_rule(keys: core.ShapedArray) -> core.ShapedArray:
    _check_keys("random_unwrap", keys)
    return core.ShapedArray((*keys.shape, 2), np.uint32)


random_unwrap_p = _key_primitive("random_unwrap", _unwrap_rule, lambda keys: keys)
batching.defvectorized(random_unwrap_p)


def random_seed(seeds: Any) -> Any:
    return random_seed_p.bind(seeds, impl=THREEFRY)


def random_bits(keys: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    return random_bits_p.bind(keys, bit_width=bit_width, shape=tuple(shape))


def random_split(keys: Any, shape: tuple[int, ...]) -> Any:
    return random_split_p.bind(keys, shape=tuple(shape))


def random_fold_in(keys: Any, messages: Any) -> Any:
    return random_fold_in_p.bind(keys, messages)


def random_wrap(data: Any) -> Any:
    return random_wrap_p.bind(data, impl=THREEFRY)


def random_unwrap(keys: Any) -> Any:
    return random_unwrap_p.bind(keys)


# ---------------------------------------------------------------------------------------
# Data movement on keys: the same operation on each of the two words
# ---------------------------------------------------------------------------------------


def _word_wise_lowering(primitive: core.Primitive) -> Any:
    """Lower a data-movement primitive on keys (``slice``, ``gather``, ...): apply it to
    the first words of the keys and to the second words, and join the results."""
    def rule(ctx: lowering.RuleContext, *operands: Any, **params: Any) -> Any:
        is_key_operand = [isinstance(a.dtype, KeyDType) for a in ctx.avals_in]

        def words(*xs: Any) -> Any:
            halves = [primitive.bind(*(_word(x, i) if k else x
                                       for x, k in zip(xs, is_key_operand)), **params)
                      for i in (0, 1)]
            return _join(*halves)
        return lowering.lower_fun(words)(ctx, *operands)
    return rule


for _moving in (base.broadcast_in_dim_p, base.reshape_p, base.select_n_p, base.transpose_p,
                shapes.copy_p, shapes.rev_p, shapes.squeeze_p, slicing.concatenate_p,
                slicing.dynamic_slice_p, slicing.dynamic_update_slice_p, slicing.gather_p,
                slicing.slice_p):
    lowering.extended_lowering_rules[_moving] = _word_wise_lowering(_moving)
