"""Grading that teaches: partial credit across an exercise's parts, hints on request (or after
repeated failures) and left out of Gradescope's results unless asked for, lowering rules
compared by meaning, and whole failure messages, wrapped, in the score table.

The chapter ``98_parts`` is written into a temporary folder: its check module declares two
exercises split into parts, one remote (run in the grader's process) and one run in the
notebook's worker, and its notebook gets one part of each right.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from grader import checker, hint, inline
from grader.chapters import default_checks_dir, load_checks
from grader.checks import CheckFailed, exercise, part
from grader.limits import Limits
from grader.outcome import (
    NOT_ATTEMPTED_MESSAGE,
    UNCHECKED_MESSAGE,
    NotebookReport,
    PartResult,
    Result,
    Status,
    run_check,
)
from grader.report import format_report, gradescope_json
from grader.runner import grade_notebook

CHAPTER = "98_parts"
HINT = "multiply by two, do not add one"
CHECK_MODULE = f'''
from grader.checks import call, exercise, expect_equal, learner_function, part


def both(ns):
    learner_function(ns, "add")
    with part("add"):
        expect_equal(call(ns, "add", 1, 2), 3)
    with part("double"):
        for x in (2, 5):
            expect_equal(call(ns, "double", x), 2 * x, hint="{HINT}")


check_arith = exercise("arith", points=3, remote=True, parts={{"add": 1, "double": 2}})(both)
check_local = exercise("arith_local", points=2, parts={{"add": 0.5, "double": 1.5}})(both)
'''
HALF_RIGHT = "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return x + 1\n"


@pytest.fixture(scope="module")
def chapter(tmp_path_factory) -> Path:
    """A folder with the chapter's check module in ``checks/`` and its half-right notebook."""
    folder = tmp_path_factory.mktemp("parts")
    (folder / "checks").mkdir()
    (folder / "checks" / f"ch{CHAPTER}.py").write_text(CHECK_MODULE)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(f"from grader import checker\ncheck = checker({CHAPTER!r})"),
        nbformat.v4.new_code_cell(HALF_RIGHT, metadata={"exercise": {"name": "arith",
                                                                     "points": 3}}),
        nbformat.v4.new_code_cell("pass", metadata={"exercise": {"name": "arith_local",
                                                                 "points": 2}}),
    ]
    nbformat.write(nb, folder / f"{CHAPTER}.ipynb")
    return folder


@pytest.fixture(scope="module")
def report(chapter) -> NotebookReport:
    limits = Limits(exercise_seconds=30, notebook_seconds=120)
    return grade_notebook(chapter / f"{CHAPTER}.ipynb", CHAPTER, chapter / "checks", limits)


def namespace(double=lambda x: x + 1) -> dict:
    return {"add": lambda a, b: a + b, "double": double}


# --- partial credit ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["arith", "arith_local"])
def test_a_partly_right_submission_earns_the_points_of_its_right_parts(report, name):
    result = {result.name: result for result in report.results}[name]
    share = {"arith": (1, 2), "arith_local": (0.5, 1.5)}[name]
    assert (result.status, result.points, result.max_points) == (Status.FAILED, share[0],
                                                                 sum(share))
    add, double = result.parts
    assert add == PartResult("add", True, share[0], share[0])
    assert (double.name, double.passed, double.points, double.max_points) == (
        "double", False, 0, share[1])
    assert double.message == f"double(2) returned 3; expected 4 -- hint: {HINT}"
    assert report.score == 1.5 and report.max_score == 5


def test_a_right_submission_earns_every_part_and_a_stub_none(chapter):
    check = load_checks(CHAPTER, chapter / "checks")["arith"]
    right = run_check(check, namespace(double=lambda x: 2 * x))
    assert (right.status, right.points, [p.points for p in right.parts]) == (
        Status.PASSED, 3, [1, 2])

    def stub(*args):
        raise NotImplementedError

    stubbed = run_check(check, {"add": stub, "double": stub})
    assert (stubbed.status, stubbed.points) == (Status.NOT_ATTEMPTED, 0)
    assert [p.points for p in stubbed.parts] == [0, 0]


def test_a_failure_outside_the_parts_fails_the_whole_exercise(chapter):
    check = load_checks(CHAPTER, chapter / "checks")["arith"]
    result = run_check(check, {})
    assert (result.status, result.points) == (Status.FAILED, 0)
    assert result.message == "add is not defined: did you run the cell that defines it?"


def test_parts_must_add_up_to_the_points_and_be_checked():
    with pytest.raises(ValueError, match="add up to 2 points, not 3"):
        exercise("e", points=3, parts={"a": 1, "b": 1})

    @exercise("e", points=2, parts={"a": 1, "b": 1})
    def check_only_a(ns):
        with part("a"):
            pass

    result = run_check(check_only_a, {})
    assert result.points == 1 and result.parts[1].message == UNCHECKED_MESSAGE

    @exercise("e", points=1, parts={"a": 1})
    def check_undeclared(ns):
        with part("z"):
            pass

    assert "part 'z' is not declared" in run_check(check_undeclared, {}).message


