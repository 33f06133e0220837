"""The programs of the broad benchmark (``suite.py``): each written once for any NumPy-like
module (NumPy, minijax's or JAX's ``jnp``), plus a hand-written NumPy version as a careful
programmer writes it (backward passes by hand, in place where that saves a copy).

* MLPs (256-256-256-10, ReLU, tanh or GELU hidden layers, softmax cross-entropy), a training
  step: ``value_and_grad`` and an SGD update of a dict of parameters;
* an RNN with a tanh cell written with ``scan`` (forward, and forward + backward);
* numerical loops: explicit Euler with ``fori_loop``, Newton's square root with
  ``while_loop``;
* attention-like: batched matmuls and a softmax;
* per-example gradients: ``vmap(grad(loss))`` of a small tanh MLP over a batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mlp import numpy_cross_entropy  # benchmarks/mlp.py, beside this file

INPUTS, HIDDEN, CLASSES = 256, 256, 10
LEARNING_RATE = 0.01
GELU_C = float(np.sqrt(2 / np.pi))


def _normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(np.float32)


# ---------------------------------------------------------------------------------------
# MLP training step
# ---------------------------------------------------------------------------------------


def mlp_example(batch: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Parameters ``{"w1", "b1", ..., "b3"}``, inputs and one-hot labels, float32, seeded."""
    rng = np.random.default_rng(batch)
    sizes = (INPUTS, HIDDEN, HIDDEN, CLASSES)
    params = {}
    for i, (m, n) in enumerate(zip(sizes, sizes[1:]), start=1):
        params[f"w{i}"] = _normal(rng, m, n, scale=float(1 / np.sqrt(m)))
        params[f"b{i}"] = _normal(rng, n, scale=0.1)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]
    return params, _normal(rng, batch, INPUTS), labels


def activation(jnp: Any, name: str) -> Callable[[Any], Any]:
    if name == "relu":
        return lambda z: jnp.maximum(z, 0.0)
    if name == "tanh":
        return jnp.tanh
    return lambda z: 0.5 * z * (1.0 + jnp.tanh(GELU_C * (z + 0.044715 * z ** 3)))


def mlp_step_for(jnp: Any, value_and_grad: Callable, act: str) -> Callable:
    """``step(params, x, y) -> (new_params, loss)`` for a NumPy-like module."""
    f = activation(jnp, act)

    def loss(params, x, y):
        h = f(x @ params["w1"] + params["b1"])
        h = f(h @ params["w2"] + params["b2"])
        logits = h @ params["w3"] + params["b3"]
        logits = logits - jnp.max(logits, axis=1, keepdims=True)
        log_p = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1, keepdims=True))
        return -jnp.mean(jnp.sum(log_p * y, axis=1))

    def step(params, x, y):
        value, grads = value_and_grad(loss)(params, x, y)
        return {k: params[k] - LEARNING_RATE * grads[k] for k in params}, value

    return step


def _act_forward(act: str, z: np.ndarray) -> tuple[np.ndarray, tuple]:
    """The activation of ``z`` (overwriting it where possible) and what its derivative
    needs later."""
    if act == "relu":
        h = np.maximum(z, 0, out=z)
        return h, (h,)
    if act == "tanh":
        h = np.tanh(z, out=z)
        return h, (h,)
    t = z * z
    t *= 0.044715
    t += 1
    t *= z
    t *= GELU_C
    np.tanh(t, out=t)
    h = t + 1
    h *= z
    h *= 0.5
    return h, (z, t)


def _act_backward(act: str, d: np.ndarray, saved: tuple) -> None:
    """``d *= f'(z)``, in place."""
    if act == "relu":
        np.multiply(d, saved[0] > 0, out=d)
    elif act == "tanh":
        (h,) = saved
        d *= 1 - h * h
    else:
        z, t = saved
        inner = z * z
        inner *= 3 * 0.044715
        inner += 1
        inner *= GELU_C * 0.5
        inner *= z
        inner *= 1 - t * t
        inner += 0.5 * (1 + t)
        d *= inner


