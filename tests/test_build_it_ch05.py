"""Chapter 05's Build-it pieces: each solved piece, installed alone, passes its check's
programs, and a deliberately broken one fails with a message that names the program, what
minijax's own pieces give and what the broken piece gave.

The solved pieces are the solution notebook's own cells (its tools cell and its exercise
cells), run here. That the solutions score full marks and the pristine notebook zero is
tests/test_course_exercises.py's (parametrised over every chapter).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import nbformat
import pytest

from grader.checks import CheckFailed
from grader.pieces import expect_same_with_pieces
from minijax import lax, pieces

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "05_reverse_mode.ipynb"


@cache
def checks_module():
    spec = importlib.util.spec_from_file_location(
        "ch05_checks", ROOT / "exercises" / "checks" / "ch05_reverse_mode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solved_namespace() -> dict:
    """The solution notebook's setup, tools and exercise cells, run in a fresh namespace."""
    cells = nbformat.read(SOLUTIONS, as_version=4).cells
    wanted = {"cell-001", "build-001", "build-003", "build-009", "build-015", "build-021"}
    ns: dict = {}
    for cell in cells:
        if cell.get("id") in wanted:
            exec(cell.source, ns)
    return ns


def programs(name: str) -> list:
    module = checks_module()
    table = {"linearize_flat": module.LINEARIZE_PROGRAMS,
             "transpose_rules": module.TRANSPOSE_PROGRAMS,
             "backward_pass": module.BACKWARD_PROGRAMS}
    if name in table:
        return [program for _, program in table[name]]
    return [program for part, program in module.VJP_PROGRAMS if part == name]


PIECES = ["linearize_flat", "transpose_rules", "backward_pass", "vjp", "grad", "value_and_grad"]


@pytest.mark.parametrize("name", PIECES)
def test_each_solved_piece_alone_passes_its_programs(name):
    ns = solved_namespace()
    assert programs(name)
    expect_same_with_pieces(ns, {name: name}, programs(name))
    assert pieces.installed() == []


def test_the_solved_pieces_of_the_chapter_stay_compact():
    cells = nbformat.read(SOLUTIONS, as_version=4).cells
    solved = [c.source for c in cells if c.get("id") in {"build-003", "build-009", "build-015",
                                                         "build-021"}]
    assert sum(len(source.splitlines()) for source in solved) <= 200


def test_a_backward_pass_that_overwrites_instead_of_accumulating_fails_specifically():
    ns = solved_namespace()
    source = next(c.source for c in nbformat.read(SOLUTIONS, as_version=4).cells
                  if c.get("id") == "build-015")
    accumulating = "add_tangents(cts.get(var, Zero(var.aval)), ct)"
    assert accumulating in source
    exec(source.replace(accumulating, "ct"), ns)  # the last contribution wins
    with pytest.raises(CheckFailed) as failure:
        expect_same_with_pieces(ns, {"backward_pass": "backward_pass"},
                                programs("backward_pass")[:1])
    message = str(failure.value)
    assert "with your backward_pass installed, jax.grad(lambda x: x * x)(3.0) gave 3." in message
    assert "minijax's own pieces give 6." in message


def test_a_transpose_rule_that_passes_ct_to_one_addend_only_fails_specifically():
    ns = solved_namespace()
    ns["transpose_rules"] = {**ns["transpose_rules"],
                             ns["add_any_p"]: lambda ct, x, y: [ct, None]}
    with pytest.raises(CheckFailed) as failure:
        expect_same_with_pieces(ns, {"transpose_rules": "transpose_rules"},
                                programs("transpose_rules")[:1])
    message = str(failure.value)
    assert "with your transpose_rules installed, jax.grad(lambda x: x * x)(3.0) gave 3." \
        in message
    assert "minijax's own pieces give 6." in message


