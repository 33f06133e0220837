"""Convolutions: ``conv_general_dilated`` and its helpers, built from other ``lax`` ops.

JAX has a ``conv_general_dilated`` primitive (XLA's convolution). minijax instead writes
the convolution as the operations it is made of, so ``jit``, ``grad`` and the NumPy
backend handle it with no new rules:

1. transpose both operands to the canonical layouts (batch, feature, spatial...) and
   (out feature, in feature, spatial...), as ``dimension_numbers`` says;
2. one ``pad`` both dilates the input (``lhs_dilation - 1`` zeros between elements) and
   pads its borders;
3. for every position of the (dilated) kernel, a strided ``slice`` of the input gives the
   input values that this kernel element meets at every output position;
4. a ``dot_general`` contracts input features and kernel positions against the kernel, one
   batch per feature group;
5. transpose the result to the output layout.

The price is that a jaxpr shows these operations, not one ``conv_general_dilated``
equation, and the number of slices is the kernel's size.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax.lax.base import convert_element_type, dot_general, full, operand, reshape, transpose
from minijax.lax.shapes import stack
from minijax.lax.slicing import pad
from minijax.lax.slicing import slice as lax_slice

__all__ = ["ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated",
           "conv_with_general_padding", "padtype_to_pads"]


class ConvDimensionNumbers(NamedTuple):
    """Where the batch/feature/spatial dimensions are: ``lhs_spec`` lists the positions of
    (batch, feature, spatial...) in the input, ``rhs_spec`` of (out feature, in feature,
    spatial...) in the kernel, ``out_spec`` of (batch, feature, spatial...) in the output."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def _spec_of(text: str, pair: str, rhs_text: str) -> tuple[int, ...]:
    """Positions of the two letters of ``pair`` in ``text``, then of its spatial letters,
    in the order the kernel's spec (``rhs_text``) lists them."""
    spatial = [i for i, c in enumerate(text) if c not in pair]
    if text is not rhs_text:
        spatial.sort(key=lambda i: rhs_text.index(text[i]))
    return (text.index(pair[0]), text.index(pair[1]), *spatial)


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """``dimension_numbers`` (None, three strings like ``('NHWC', 'HWIO', 'NHWC')``, or
    already a :class:`ConvDimensionNumbers`) as a :class:`ConvDimensionNumbers`."""
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if dimension_numbers is None:
        default = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(default, default, default)
    lhs_text, rhs_text, out_text = dimension_numbers
    for text, pair in ((lhs_text, "NC"), (rhs_text, "OI"), (out_text, "NC")):
        if len(text) != len(lhs_shape) or any(text.count(c) != 1 for c in pair):
            raise TypeError(f"convolution dimension_numbers {text!r} must have one "
                            f"{pair[0]!r} and one {pair[1]!r} and length {len(lhs_shape)}")
    return ConvDimensionNumbers(_spec_of(lhs_text, "NC", rhs_text),
                                _spec_of(rhs_text, "OI", rhs_text),
                                _spec_of(out_text, "NC", rhs_text))


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """Explicit (low, high) pads for ``'VALID'`` (none), ``'SAME'`` (output size
    ceil(in / stride), the extra pad at the high end) and ``'SAME_LOWER'`` (at the low)."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        total = max(0, (-(-size // stride) - 1) * stride + window - size)
        low = total // 2 if kind == "SAME" else total - total // 2
        pads.append((low, total - low))
    return pads


def _check(lhs: Any, rhs: Any, window_strides: Sequence[int], feature_group_count: int,
           batch_group_count: int) -> None:
    if lhs.dtype != rhs.dtype:
        raise TypeError("lax.conv_general_dilated requires arguments to have the same dtypes, "
                        f"got {lhs.dtype}, {rhs.dtype}.")
    if len(window_strides) != lhs.ndim - 2:
        raise ValueError("conv_general_dilated window and window_strides must have the same "
                         f"number of dimensions, but got {lhs.ndim - 2} and "
                         f"{len(window_strides)}")
    if batch_group_count != 1:
        raise NotImplementedError("minijax's conv_general_dilated supports only "
                                  "batch_group_count=1")


def _windows(x: Any, kernel: Sequence[int], strides: Sequence[int], dilation: Sequence[int]
             ) -> Any:
    """(batch, feature, kernel position, *output spatial): for each kernel element, the
    input values it multiplies at every output position."""
    spatial = x.shape[2:]
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    out = [max(0, (n - r) // s + 1) for n, r, s in zip(spatial, reach, strides)]
    patches = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        start = [o * d for o, d in zip(offset, dilation)]
        limit = [b + (m - 1) * s + 1 if m else b for b, m, s in zip(start, out, strides)]
        patches.append(lax_slice(x, (0, 0, *start), (*x.shape[:2], *limit),
                                 (1, 1, *strides)))
    return stack(patches, axis=2)


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None) -> Any:
    """The general convolution of XLA: strides, explicit or named padding, input
    (transposed-convolution) and kernel (atrous) dilation, any layout, feature groups."""
    lhs, rhs = operand(lhs), operand(rhs)
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    window_strides = tuple(window_strides)
    _check(lhs, rhs, window_strides, feature_group_count, batch_group_count)
    n = lhs.ndim - 2
    lhs_dilation = tuple(lhs_dilation or (1,) * n)
    rhs_dilation = tuple(rhs_dilation or (1,) * n)
    x, w = transpose(lhs, dnums.lhs_spec), transpose(rhs, dnums.rhs_spec)
    groups, in_features = feature_group_count, w.shape[1]
    if x.shape[1] % groups or x.shape[1] // groups != in_features:
        raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                         "feature_group_count must equal the rhs input feature dimension "
                         f"size, but {x.shape[1]} // {groups} != {in_features}.")
    if isinstance(padding, str):
        dilated_in = [(s - 1) * d + 1 for s, d in zip(x.shape[2:], lhs_dilation)]
        dilated_kernel = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], rhs_dilation)]
        padding = padtype_to_pads(dilated_in, dilated_kernel, window_strides, padding)
    config = [(0, 0, 0), (0, 0, 0)] + [(lo, hi, d - 1)
                                       for (lo, hi), d in zip(padding, lhs_dilation)]
    x = pad(x, full((), 0, x.dtype), config)
    patches = _windows(x, w.shape[2:], window_strides, rhs_dilation)
    batch, out_features, positions = x.shape[0], w.shape[0], math.prod(w.shape[2:])
    out_spatial = patches.shape[3:]
    patches = reshape(patches, (batch, groups, in_features, positions, *out_spatial))
    kernel = reshape(w, (groups, out_features // groups, in_features, positions))
    # batch over groups; contract (in feature, kernel position): (G, N, *out, O/G)
    y = dot_general(patches, kernel, (((2, 3), (2, 3)), ((1,), (0,))), precision=precision,
                    preferred_element_type=preferred_element_type)
    y = transpose(y, (1, 0, y.ndim - 1, *range(2, y.ndim - 1)))
    y = reshape(y, (batch, out_features, *out_spatial))
    y = transpose(y, tuple(np.argsort(dnums.out_spec)))
    if preferred_element_type is not None:
        y = convert_element_type(y, preferred_element_type)
    return y


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``conv_general_dilated`` in the default layouts (NCHW input, OIHW kernel)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: Any, lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)
