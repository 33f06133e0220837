"""Checks for chapter 00, the warm-up: ``relu``, ``softmax`` and ``logsumexp`` in numpy.

The inputs are chosen to catch the classic bugs: ``exp`` overflowing on large inputs (and 0/0 on
very negative ones), reducing over the wrong axis of a 2-D array, one maximum for the whole array
instead of one per row, a result of the wrong shape or dtype, and a modified input (``call``
checks every array argument for that).

Expected values never come from the solution notebook. Softmax and logsumexp are shift-invariant
-- softmax(x + c) = softmax(x) and logsumexp(x + c) = logsumexp(x) + c -- so the expected value
for a huge input is the textbook formula evaluated on a small, safe input.
"""

import numpy as np

from grader.checks import call, exercise, expect_close, expect_dtype, expect_equal


def textbook_softmax(x):
    """exp(x) / sum(exp(x)) over the last axis; exact on small inputs, where exp cannot overflow."""
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def textbook_logsumexp(x):
    """log(sum(exp(x))) over the last axis; exact on small inputs."""
    return np.log(np.exp(x).sum(axis=-1))


@exercise("relu", points=1, remote=True)
def check_relu(ns):
    got = call(ns, "relu", np.array([-2.0, -0.5, 0.0, 1.5, 3.0]))
    expect_equal(got, np.array([0.0, 0.0, 0.0, 1.5, 3.0]))
    got = call(ns, "relu", np.array([[1.0, -1.0], [-2.0, 2.0]]))
    expect_equal(got, np.array([[1.0, 0.0], [0.0, 2.0]]), hint="keep the input's shape")
    got = call(ns, "relu", np.array([-1.0, 2.0], dtype=np.float32))
    expect_dtype(got, np.float32, hint="compute with numpy operations on x, e.g. np.maximum(x, 0)")


@exercise("softmax", points=2, remote=True)
def check_softmax(ns):
    x = np.array([1.0, 2.0, 3.0])
    expect_close(
        call(ns, "softmax", x),
        textbook_softmax(x),
        hint="the entries of softmax(x) are exp(x_i) / sum_j exp(x_j): positive, summing to 1",
    )
    overflow = "np.exp(1000.0) is inf; softmax(x) = softmax(x - x.max()), which cannot overflow"
    got = call(ns, "softmax", np.array([1000.0, 1001.0]))
    expect_close(got, textbook_softmax(np.array([0.0, 1.0])), hint=overflow)
    underflow = "np.exp(-1000.0) is 0, and 0/0 is nan; subtract the maximum first"
    got = call(ns, "softmax", np.array([-1000.0, -1001.0]))
    expect_close(got, textbook_softmax(np.array([0.0, -1.0])), hint=underflow)

    rows = "normalise each row: sum along the last axis with axis=-1, keepdims=True"
    for x in (
        np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]),  # 2 x 3: a wrong axis often fails loudly
        np.array([[0.0, 1.0, 2.0], [2.0, 0.0, 0.0], [5.0, 5.0, 5.0]]),  # 3 x 3: it fails silently
    ):
        expect_close(call(ns, "softmax", x), textbook_softmax(x), hint=rows)
    got = call(ns, "softmax", np.array([[1000.0, 1001.0], [-1000.0, -1001.0]]))
    expected = textbook_softmax(np.array([[0.0, 1.0], [0.0, -1.0]]))
    expect_close(got, expected, hint="subtract each row's own maximum (axis=-1, keepdims=True)")


@exercise("logsumexp", points=2, remote=True)
def check_logsumexp(ns):
    x = np.array([1.0, 2.0, 3.0])
    expect_close(
        call(ns, "logsumexp", x),
        textbook_logsumexp(x),
        hint="logsumexp(x) = log(sum(exp(x))) is a single number for a 1-D x",
    )
    stable = "use logsumexp(x) = m + log(sum(exp(x - m))) with m = max(x)"
    got = call(ns, "logsumexp", np.array([1000.0, 1000.0]))
    expect_close(got, 1000.0 + np.log(2.0), hint=f"np.exp(1000.0) is inf; {stable}")
    got = call(ns, "logsumexp", np.array([-1000.0, -1000.0]))
    expect_close(
        got, -1000.0 + np.log(2.0), hint=f"np.exp(-1000.0) is 0, and log(0) is -inf; {stable}"
    )
    expect_close(call(ns, "logsumexp", np.array([5.0])), 5.0)

    got = call(ns, "logsumexp", np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]]))
    expected = [textbook_logsumexp(np.array([1.0, 2.0, 3.0])), 1000.0 + np.log(3.0)]
    expect_close(got, expected, hint="one result per row, each with its own row's maximum")
