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

This module has the raw algorithm on key *data* (uint32 arrays whose last axis holds the
two words of a key); :mod:`minijax.random` builds the user-facing API on it. The
derivations of keys from seeds, of split keys and of random bits follow JAX 0.10.2's
default (``jax_threefry_partitionable=True``): every output element hashes its own index
in the output, so the bits at one position do not depend on the shape of the rest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minijax import lax

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


def _key_words(key_data: Any) -> tuple[Any, Any]:
    """The two uint32 scalars of one key's data (shape ``(2,)``)."""
    k0 = lax.squeeze(lax.slice(key_data, (0,), (1,)), (0,))
    k1 = lax.squeeze(lax.slice(key_data, (1,), (2,)), (0,))
    return k0, k1


def hash_flat(key_data: Any, count: Any) -> Any:
    """Threefry applied to a flat uint32 array ``count``: its first half is the stream of
    first words, its second half the second words (one zero pads an odd length); the
    outputs are joined the same way and trimmed back to ``count``'s length."""
    k0, k1 = _key_words(key_data)
    (n,) = count.shape
    if n % 2:
        count = lax.concatenate([count, lax.full((1,), 0, np.uint32)], 0)
    half = (n + 1) // 2
    x0 = lax.slice(count, (0,), (half,))
    x1 = lax.slice(count, (half,), (2 * half,))
    y0, y1 = threefry2x32(k0, k1, x0, x1)
    out = lax.concatenate([y0, y1], 0)
    return out if n % 2 == 0 else lax.slice(out, (0,), (n,))


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


def hash_positions(key_data: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Both output words of threefry for every position of ``shape`` (counter = index)."""
    k0, k1 = _key_words(key_data)
    return threefry2x32(k0, k1, lax.full(shape, 0, np.uint32), flat_index(shape))


def seed(seed_value: Any) -> Any:
    """Key data from an integer seed: high and low 32-bit words of the seed (the high word
    is zero unless the seed is a 64-bit integer)."""
    dtype = np.dtype(seed_value.dtype)
    low = lax.convert_element_type(seed_value, np.uint32)
    if dtype.itemsize == 8:
        high = lax.convert_element_type(
            lax.shift_right_logical(seed_value, np.array(32, dtype)), np.uint32)
    else:
        high = lax.full((), 0, np.uint32)
    return lax.concatenate([lax.expand_dims(high, (0,)), lax.expand_dims(low, (0,))], 0)


def split(key_data: Any, shape: tuple[int, ...]) -> Any:
    """Key data of shape ``(*shape, 2)``: the new key at each position is the pair of
    threefry words of that position's index."""
    y0, y1 = hash_positions(key_data, shape)
    return lax.stack([y0, y1], axis=len(shape))


def fold_in(key_data: Any, data: Any) -> Any:
    """A new key from a key and a 32-bit integer: threefry of the seed pair of ``data``."""
    return hash_flat(key_data, seed(lax.convert_element_type(data, np.uint32)))


def random_bits(key_data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Unsigned integers of ``bit_width`` bits filling ``shape``: both threefry words of
    each position, joined (64 bits) or xor-ed together (32 bits or fewer, truncated)."""
    y0, y1 = hash_positions(key_data, shape)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        high = lax.convert_element_type(y0, dtype)
        low = lax.convert_element_type(y1, dtype)
        return lax.bitwise_or(lax.shift_left(high, dtype.type(32)), low)
    mixed = lax.bitwise_xor(y0, y1)
    return mixed if bit_width == 32 else lax.convert_element_type(mixed, dtype)