def numpy_mlp_step(act: str, params: dict, x: np.ndarray, y: np.ndarray) -> tuple:
    """The step with the backward pass written by hand."""
    h1, s1 = _act_forward(act, np.add(x @ params["w1"], params["b1"]))
    h2, s2 = _act_forward(act, np.add(h1 @ params["w2"], params["b2"]))
    logits = h2 @ params["w3"]
    logits += params["b3"]
    loss, d3 = numpy_cross_entropy(logits, y)
    grads = {"w3": h2.T @ d3, "b3": d3.sum(0)}
    d2 = d3 @ params["w3"].T
    _act_backward(act, d2, s2)
    grads["w2"], grads["b2"] = h1.T @ d2, d2.sum(0)
    d1 = d2 @ params["w2"].T
    _act_backward(act, d1, s1)
    grads["w1"], grads["b1"] = x.T @ d1, d1.sum(0)
    new = {}
    for k, p in params.items():
        g = grads[k]
        g *= -LEARNING_RATE
        g += p
        new[k] = g
    return new, loss


# ---------------------------------------------------------------------------------------
# Scan RNN
# ---------------------------------------------------------------------------------------

STEPS, RNN_BATCH, RNN_INPUTS, RNN_HIDDEN = 64, 16, 32, 64


def rnn_example() -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(1)
    params = {"w": _normal(rng, RNN_HIDDEN, RNN_HIDDEN, scale=0.1),
              "u": _normal(rng, RNN_INPUTS, RNN_HIDDEN, scale=0.1),
              "b": _normal(rng, RNN_HIDDEN, scale=0.1)}
    return params, _normal(rng, STEPS, RNN_BATCH, RNN_INPUTS)


def rnn_loss_for(jnp: Any, scan: Callable) -> Callable:
    """Mean square of every hidden state of ``h' = tanh(h w + x u + b)`` from zeros."""

    def loss(params, xs):
        def cell(h, x):
            h = jnp.tanh(h @ params["w"] + x @ params["u"] + params["b"])
            return h, h

        _, hs = scan(cell, jnp.zeros((xs.shape[1], RNN_HIDDEN), xs.dtype), xs)
        return jnp.mean(hs * hs)

    return loss


def _numpy_rnn_states(params: dict, xs: np.ndarray) -> np.ndarray:
    """The initial state (zeros) and every hidden state after it."""
    hs = np.empty((STEPS + 1, RNN_BATCH, RNN_HIDDEN), np.float32)
    hs[0] = 0
    for t in range(STEPS):
        z = hs[t] @ params["w"]
        z += xs[t] @ params["u"]
        z += params["b"]
        np.tanh(z, out=hs[t + 1])
    return hs


def numpy_rnn_loss(params: dict, xs: np.ndarray) -> np.floating:
    hs = _numpy_rnn_states(params, xs)[1:]
    return np.mean(hs * hs)


def numpy_rnn_value_and_grad(params: dict, xs: np.ndarray) -> tuple:
    """The loss and its gradient, backpropagation through time written by hand."""
    hs = _numpy_rnn_states(params, xs)
    loss = np.mean(hs[1:] * hs[1:])
    d_hs = hs[1:] * (2 / hs[1:].size)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dh = np.zeros((RNN_BATCH, RNN_HIDDEN), np.float32)
    for t in reversed(range(STEPS)):
        dh += d_hs[t]
        dh *= 1 - hs[t + 1] * hs[t + 1]
        grads["w"] += hs[t].T @ dh
        grads["u"] += xs[t].T @ dh
        grads["b"] += dh.sum(0)
        dh = dh @ params["w"].T
    return loss, grads


# ---------------------------------------------------------------------------------------
# Numerical loops
# ---------------------------------------------------------------------------------------

LOOP_ITERATIONS, LOOP_SIZE = 1000, 16
DT = 0.01


def loop_example() -> np.ndarray:
    return np.linspace(0.5, 4.0, LOOP_SIZE, dtype=np.float32)


def euler_for(fori_loop: Callable, jnp: Any, n: int = LOOP_ITERATIONS) -> Callable:
    """``n`` explicit Euler steps of ``x' = sin(x) - x``. (The body is made once, so that
    eager JAX finds its compiled loop in its cache.)"""
    step = lambda i, x: x + DT * (jnp.sin(x) - x)
    return lambda x: fori_loop(0, n, step, x)


