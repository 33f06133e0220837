"""Checks for chapter 10, the capstone: a training step, accuracy, per-example gradients.

The learner's functions use the notebook's own model (``predict`` and ``loss``, given in the
notebook). The expected values are computed here from this module's copy of the same model,
with NumPy in float64 where the formula is plain (accuracy, the gradient of a linear model's
mean loss) and with minijax's reference engine where it is not; a submission is graded alone,
on minijax's own pieces.
"""

from __future__ import annotations

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    brief,
    call,
    call_transformed,
    exercise,
    expect_close,
    part,
)

LEARNING_RATE = 0.5  # as the notebook says


def _model(seed: int, n: int) -> tuple[dict, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {"w0": (rng.standard_normal((64, 32)) / 8).astype(np.float32),
              "b0": (0.1 * rng.standard_normal(32)).astype(np.float32),
              "w1": (rng.standard_normal((32, 10)) / np.sqrt(32)).astype(np.float32),
              "b1": (0.1 * rng.standard_normal(10)).astype(np.float32)}
    x = rng.random((n, 64)).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    return params, x, y


def _predict(params, x):
    hidden = jnp.tanh(x @ params["w0"] + params["b0"])
    return hidden @ params["w1"] + params["b1"]


def _loss(params, x, y):
    logits = _predict(params, x)
    shifted = logits - jnp.max(logits, axis=1, keepdims=True)
    log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=1, keepdims=True))
    one_hot = y[:, None] == jnp.arange(10)
    return -jnp.mean(jnp.sum(jnp.where(one_hot, log_probs, 0.0), axis=1))


def _expect_params(got, want: dict, text: str, hint: str) -> None:
    if not isinstance(got, dict) or sorted(got) != sorted(want):
        raise CheckFailed(f"{text} returned new parameters {brief(got)}; expected a dict with "
                          f"the keys {sorted(want)}, like params -- hint: {hint}")
    for name in sorted(want):
        value = np.asarray(got[name])
        if value.shape != want[name].shape or not np.allclose(value, want[name], rtol=1e-4,
                                                                atol=1e-5):
            raise CheckFailed(f"{text} returned {name} = {brief(value)}; expected "
                              f"{brief(want[name])} -- hint: {hint}")


@exercise("sgd_step", points=2, remote=True,
          parts={"eagerly": 1, "under jax.jit": 1})
def check_sgd_step(ns):
    hint = ("value, grads = jax.value_and_grad(loss)(params, x, y); each new parameter is "
            "p - LEARNING_RATE * g (jax.tree_util.tree_map); return (new_params, value)")
    for seed, n in ((0, 16), (3, 5)):
        params, x, y = _model(seed, n)
        value, grads = jax.value_and_grad(_loss)(params, x, y)
        want = {k: np.asarray(params[k] - LEARNING_RATE * np.asarray(grads[k])) for k in params}
        for where, transform in (("eagerly", None), ("under jax.jit", "jax.jit")):
            with part(where):
                got = (call(ns, "sgd_step", params, x, y, hint=hint) if transform is None
                       else call_transformed(ns, transform, "sgd_step", params, x, y, hint=hint))
                if not isinstance(got.value, (tuple, list)) or len(got.value) != 2:
                    raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a pair "
                                      f"(new_params, loss value) -- hint: {hint}")
                _expect_params(got.value[0], want, got.call, hint)
                expect_close(type(got)(got.call + "[1]", got.value[1]), np.asarray(value),
                             rtol=1e-5, hint="the loss of params, before the step")


@exercise("accuracy", points=1, remote=True)
def check_accuracy(ns):
    hint = "float(jnp.mean(jnp.argmax(predict(params, x), axis=1) == y))"
    for seed, n in ((1, 40), (2, 7)):
        params, x, y = _model(seed, n)
        guesses = np.argmax(np.asarray(_predict(params, x)), axis=1)
        y = np.where(np.arange(n) % 2 == 0, guesses, y).astype(np.int32)  # some right
        got = call(ns, "accuracy", params, x, y, hint=hint)
        if not isinstance(got.value, float):
            raise CheckFailed(f"{got.call} returned {brief(got.value)} of type "
                              f"{type(got.value).__name__}; expected a Python float -- hint: "
                              f"{hint}")
        expect_close(got, np.mean(guesses == y), rtol=1e-6, hint=hint)


@exercise("per_example_grad_norms", points=2, remote=True)
def check_per_example_grad_norms(ns):
    hint = ("the gradient of loss(params, image[None], label[None]) mapped over the images "
            "and labels with jax.vmap(..., in_axes=(None, 0, 0)), then per example the square "
            "root of the sum of every leaf's squares")
    for seed, n in ((4, 6), (5, 1)):
        params, x, y = _model(seed, n)
        want = []
        for i in range(n):
            grads = jax.grad(_loss)(params, x[i:i + 1], y[i:i + 1])
            want.append(np.sqrt(sum(float(np.sum(np.asarray(g, np.float64) ** 2))
                                    for g in grads.values())))
        got = call(ns, "per_example_grad_norms", params, x, y, hint=hint)
        expect_close(got, np.array(want), rtol=1e-4, hint=hint)
