"""Checks for chapter 01, arrays: ``.at[]`` updates, pure functions, dtypes, devices.

Every check feeds the learner's function minijax arrays (and, where the exercise says so,
NumPy arrays), because the point of the chapter is how JAX arrays differ from NumPy's. The
inputs are chosen to catch the classic bugs: a repeated index counted once, a negative
index that wraps around instead of being ignored, ``0 / 0`` for a row of zeros, an input
modified in place, integer differences that wrap around, Python ``if`` on array values, and
arrays committed to different devices.

Expected values never come from the solution notebook: they are computed here with NumPy,
in 64-bit arithmetic, from the definition of each exercise.
"""

from __future__ import annotations

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Returned,
    brief,
    call,
    exercise,
    expect_close,
    expect_dtype,
    expect_equal,
    learner_function,
    probe,
    reported,
    show,
)
from grader.plain import FunctionSource


def expect_jax_array(got: Returned, hint: str) -> None:
    if not isinstance(got.value, jax.Array):
        raise CheckFailed(
            f"{got.call} returned a {type(got.value).__name__}; expected a jax.Array "
            f"-- hint: {hint}"
        )


@exercise("histogram", points=2, remote=True)
def check_histogram(ns):
    def counts(values: list[int], n: int) -> np.ndarray:
        values = np.array(values, dtype=np.int64)
        return np.bincount(values[(values >= 0) & (values < n)], minlength=n)

    cases = [
        ([0, 1, 3, 2], 4, "counts[i] is how often i occurs in indices"),
        ([1, 1, 1, 0, 3, 3], 4, "a repeated index must be counted every time: "
         "counts.at[indices].add(1) accumulates, NumPy-style counts[indices] += 1 does not"),
        ([2, 5, 0, 7, 2], 3, "values >= n are ignored (.at[] drops out-of-bounds updates)"),
        ([0, -1, -3, 1], 3, "-1 is a valid index (the last bin), so .at[] does not drop it: "
         "add 0 instead of 1 for values outside [0, n), e.g. with a boolean mask"),
        ([], 2, "no indices, no counts"),
    ]
    for values, n, hint in cases:
        got = call(ns, "histogram", jnp.array(values, dtype=jnp.int32), n)
        expect_equal(got, counts(values, n), hint=hint)
        expect_dtype(got, np.int32, hint="start from jnp.zeros(n, dtype=jnp.int32)")


@exercise("normalize_rows", points=2, remote=True)
def check_normalize_rows(ns):
    def unit_rows(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        norms = np.sqrt((x**2).sum(axis=1, keepdims=True))
        return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)

    rng = np.random.default_rng(1)
    cases = [
        (jnp.array([[3.0, 4.0], [1.0, 0.0], [0.0, -2.0]]),
         "divide each row by its length, jnp.linalg.norm(x, axis=1, keepdims=True)"),
        (jnp.asarray(rng.standard_normal((5, 3)).astype(np.float32)),
         "keepdims=True makes the norms broadcast against the rows"),
        (jnp.array([[0.0, 0.0], [6.0, 8.0]]),
         "0 / 0 is nan: divide a row of zeros by 1 instead (jnp.where(norms == 0, 1, norms))"),
        (np.array([[1.0, 1.0], [2.0, 0.0]], dtype=np.float32),
         "NumPy input too: convert with jnp.asarray(x) and compute with jnp"),
    ]
    for x, hint in cases:
        got = call(ns, "normalize_rows", x, hint="use jnp functions and .at[] or "
                       "jnp.where, never x[i] = ...: JAX arrays are immutable")
        expect_jax_array(got, "compute with jnp functions, which return jax.Arrays")
        expect_close(got, unit_rows(x), rtol=1e-5, atol=1e-7, hint=hint)
        expect_dtype(got, np.float32, hint="stay in float32: do not convert to float64")


@exercise("mean_abs_difference", points=2, remote=True)
def check_mean_abs_difference(ns):
    rng = np.random.default_rng(2)
    cases = [
        (jnp.array([[10, 20], [30, 40]], dtype=jnp.uint8),
         jnp.array([[20, 20], [30, 250]], dtype=jnp.uint8),
         "uint8 cannot hold 10 - 20 = -10: it wraps around to 246; convert to float32 first"),
        (jnp.array([-100, 100], dtype=jnp.int8), jnp.array([100, -100], dtype=jnp.int8),
         "int8 cannot hold -200 either: convert to float32 before subtracting"),
        (jnp.asarray(rng.integers(0, 256, (40, 50), dtype=np.uint8)),
         jnp.asarray(rng.integers(0, 256, (40, 50), dtype=np.uint8)),
         "convert both images to float32 before subtracting"),
        (jnp.array([2_000_000_000, -5], dtype=jnp.int32),
         jnp.array([-2_000_000_000, 5], dtype=jnp.int32),
         "even int32 differences can overflow (and int64 needs x64): float32 holds them"),
        (jnp.array([0.5, 1.25], dtype=jnp.float32), jnp.array([0.25, 2.0], dtype=jnp.float32),
         "float inputs must keep their fractions: convert to float32, not to an integer type"),
    ]
    for a, b, hint in cases:
        want = np.mean(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))
        got = call(ns, "mean_abs_difference", a, b)
        expect_close(got, want, rtol=1e-6, hint=hint)
        expect_dtype(got, np.float32, hint="return the float32 mean, e.g. jnp.mean(...)")