def newton_for(while_loop: Callable, n: int = LOOP_ITERATIONS) -> Callable:
    """``n`` Newton steps towards ``sqrt(a)`` (they keep going after convergence)."""

    def body(carry):
        i, x, a = carry
        return i + 1, x - (x * x - a) / (2 * x), a

    def cond(carry):
        return carry[0] < n

    return lambda a: while_loop(cond, body, (0, a, a))[1]


def numpy_euler(x: np.ndarray, n: int = LOOP_ITERATIONS) -> np.ndarray:
    x = x.copy()
    for _ in range(n):
        step = np.sin(x)
        step -= x
        step *= DT
        x += step
    return x


def numpy_newton(a: np.ndarray, n: int = LOOP_ITERATIONS) -> np.ndarray:
    x = a.copy()
    for _ in range(n):
        step = x * x
        step -= a
        step /= 2 * x
        x -= step
    return x


# ---------------------------------------------------------------------------------------
# Attention-like
# ---------------------------------------------------------------------------------------

HEADS, SEQUENCE, FEATURES = 8, 64, 64


def attention_example() -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(2)
    scale = float(1 / np.sqrt(FEATURES))
    params = {k: _normal(rng, FEATURES, FEATURES, scale=scale) for k in ("q", "k", "v", "o")}
    return params, _normal(rng, HEADS, SEQUENCE, FEATURES)


def attention_for(jnp: Any) -> Callable:
    """One attention block: projections, scaled scores, softmax, weighted sum, output."""

    def attention(params, x):
        q, k, v = (x @ params[n] for n in ("q", "k", "v"))
        scores = q @ jnp.swapaxes(k, -1, -2) * (1 / np.sqrt(FEATURES))
        scores = scores - jnp.max(scores, axis=-1, keepdims=True)
        p = jnp.exp(scores)
        p = p / jnp.sum(p, axis=-1, keepdims=True)
        return (p @ v) @ params["o"]

    return attention


def numpy_attention(params: dict, x: np.ndarray) -> np.ndarray:
    q, k, v = (x @ params[n] for n in ("q", "k", "v"))
    q *= 1 / np.sqrt(FEATURES)
    scores = q @ np.swapaxes(k, -1, -2)
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return (scores @ v) @ params["o"]


# ---------------------------------------------------------------------------------------
# Per-example gradients
# ---------------------------------------------------------------------------------------

EXAMPLE_INPUTS, EXAMPLE_HIDDEN = 64, 128


def per_example_example(batch: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """A 64-128-10 MLP's parameters, ``batch`` inputs and one-hot labels."""
    rng = np.random.default_rng(3)
    params = {"w1": _normal(rng, EXAMPLE_INPUTS, EXAMPLE_HIDDEN,
                            scale=float(1 / np.sqrt(EXAMPLE_INPUTS))),
              "b1": _normal(rng, EXAMPLE_HIDDEN, scale=0.1),
              "w2": _normal(rng, EXAMPLE_HIDDEN, CLASSES,
                            scale=float(1 / np.sqrt(EXAMPLE_HIDDEN))),
              "b2": _normal(rng, CLASSES, scale=0.1)}
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, batch)]
    return params, _normal(rng, batch, EXAMPLE_INPUTS), labels


def per_example_grads_for(jnp: Any, grad: Callable, vmap: Callable) -> Callable:
    """``grads(params, xs, ys)``: the gradient of each example's loss, stacked."""

    def loss(params, x, y):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        logits = h @ params["w2"] + params["b2"]
        logits = logits - jnp.max(logits)
        return -jnp.sum((logits - jnp.log(jnp.sum(jnp.exp(logits)))) * y)

    return vmap(grad(loss), in_axes=(None, 0, 0))


def numpy_per_example_grads(params: dict, xs: np.ndarray, ys: np.ndarray) -> dict:
    """The same, batched by hand: a weight's gradient per example is an outer product."""
    h = np.tanh(np.add(xs @ params["w1"], params["b1"]))
    logits = h @ params["w2"]
    logits += params["b2"]
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p *= ys.sum(axis=1, keepdims=True) / p.sum(axis=1, keepdims=True)
    d2 = np.subtract(p, ys, out=p)
    d1 = d2 @ params["w2"].T
    d1 *= 1 - h * h
    return {"w1": xs[:, :, None] * d1[:, None, :], "b1": d1,
            "w2": h[:, :, None] * d2[:, None, :], "b2": d2}
