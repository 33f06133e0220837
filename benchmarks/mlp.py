"""The network both MLP benchmarks measure: a 784-256-10 perceptron (tanh hidden layer,
softmax cross-entropy loss) on a batch of 128 float32 examples.

Shared by ``mlp_grad.py`` (the cost of a gradient) and ``jit_mlp.py`` (a jitted training
step), so that both time the same problem: the same seeded data, the same loss written once
for any NumPy-like module, and the same hand-written NumPy gradient to compare against.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

BATCH, INPUTS, HIDDEN, CLASSES = 128, 784, 256, 10


def example() -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """Parameters (w1, b1, w2, b2), images and one-hot labels, float32, seeded."""
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    params = (0.05 * normal(INPUTS, HIDDEN), np.zeros(HIDDEN, np.float32),
              0.05 * normal(HIDDEN, CLASSES), np.zeros(CLASSES, np.float32))
    images = normal(BATCH, INPUTS)
    labels = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, BATCH)]
    return params, images, labels


def loss_for(jnp: Any) -> Callable[..., Any]:
    """The loss, written once for any NumPy-like module (NumPy, minijax's or JAX's ``jnp``)."""

    def loss(params, images, labels):
        w1, b1, w2, b2 = params
        hidden = jnp.tanh(images @ w1 + b1)
        logits = hidden @ w2 + b2
        logits = logits - jnp.max(logits, axis=1, keepdims=True)
        log_probabilities = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1, keepdims=True))
        return -jnp.mean(jnp.sum(log_probabilities * labels, axis=1))

    return loss


def numpy_value_and_grad(params: tuple, images: np.ndarray, labels: np.ndarray) -> tuple:
    """The loss and its gradient with a backward pass written by hand, as a careful NumPy
    programmer writes them (in place where that saves a copy)."""
    w1, b1, w2, b2 = params
    hidden = images @ w1
    hidden += b1
    np.tanh(hidden, out=hidden)
    logits = hidden @ w2
    logits += b2
    loss, d_logits = numpy_cross_entropy(logits, labels)
    d_hidden = d_logits @ w2.T
    d_hidden *= 1 - hidden * hidden
    return loss, (images.T @ d_hidden, d_hidden.sum(0), hidden.T @ d_logits, d_logits.sum(0))


def numpy_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> tuple[Any, np.ndarray]:
    """Mean softmax cross-entropy of ``logits`` (overwritten) and its gradient by hand."""
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    total = exp.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum((logits - np.log(total)) * labels, axis=1))
    d_logits = exp / total  # softmax minus one-hot, averaged over the batch
    d_logits -= labels
    d_logits /= len(labels)
    return loss, d_logits
