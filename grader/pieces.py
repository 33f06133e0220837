"""Grading a piece of the engine the learner wrote, by running minijax's own programs on it.

A "Build it" exercise asks for a mechanism (``backward_pass``, a JVP rule table, the jaxpr
printer, ...). Its check names programs -- small uses of the public API that go through the
mechanism -- and :func:`expect_same_with_pieces` runs each twice: in the learner's process
with the learner's pieces installed (:mod:`minijax.pieces`, through the ``with_pieces`` probe),
and here on minijax's own pieces. The two results must agree: the same structure, for each
array the same shape and dtype and values within the dtype's tolerance, text exactly. So a
piece is graded by what it does to the engine, not by how its code is spelled, and a wrong
piece fails with the program, what the reference gave and what the learner's piece gave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from grader.checks import CheckFailed, Namespace, _failure, brief, probe, reported
from grader.plain import FunctionSource, Opaque, _evaluate
from minijax import pieces


class Program(NamedTuple):
    """A use of the engine: ``source`` (a lambda, run as ``source(*args)``), shown as
    ``shown`` in messages (``shown`` may hold ``{args}``, the arguments written out)."""

    shown: str
    source: str
    args: Sequence[Any] = ()


def expect_same_with_pieces(ns: Namespace, installs: Mapping[str, str],
                            programs: Sequence[Program], *, hint: str | None = None) -> None:
    """Each of ``programs`` gives the same result on the learner's pieces ``installs``
    (``{piece name: the notebook's name for it}``) as on minijax's own."""
    for name in installs.values():
        if name not in ns:
            raise CheckFailed(f"{name} is not defined: did you run the cell that defines it?")
    yours = " and ".join(f"your {name}" for name in installs.values())
    for program in programs:
        outcome = probe(ns, "with_pieces", dict(installs), FunctionSource(program.source),
                        *program.args)
        text = f"with {yours} installed, {program.shown}"
        got = reported(text, outcome, hint).value
        want = _on_minijax_pieces(program)
        problem = difference(got, want)
        if problem is not None:
            raise _failure(f"{text} gave {problem}", hint)


def _on_minijax_pieces(program: Program) -> Any:
    """What ``program`` gives on minijax's own pieces. In the grader's process none is
    installed; but ``check()`` in a notebook runs here, where the learner may have installed
    pieces (and the probe then runs the program on them, as the grader's worker does)."""
    with pieces.using({name: pieces.reference(name) for name in pieces.installed()}):
        return _evaluate(program.source, {})(*program.args)


def difference(got: Any, want: Any, where: str = "") -> str | None:
    """How ``got`` differs from the reference result ``want`` (None if it does not), in words
    that name the part (``[1]['w']``), what came back and what minijax's own pieces give."""
    at = f" at {where}" if where else ""
    if isinstance(want, str):
        if got == want:
            return None
        return f"the text{at}\n{got}\nwhere minijax's own pieces give\n{want}"
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{brief(got)}{at}; minijax's own pieces give {brief(want)}"
        return _first(difference(g, w, f"{where}[{i}]")
                      for i, (g, w) in enumerate(zip(got, want, strict=True)))
    if isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            return f"{brief(got)}{at}, where minijax's own pieces give a dict with the keys " \
                   f"{sorted(want)}"
        return _first(difference(got[k], want[k], f"{where}[{k!r}]") for k in sorted(want))
    return _array_difference(got, want, at)


def _first(problems: Any) -> str | None:
    return next((p for p in problems if p is not None), None)


def _array_difference(got: Any, want: Any, at: str) -> str | None:
    want = np.asarray(want)
    if got is None or isinstance(got, (Opaque, str, dict, tuple, list)):
        return f"{brief(got)}{at}; minijax's own pieces give {brief(want)}"
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return (f"an array of shape {got.shape} and dtype {got.dtype}{at}; minijax's own "
                f"pieces give shape {want.shape} and dtype {want.dtype}")
    if want.dtype.kind in "fc":
        rtol = 8 * float(ml_dtypes.finfo(want.dtype).eps) ** 0.75
        same = np.allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        same = np.array_equal(got, want)
    return None if same else f"{brief(got)}{at}; minijax's own pieces give {brief(want)}"