def test_a_part_keeps_its_first_failure_and_the_check_goes_on():
    @exercise("e", points=2, parts={"a": 1, "b": 1})
    def check_e(ns):
        for word in ("first", "second"):
            with part("a"):
                raise CheckFailed(word)
        with part("b"):
            if ns["b"] != 1:
                raise CheckFailed("b is not 1")

    result = run_check(check_e, {"b": 1})
    assert (result.points, result.parts[0].message, result.parts[1].passed) == (1, "first", True)


def test_a_stub_fails_its_part_only_and_every_stub_is_not_attempted():
    def stub(*args):
        raise NotImplementedError

    @exercise("e", points=3, parts={"a": 1, "b": 2})
    def check_e(ns):
        for name in ("a", "b"):
            with part(name):
                ns[name]()

    partly = run_check(check_e, {"a": lambda: None, "b": stub})
    assert (partly.status, partly.points) == (Status.FAILED, 1)
    assert partly.parts[1].message == NOT_ATTEMPTED_MESSAGE
    stubs = run_check(check_e, {"a": stub, "b": stub})
    assert (stubs.status, stubs.points, stubs.message) == (
        Status.NOT_ATTEMPTED, 0, NOT_ATTEMPTED_MESSAGE)


def test_chapter_04_jvp_rules_earn_the_points_of_the_right_rules():
    from minijax import lax
    from minijax.interpreters import ad

    def stub(primals, tangents):
        raise NotImplementedError

    def div_without_dy(primals, tangents):  # forgets the -x dy / y**2 term
        (x, y), (tx, _) = primals, tangents
        return lax.div(x, y), lax.div(tx, y)

    right = {p: ad.jvp_rules[p] for p in (lax.sin_p, lax.cos_p, lax.exp_p, lax.mul_p)}
    ns = {"jvp_rules": {**right, lax.log_p: stub, lax.tanh_p: stub, lax.div_p: div_without_dy}}
    check = load_checks("04_forward_mode", default_checks_dir())["jvp_rules"]
    result = run_check(check, ns)
    assert (result.status, result.points, result.max_points) == (Status.FAILED, 1, 3)
    assert [(p.name, p.passed, p.points) for p in result.parts] == [
        ("sin_cos_exp", True, 1), ("log_tanh", False, 0), ("mul_div", False, 0)]
    assert result.parts[1].message == NOT_ATTEMPTED_MESSAGE
    assert result.parts[2].message.startswith(
        "with your jvp_rules installed, jax.jvp(lambda x, y: x * y / (x + y), (x, y), (t, t))")


# --- the score table and Gradescope -----------------------------------------------------------


def test_score_table_shows_each_part_and_its_failure_without_the_hint(report):
    table = format_report(report, width=100)
    lines = table.splitlines()
    assert "arith        1/3      failed" in lines
    assert any(line.startswith("  - add      1/1      passed") for line in lines)
    assert any(line.startswith("  - double   0/2      failed  double(2) returned 3;")
               for line in lines)
    assert "total        1.5/5" in lines
    assert HINT not in table
    assert HINT in format_report(report, width=200, hints=True)


def test_gradescope_shows_partial_scores_and_hints_only_when_asked(report):
    tests = {test["name"]: test for test in gradescope_json(report)["tests"]}
    assert (tests["arith"]["score"], tests["arith"]["max_score"]) == (1, 3)
    assert (tests["arith_local"]["score"], tests["arith_local"]["max_score"]) == (0.5, 2)
    output = tests["arith"]["output"]
    assert output.splitlines()[:2] == ["arith: failed (1/3 points)", "  - add: passed (1/1)"]
    assert output.splitlines()[2].startswith("  - double: failed (0/2) -- double(2) returned 3")
    assert HINT not in json.dumps(gradescope_json(report))
    shown = gradescope_json(report, show_hints=True)["tests"][0]["output"]
    assert shown.splitlines()[2].endswith(f" -- hint: {HINT}")


def test_cli_prints_the_parts_and_wraps_messages_to_the_terminal(chapter, tmp_path):
    results = tmp_path / "results.json"
    command = [sys.executable, "-m", "grader", chapter / f"{CHAPTER}.ipynb", "--chapter",
               CHAPTER, "--checks-dir", chapter / "checks", "--gradescope", results]
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "60"})
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("\n\n")[1].splitlines()  # between the title and the notes
    assert all(len(line) <= 60 for line in table), table
    assert ["-", "double", "0/2", "failed", "double(2)", "returned", "3;", "expected"] == (
        next(line for line in table if "double" in line).split())
    assert HINT not in done.stdout
    assert json.loads(results.read_text())["score"] == 1.5