def _expect_clip_and_count(got: Returned, x: np.ndarray, lo: float, hi: float) -> None:
    if not (isinstance(got.value, tuple) and len(got.value) == 2):
        raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a pair "
                          "(clipped, count) -- hint: return clipped, count")
    clipped, count = got.value
    want_clipped = np.clip(x, lo, hi)
    expect_equal(Returned(f"{got.call}[0]", clipped), want_clipped,
                 hint="values below lo become lo, values above hi become hi")
    expect_dtype(Returned(f"{got.call}[0]", clipped), x.dtype,
                 hint="keep x's dtype: jnp.clip(x, lo, hi) or jnp.where(...) on x")
    want_count = int(np.sum((x < lo) | (x > hi)))
    hint = "count the values outside [lo, hi] (a value equal to lo or hi is not changed)"
    expect_equal(Returned(f"{got.call}[1]", count), want_count, hint=hint)
    if not (isinstance(count, jax.Array) and jnp.issubdtype(count.dtype, jnp.integer)):
        raise CheckFailed(
            f"{got.call}[1] is {type(count).__name__} {brief(count)}; expected an integer "
            "jax.Array -- hint: return jnp.sum(mask) itself, not int(...)"
        )


@exercise("clip_and_count", points=2, remote=True)
def check_clip_and_count(ns):
    cases = [
        (jnp.array([-2.0, 0.5, 3.0, 1.0, 0.0]), 0.0, 1.0),
        (jnp.array([[5, -5], [10, 0]], dtype=jnp.int32), -1, 6),
        (jnp.array([0.25, 0.75]), 0.0, 1.0),
    ]
    for x, lo, hi in cases:
        got = call(ns, "clip_and_count", x, lo, hi)
        _expect_clip_and_count(got, np.asarray(x), lo, hi)

    x, lo, hi = cases[0]
    shown = f"jax.make_jaxpr(clip_and_count, static_argnums=(1, 2))({show(x)}, {lo}, {hi})"
    traced = probe(ns, "trace", "clip_and_count", [x, lo, hi], (1, 2))
    if "raised" in traced:
        raise CheckFailed(
            f"{shown} raised {traced['raised']} -- hint: under tracing values are "
            "unknown, so Python if/while on them and int(...) fail; use jnp.clip or "
            "jnp.where, and jnp.sum of a boolean mask"
        )


#: Runs in the learner's process (the ``observe`` probe), which has the two devices the notebook
#: asked for (this one need not): builds each case's arrays on their devices, calls the
#: learner's sum_on_device and reports what it returned and where (a device is not plain data).
_OBSERVE_SUM = """def observe_sum_on_device(ns, cases):
    describe = __import__("grader.checks", fromlist=["x"]).describe_exception
    devices = jax.devices()
    reports = [len(devices)]
    for arrays, target in cases:
        placed = [jnp.array(values) if where is None else
                  jax.device_put(jnp.array(values), devices[where]) for values, where in arrays]
        device = devices[target]
        try:
            result = ns["sum_on_device"](placed, device)
        except NotImplementedError:
            raise
        except Exception as exc:
            reports.append({"raised": describe(exc)})
            break
        report = {"value": result, "device": str(device)}
        if isinstance(result, jax.Array):
            report["on"] = [str(result.device), bool(result.committed), result.device == device]
        reports.append(report)
    return reports
"""


@exercise("sum_on_device", points=1, remote=True)
def check_sum_on_device(ns):
    learner_function(ns, "sum_on_device")
    first, last = 0, -1  # device indices, into the learner's process's devices
    hint = "move every array to device with jax.device_put(a, device) before adding"
    cases = [
        ([([1.0, 2.0], first), ([10.0, 20.0], None), ([100.0, 200.0], last)], last),
        ([([[1, 2], [3, 4]], None)], last),
        ([([1.0], last), ([2.0], last)], first),
    ]
    count, *reports = probe(ns, "observe", FunctionSource(_OBSERVE_SUM), cases)
    for (arrays, device), report in zip(cases, reports):
        shown = [show(jnp.array(values)) if where is None else
                 f"jax.device_put({show(jnp.array(values))}, jax.devices()[{where % count}])"
                 for values, where in arrays]
        got = reported(f"sum_on_device([{', '.join(shown)}], jax.devices()[{device % count}])",
                       report, hint)
        want = np.sum([np.asarray(jnp.array(values)) for values, _ in arrays], axis=0)
        expect_jax_array(got, hint)
        expect_equal(got, want, hint="add the arrays elementwise")
        on, committed, right = report["on"]
        if not right or not committed:
            where = f"on {on}, {'' if committed else 'un'}committed"
            raise CheckFailed(
                f"{got.call} returned an array {where}; expected one committed to "
                f"{report['device']} -- hint: {hint}"
            )
