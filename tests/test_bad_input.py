"""Bad input never gets a silent answer: a conformance suite of bad and edge-case inputs.

The cases live in ``bad_input_cases.py`` as data (programs over a namespace with ``jnp``,
``lax`` and ``jax``); each runs under minijax and under JAX (the oracle):

* where JAX raises, minijax raises the same class, and its message names what was wrong;
* where JAX answers (NaN, infinities, empty arrays, wrapping integers, clamped indices),
  minijax gives the same values, dtypes and weak types;
* where minijax differs on purpose, the difference is listed with its reason, and the
  test checks that it still is one (a fixed difference must leave the list).
"""

from __future__ import annotations

import warnings

import pytest

from tests.bad_input_cases import DIFFERENCES, ERRORS, VALUES
from tests.oracle import assert_same, run_both

jax = pytest.importorskip("jax")


def _run_quietly(program):
    with warnings.catch_warnings():  # casts that lose information warn; not the point here
        warnings.simplefilter("ignore")
        return run_both(program)


def test_the_suite_is_large():
    assert len(ERRORS) + len(VALUES) >= 200


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_as_jax_does(name):
    program, words = ERRORS[name]
    (ours_kind, ours), (theirs_kind, theirs) = _run_quietly(program)
    assert theirs_kind == "error", f"JAX no longer raises: {theirs!r}"
    assert ours_kind == "error", f"minijax answered {ours!r}; JAX raised {theirs!r}"
    assert type(ours).__name__ == type(theirs).__name__, (
        f"minijax raised {type(ours).__name__}: {ours}\n"
        f"JAX raised {type(theirs).__name__}: {theirs}")
    for word in words:
        assert word in str(ours), f"{word!r} not in minijax's message: {ours}"


@pytest.mark.parametrize("name", sorted(VALUES))
def test_edge_case_gives_jax_answer(name):
    ours, theirs = _run_quietly(VALUES[name])
    assert theirs[0] == "ok", f"JAX raises here: {theirs[1]!r} (move the case to ERRORS)"
    assert_same(ours, theirs)


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_documented_difference_still_holds(name):
    program, reason = DIFFERENCES[name]
    ours, theirs = _run_quietly(program)
    try:
        assert_same(ours, theirs)
    except AssertionError:
        return
    pytest.fail(f"minijax now behaves as JAX does; remove {name!r} from DIFFERENCES "
                f"(it said: {reason})")
