"""``booktools.your_engine``: the capstone's one call that installs every piece the learner
wrote in the exercise notebooks, leaving stubs and failing cells to minijax's own pieces."""

from __future__ import annotations

import nbformat
import pytest

import minijax as jax
import minijax.numpy as jnp
from booktools.your_engine import install_calls, your_engine
from minijax import pieces
from tests.build_it import run_cell


def _cell(source: str, exercise: str | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if exercise:
        cell.metadata["exercise"] = {"name": exercise, "points": 1}
    return cell


def _notebook(path, *cells) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    nbformat.write(notebook, path)


SETUP = _cell("import minijax as jax\nfrom minijax import pieces")
WRITTEN = _cell("calls = []\n\ndef my_backward_pass(*args):\n    calls.append(1)\n"
                "    return pieces.reference('backward_pass')(*args)\n\n"
                "pieces.install('backward_pass', my_backward_pass)", "backward_pass")
STUB = _cell("def my_vjp(fun, *primals):\n    '''Your vjp.'''\n    raise NotImplementedError",
             "vjp")
INSTALL_AND_DEMO = _cell("pieces.install('vjp', my_vjp)\nprint(jax.grad(jax.numpy.sin)(1.0))")


def test_written_pieces_are_installed_and_stubs_left_out(tmp_path, capsys):
    _notebook(tmp_path / "05_reverse.ipynb", SETUP, WRITTEN, STUB, INSTALL_AND_DEMO)
    report = your_engine(tmp_path)
    assert report == {"backward_pass": "yours, from 05_reverse.ipynb",
                      "vjp": "minijax's own (the stub in 05_reverse.ipynb is not written yet)"}
    assert pieces.installed() == ["backward_pass"]
    assert "backward_pass  yours, from 05_reverse.ipynb" in capsys.readouterr().out
    installed = pieces.current("backward_pass")
    jax.grad(jnp.sin)(1.0)
    assert installed.__globals__["calls"], "the learner's backward_pass did not run"


def test_a_failing_cell_keeps_the_reference(tmp_path):
    broken = _cell("def my_backward_pass(*args):\n    return 1\n\nraise ValueError('oops')",
                   "backward_pass")
    other = _cell("pieces.install('backward_pass', my_backward_pass_missing)")
    _notebook(tmp_path / "05_reverse.ipynb", SETUP, broken, other)
    report = your_engine(tmp_path, quiet=True)
    assert report["backward_pass"].startswith("left out (05_reverse.ipynb: ValueError: oops")
    assert pieces.installed() == []


def test_demo_cells_do_not_run(tmp_path):
    demo = _cell("raise SystemExit('a demo cell ran')")
    _notebook(tmp_path / "05_reverse.ipynb", SETUP, WRITTEN, demo,
              _cell("pieces.install('backward_pass', my_backward_pass)"))
    assert your_engine(tmp_path, quiet=True) == {
        "backward_pass": "yours, from 05_reverse.ipynb"}


def test_install_calls_are_read_from_source():
    found = install_calls("pieces.install('jvp_rules', {lax.sin_p: my_sin})\nx = 1", "04.ipynb")
    assert [(f.piece, f.expression) for f in found] == [("jvp_rules", "{lax.sin_p: my_sin}")]
    assert install_calls("this is not python(") == []


def test_install_leaves_a_stub_out_and_using_runs_it(capsys):
    namespace: dict = {}
    source = ("def my_vjp(fun, *primals):\n    '''Your vjp.'''\n    raise NotImplementedError\n\n"
              "class MyTrace:\n    def process_primitive(self, p, args, params):\n"
              "        raise NotImplementedError()\n")
    run_cell(source, namespace)
    for name, stub in (("vjp", namespace["my_vjp"]), ("JVPTrace", namespace["MyTrace"]),
                       ("jvp_rules", {jax.lax.sin_p: namespace["my_vjp"]})):
        pieces.install(name, stub)  # says so, and installs nothing
    assert pieces.installed() == []
    with pieces.using({"vjp": namespace["my_vjp"]}):  # graded as it is: a stub raises
        with pytest.raises(NotImplementedError):
            jax.vjp(jnp.sin, 1.0)
    assert pieces.is_stub(namespace["my_vjp"]) and not pieces.is_stub(jnp.sin)
    assert capsys.readouterr().out.count("still the exercise's stub") == 3