def test_a_long_message_is_shown_whole_and_wrapped_under_its_column():
    words = " ".join(f"word{i}" for i in range(40))
    message = f"{words}\nsecond line:\n  indented listing line"
    report = NotebookReport("n.ipynb", CHAPTER, [Result("long", Status.FAILED, 0, 1, message)])
    lines = format_report(report, width=60).splitlines()
    rows = lines[lines.index(next(line for line in lines if line.startswith("long"))):-1]
    column = rows[0].index("word0")
    assert all(len(line) <= 60 for line in rows)
    assert all(line[:column].strip() == "" for line in rows[1:])
    assert " ".join(line[column:] for line in rows[:-2]).split() == words.split()
    assert rows[-2][column:] == "second line:"
    assert rows[-1][column:] == "  indented listing line"


# --- hints in the notebook --------------------------------------------------------------------


@pytest.fixture
def check(chapter, monkeypatch):
    monkeypatch.setattr(inline, "_muted", False)
    return checker(CHAPTER, checks_dir=chapter / "checks")


def test_check_hides_the_hint_until_the_third_failure(check, capsys):
    shown = []
    for _ in range(inline.HINTS_AFTER_FAILURES):
        check("arith", namespace=namespace())
        shown.append(capsys.readouterr().out)
    for out in shown[:-1]:
        assert HINT not in out and 'hint("arith")' in out
        assert out.startswith("arith: failed (1/3 points)\n  - add: passed (1/1)\n")
    assert f"-- hint: {HINT}" in shown[-1] and 'hint("arith")' not in shown[-1]


def test_hint_on_request_shows_the_hint_now_and_later(check, capsys):
    hint("arith", namespace())
    assert f"-- hint: {HINT}" in capsys.readouterr().out
    check("arith", namespace=namespace())
    assert f"-- hint: {HINT}" in capsys.readouterr().out


def test_hint_for_a_failure_without_one_says_so_and_a_pass_needs_none(check, capsys):
    check.hint("arith", namespace={})
    assert "has no hint for this failure" in capsys.readouterr().out
    check.hint("arith", namespace(double=lambda x: 2 * x))
    assert capsys.readouterr().out == "arith: passed (3/3 points)\n"


# --- chapter 07: a lowering rule is compared by meaning, not by spelling -----------------------


def _rule(order: str, dtype=None, direction: str = "GT"):
    """A leaky_relu lowering rule emitting its operations in ``order`` (``z``: the zero and
    the comparison, ``s``: the slope and the product), its constants of ``dtype`` (x's by
    default), comparing with ``direction``."""

    def rule(ctx, x, *, negative_slope):
        b, made = ctx.b, {}
        kind = dtype or x.type.dtype
        for step in order:
            if step == "z":
                zero = b.broadcast_to(b.constant(0, kind), x.type.shape)
                made["z"] = b.compare(x, zero, direction)
            else:
                slope = b.broadcast_to(b.constant(negative_slope, kind), x.type.shape)
                made["s"] = b.emit("stablehlo.multiply", x, slope)
        return b.select(made["z"], x, made["s"])

    return rule


@pytest.fixture(scope="module")
def lowering_check():
    return load_checks("07_jit_and_xla", default_checks_dir())["leaky_relu_lowering"]


@pytest.mark.parametrize("order", ["zs", "sz"])
def test_a_lowering_in_another_valid_order_passes(lowering_check, order):
    result = run_check(lowering_check, {"leaky_relu_lowering": _rule(order)})
    assert (result.status, result.points) == (Status.PASSED, 2), result.summary()


def test_a_lowering_that_computes_otherwise_fails_naming_the_program(lowering_check):
    result = run_check(lowering_check, {"leaky_relu_lowering": _rule("zs", direction="LT")})
    assert (result.status, result.points) == (Status.FAILED, 0)
    first = result.parts[0].message
    assert first.startswith("the program lowering leaky_relu(x, negative_slope=0.1) for x of "
                            "type float32[3], compiled by minijax's NumPy backend, computes")
    assert "expected [-0.2 -0.05 0. ]" in first


def test_a_lowering_with_other_operations_fails_in_its_part_only(lowering_check):
    result = run_check(lowering_check, {"leaky_relu_lowering": _rule("zs", np.float32)})
    assert (result.status, result.points) == (Status.FAILED, 1)
    assert [p.passed for p in result.parts] == [True, False]
    message = result.parts[1].message
    assert "for x of type float16[2, 2] gave other operations" in message
    assert "2 x stablehlo.constant -> tensor<f32>" in message
    assert "lack 2 x stablehlo.broadcast_in_dim -> tensor<2x2xf16>" in message
    assert "stablehlo.constant dense<0.000000e+00> : tensor<f16>" not in message  # no answer