def test_a_neg_rule_with_the_wrong_sign_fails_the_programs_that_use_it():
    ns = solved_namespace()
    ns["transpose_rules"] = {**ns["transpose_rules"], lax.neg_p: lambda ct, x: [ct]}
    sub_and_neg = [p for part, p in checks_module().TRANSPOSE_PROGRAMS
                   if part == "add, sub and neg"]
    with pytest.raises(CheckFailed, match=r"x - 2\.0 \* x \+ \(-x\) \* y.* gave .*minijax's "
                                          r"own pieces give"):
        expect_same_with_pieces(ns, {"transpose_rules": "transpose_rules"}, sub_and_neg)


def test_a_linearize_that_keeps_dead_code_fails_on_the_linear_jaxpr():
    ns = solved_namespace()
    source = next(c.source for c in nbformat.read(SOLUTIONS, as_version=4).cells
                  if c.get("id") == "build-003")
    exec(source.replace("without_dead_code(pe.to_jaxpr(tangents_out))",
                        "pe.to_jaxpr(tangents_out)"), ns)
    jaxpr_programs = [p for part, p in checks_module().LINEARIZE_PROGRAMS
                      if part == "the linear jaxpr"]
    expect_same_with_pieces(ns, {"linearize_flat": "linearize_flat"},
                            programs("linearize_flat")[:2])  # the values are still right
    with pytest.raises(CheckFailed, match="the text\n"):
        expect_same_with_pieces(ns, {"linearize_flat": "linearize_flat"}, jaxpr_programs)


def test_a_transpose_rules_table_without_a_required_rule_is_named():
    ns = solved_namespace()
    del ns["transpose_rules"][lax.sub_p]
    with pytest.raises(CheckFailed, match="transpose_rules has no rule for sub"):
        checks_module().check_transpose_rules.run(ns)


def test_install_leaves_a_stub_out():
    ns = solved_namespace()

    def stub(ct, x):
        raise NotImplementedError

    pieces.install("transpose_rules", {lax.neg_p: stub})
    assert pieces.installed() == []
    pieces.install("backward_pass", ns["backward_pass"])
    try:
        assert pieces.installed() == ["backward_pass"]
    finally:
        pieces.reset()


def test_the_grader_reports_a_broken_piece_by_program_and_both_results(tmp_path):
    # The whole path: the learner's worker runs the notebook, the check sends each program
    # there and compares with minijax's own here.
    from grader.chapters import default_checks_dir
    from grader.limits import Limits
    from grader.runner import grade_notebook

    nb = nbformat.read(SOLUTIONS, as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == "build-015")
    cell.source = cell.source.replace("add_tangents(cts.get(var, Zero(var.aval)), ct)", "ct")
    nbformat.write(nb, tmp_path / "05_reverse_mode.ipynb")
    report = grade_notebook(tmp_path / "05_reverse_mode.ipynb", "05_reverse_mode",
                            default_checks_dir(), Limits())
    result = next(r for r in report.results if r.name == "backward_pass")
    assert result.points == 0
    used_twice = next(p for p in result.parts if p.name == "a variable used twice")
    assert ("with your backward_pass installed, jax.grad(lambda x: x * x)(3.0) gave 3.; "
            "minijax's own pieces give 6.") in used_twice.message
    earlier = [r for r in report.results if r.name in ("linearize", "transpose_rules")]
    assert all(r.points == r.max_points for r in earlier)


def test_the_solved_backward_pass_starts_a_scans_carry_with_the_starts_type():
    # scan's transpose passes `starts`: a weakly typed carry must stay weak, so the jaxpr of
    # grad(scan) prints as with minijax's own backward_pass (and JAX's).
    import minijax as jax
    import minijax.numpy as jnp

    def program():
        f = jax.grad(lambda x: lax.scan(lambda c, xi: (c * jnp.sin(xi), c + xi), 1.0, x)[0])
        return str(jax.make_jaxpr(f)(jnp.array([0.5, -1.0, 2.0]))), f(jnp.array([0.5, 2.0]))

    want = program()
    with pieces.using({"backward_pass": solved_namespace()["backward_pass"]}):
        got = program()
    assert got[0] == want[0]
    assert got[1].weak_type == want[1].weak_type
