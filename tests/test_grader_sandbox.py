"""Hostile submissions: a grade no submission can forge, a grader no submission can stop.

The fixture notebooks in ``tests/fixtures/grader/hostile/`` belong to the real chapter
``00_warmup``, whose checks are ``remote`` (they run in the grader's trusted process):

* ``forge_*`` -- the pristine exercise notebook (every exercise a stub) plus an attempt to forge
  the grade: a fake results file, an ``atexit`` handler or a background thread rewriting it,
  forged replies written into the grader's pipe, patched numpy comparisons, check objects,
  ``run_check``, the ``Result`` class or ``sys.modules``, an ``__array__`` that walks its callers'
  frames for the expected value, ``gc`` searches, reading the grader's ``/proc`` files, files
  written into the grader's package, reading the solutions, and stopping the grader with
  ``SIGSTOP``. Each must score exactly zero; those that only a user of its own or Landlock
  keeps out are graded once more with the worker as the grader's own user.
* ``robust_*`` -- the solved notebook with one hostile piece: the ``relu`` exercise blocks,
  ignores or disarms the timer signal, sleeps in C, raises ``KeyboardInterrupt``, allocates
  16 GB, or writes garbage into the grader's pipe (relu scores
  zero, the other exercises their honest 4 points); or an ordinary cell raises an exception whose
  ``__str__`` raises, calls ``exit()`` or ``os.abort()``, leaves threads and children behind, or
  looks for the grader's environment (they cost nothing: 5 points).
"""

from __future__ import annotations

import json
import os
import re
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from grader import sandbox, session
from grader.channel import Channel, Deadline
from grader.chapters import default_checks_dir
from grader.limits import Limits
from grader.notebook import read_code_cells
from grader.outcome import NotebookReport, Status
from grader.plain import Opaque, ProtocolError, decode, encode
from grader.runner import grade_notebook
from grader.session import worker_has_a_user_of_its_own

HOSTILE = Path(__file__).parent / "fixtures" / "grader" / "hostile"
#: Short exercise limits keep the hanging cases quick; the notebook limit leaves room for them.
LIMITS = Limits(exercise_seconds=5, notebook_seconds=180)
AS_ROOT = worker_has_a_user_of_its_own()  # as root, the worker runs as `nobody`
LANDLOCK = sandbox.abi_version() > 0  # the worker confines itself, whoever it runs as

FORGERIES = sorted(path.stem for path in HOSTILE.glob("forge_*.ipynb"))
#: Without a user of its own and without Landlock, only the container keeps these apart (the
#: README's threat model says so).
SEPARATED = {"forge_proc_parent", "forge_grader_files", "forge_read_solutions",
             "forge_stop_the_grader"}
REACHED = "the notebook reached for the answer, which scores zero: "

TIMED_OUT = f"timed out after {LIMITS.exercise_seconds:g} s"
RELU_BROKEN = {
    "robust_sigalrm_blocked": TIMED_OUT,
    "robust_sigalrm_ignored": TIMED_OUT,
    "robust_timer_disarmed": TIMED_OUT,
    "robust_c_sleep": TIMED_OUT,
    "robust_keyboard_interrupt": "relu(np.array([-2.0, -0.5, 0.0, 1.5, 3.0])) raised "
    "KeyboardInterrupt",
    "robust_memory": "raised MemoryError: Unable to allocate 16.0 GiB",
    "robust_garbage_on_the_pipe": "the notebook process sent something that is not plain data "
    "(a message of 4294967295 bytes is too long)",
}
HARMLESS_CELLS = {
    "robust_bad_str": "raised Unprintable: <Unprintable: str() failed>; grading continued",
    "robust_exit": "raised SystemExit: None; grading continued",
    "robust_abort": "stopped: the notebook process died (killed by SIGABRT); the grader "
    "restarted the notebook without it and continued",
    "robust_threads_and_children": None,
    "robust_environment": None,
}


def grade(name: str) -> NotebookReport:
    return grade_notebook(HOSTILE / f"{name}.ipynb", "00_warmup", default_checks_dir(), LIMITS)


def scores(report: NotebookReport) -> dict[str, float]:
    return {result.name: result.points for result in report.results}


def processes_running(*arguments: str) -> list[int]:
    """Pids of processes whose command line is exactly ``arguments``."""
    wanted = "\0".join(arguments).encode() + b"\0"
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("name", FORGERIES)
def test_a_forged_grade_scores_zero(name):
    if name in SEPARATED and not (AS_ROOT or LANDLOCK):
        pytest.skip("the worker runs as the grader's own user: only a container separates them")
    assert_forged_zero(grade(name))


def assert_forged_zero(report: NotebookReport) -> None:
    assert scores(report) == {"relu": 0, "softmax": 0, "logsumexp": 0}, report.results
    assert (report.score, report.max_score) == (0, 5)
    assert all(result.max_points in (1, 2) for result in report.results)


@pytest.fixture
def same_user(monkeypatch):
    """Workers run as the grader's own user, as when the grader is not root."""
    monkeypatch.setattr(session, "_WORKER_USER", "")
    session._unprivileged_user.cache_clear()
    assert not worker_has_a_user_of_its_own()
    yield
    session._unprivileged_user.cache_clear()


@pytest.mark.skipif(not LANDLOCK, reason="this kernel has no Landlock")
@pytest.mark.parametrize("name", sorted(SEPARATED))
def test_landlock_keeps_a_worker_of_the_same_user_out(name, same_user):
    assert_forged_zero(grade(name))
    package = Path(default_checks_dir()).parents[1] / "grader"
    assert not (package / "zz_tampered.py").exists()


@pytest.mark.skipif(not (AS_ROOT or LANDLOCK), reason="nothing keeps the worker out")
def test_reading_the_solutions_is_reported_as_reaching_for_the_answer():
    relu = grade("forge_read_solutions").results[0]
    assert relu.name == "relu" and relu.message.startswith(REACHED), relu.message
    assert "solutions/00_warmup.ipynb: the course's solutions and checks are not the " \
        "notebook's to read" in relu.message


@pytest.mark.skipif(not (AS_ROOT or LANDLOCK), reason="nothing keeps the worker out")
def test_the_grader_cannot_be_stopped_by_a_signal():
    relu = grade("forge_stop_the_grader").results[0]
    assert "raised PermissionError: [Errno 1] Operation not permitted" in relu.message


@pytest.mark.skipif(not AS_ROOT, reason="the worker has no user of its own to drop to")
def test_files_written_into_the_grader_do_not_land():
    grade("forge_grader_files")
    package = Path(default_checks_dir()).parents[1] / "grader"
    for folder in (package, default_checks_dir()):
        assert not (folder / "zz_tampered.py").exists()


@pytest.mark.skipif(not AS_ROOT, reason="the worker has no user of its own to drop to")
def test_the_grader_process_is_not_readable_from_the_worker():
    relu = next(r for r in grade("forge_proc_parent").results if r.name == "relu")
    assert "raised PermissionError" in relu.message


@pytest.mark.parametrize("name", RELU_BROKEN)
def test_a_hostile_exercise_costs_only_itself(name):
    report = grade(name)
    relu = report.results[0]
    assert (relu.name, relu.status, relu.points) == ("relu", Status.FAILED, 0)
    assert RELU_BROKEN[name] in relu.message
    assert scores(report) == {"relu": 0, "softmax": 2, "logsumexp": 2}, report.results
    assert report.error is None


@pytest.mark.parametrize("name", HARMLESS_CELLS)
def test_a_hostile_ordinary_cell_costs_nothing(name, monkeypatch):
    monkeypatch.setenv("MINIJAX_GRADER_TEST_SECRET", "the grader's own")
    report = grade(name)
    assert scores(report) == {"relu": 1, "softmax": 2, "logsumexp": 2}, report.results
    assert report.error is None
    expected = HARMLESS_CELLS[name]
    hostile = next(cell for cell in read_code_cells(HOSTILE / f"{name}.ipynb") if cell.number == 3)
    assert report.notes == ([] if expected is None else [f"{hostile.label()} {expected}"])


def test_no_thread_or_child_outlives_the_grading():
    grade("robust_threads_and_children")
    assert processes_running("sleep", "31337") == []
    assert processes_running("sleep", "31338") == []



# --- the trouble fixture, with its checks run remotely (in the grader) -------------------------


def test_remote_checks_give_the_same_verdicts_as_checks_beside_the_notebook(tmp_path):
    from test_grader import CHECKS, FAST, TROUBLE

    checks = tmp_path / "checks"
    checks.mkdir()
    source = (CHECKS / "ch99_fixture.py").read_text()
    remote = re.sub(r"@exercise\(([^)]*)\)", r"@exercise(\1, remote=True)", source)
    assert remote.count("remote=True") == 10
    (checks / "ch99_fixture.py").write_text(remote)
    notebook = CHECKS.parent / "99_fixture_trouble.ipynb"
    report = grade_notebook(notebook, "99_fixture", checks, FAST)
    results = {result.name: result for result in report.results}
    for name, message in TROUBLE.items():
        assert (results[name].status, results[name].points) == (Status.FAILED, 0), name
        assert message in results[name].message, name
    assert (results["greeting"].status, report.score, report.error) == (Status.PASSED, 2, None)


# --- plain data: what the grader accepts from the worker ---------------------------------------


class Sneaky:
    def __eq__(self, other):
        return True

    def __repr__(self):
        return "Sneaky()"


@pytest.mark.parametrize(
    "value",
    [None, True, 3, 2.5, float("nan"), float("-inf"), 1 + 2j, "text", [1, [2.0]], (1, "a"),
     {"k": (1, 2)}, np.float32(1.5), np.int8(-3), np.array([[1.0, 2.0]]), np.zeros(0, bool),
     np.arange(6, dtype=np.uint16).reshape(2, 3)],
)
def test_plain_values_survive_the_round_trip_with_their_types(value):
    back = decode(json.loads(json.dumps(encode(value))))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    elif isinstance(value, float) and np.isnan(value):
        assert np.isnan(back)
    else:
        assert back == value


def test_minijax_arrays_arrive_as_minijax_arrays():
    import minijax
    import minijax.numpy as jnp

    for value in (jnp.array([[1, 2]], dtype=jnp.int32), jnp.float16(1.5)):
        back = decode(json.loads(json.dumps(encode(value))))
        assert isinstance(back, minijax.Array)
        assert (back.dtype, back.shape) == (value.dtype, value.shape)
        assert np.array_equal(np.asarray(back), np.asarray(value))


def test_anything_else_arrives_opaque_and_equal_to_nothing():
    class Subclassed(np.ndarray):
        pass

    for value in (Sneaky(), np.array(["a"]), np.array([Sneaky()], dtype=object)):
        back = decode(encode(value))
        assert isinstance(back, Opaque) and back != back.text
    sub = decode(encode(np.arange(3.0).view(Subclassed)))
    assert type(sub) is np.ndarray  # the numbers of an ndarray subclass, as a plain ndarray


@pytest.mark.parametrize(
    "data",
    [
        {"$": "ndarray", "dtype": "|O", "shape": [1], "data": ""},  # object arrays: no
        {"$": "ndarray", "dtype": "<f8", "shape": [2], "data": "AAAAAAAAAAA="},  # 8 bytes, not 16
        {"$": "ndarray", "dtype": "<f8", "shape": [-1], "data": ""},
        {"$": "ndarray", "dtype": [["a", "<f8"]], "shape": [], "data": ""},
        {"$": "scalar", "dtype": "<U1", "data": "YQAAAA=="},
        {"$": "float", "text": "1e308"},
        {"$": "dict", "items": [[[1], 2]]},  # an unhashable key
        {"$": "complex", "re": "1", "im": 0},
        {"$": "pickle", "data": ""},
        {"no tag": 1},
        "x" * 20_000,
    ],
)
def test_malformed_data_is_refused(data):
    with pytest.raises(ProtocolError):
        decode(data)


def test_a_malformed_or_huge_message_is_refused(tmp_path):
    read_fd, write_fd = os.pipe()
    channel = Channel(read_fd, write_fd)
    try:
        os.write(write_fd, struct.pack(">I", 5) + b"[1,2]")
        with pytest.raises(ProtocolError, match="must be a JSON object"):
            channel.receive(time.monotonic() + 5)
        os.write(write_fd, struct.pack(">I", 3) + b"{{{")
        with pytest.raises(ProtocolError, match="not JSON"):
            channel.receive(time.monotonic() + 5)
        os.write(write_fd, struct.pack(">I", 2**31))
        with pytest.raises(ProtocolError, match="too long"):
            channel.receive(time.monotonic() + 5)
        os.write(write_fd, struct.pack(">I", 10) + b"{}")  # cut short: waits, then gives up
        with pytest.raises(Deadline):
            channel.receive(time.monotonic() + 0.2)
    finally:
        os.close(read_fd)
        os.close(write_fd)


# --- the reference piece an exercise replaces ----------------------------------------------


def test_a_captured_reference_to_a_forbidden_function_is_refused(tmp_path):
    # Chapter 05 asks for jacrev built from vjp; calling minijax's own jacrev, even through a
    # name taken before the check ran, is reported as such.
    import nbformat

    solved = HOSTILE.parents[2].parent / "solutions" / "05_reverse_mode.ipynb"
    nb = nbformat.read(solved, as_version=4)
    cell = next(c for c in nb.cells
                if c.metadata.get("exercise", {}).get("name") == "jacrev_from_vjp")
    cell.source = ("from minijax import jacrev as reference\n\n\n"
                   "def jacrev_from_vjp(f, x):\n    return reference(f)(x)")
    nbformat.write(nb, tmp_path / "05_reverse_mode.ipynb")
    report = grade_notebook(tmp_path / "05_reverse_mode.ipynb", "05_reverse_mode",
                            default_checks_dir(), Limits(exercise_seconds=60))
    result = next(r for r in report.results if r.name == "jacrev_from_vjp")
    assert result.points == 0
    assert "raised ForbiddenTransformation: this exercise is to be solved without jax.jacrev" \
        in result.message
    assert report.score == report.max_score - result.max_points  # the others are unaffected


def solved_variant(tmp_path: Path, chapter: str, name: str, source: str) -> Path:
    """The solved notebook of ``chapter`` with exercise ``name``'s cell replaced by ``source``."""
    import nbformat

    nb = nbformat.read(HOSTILE.parents[2].parent / "solutions" / f"{chapter}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("exercise", {}).get("name") == name)
    cell.source = source
    nbformat.write(nb, tmp_path / f"{chapter}.ipynb")
    return tmp_path / f"{chapter}.ipynb"


def test_calling_the_reference_piece_an_exercise_replaces_scores_zero(tmp_path):
    # Chapter 02 asks for fori_loop written with scan and while_loop: minijax's own fori_loop,
    # even through a name taken before the check ran, is refused and reported as reaching for it.
    notebook = solved_variant(
        tmp_path, "02_numpy_and_lax", "fori_loop",
        "from minijax.lax import fori_loop as reference\n\n\n"
        "def fori_loop(lower, upper, body_fun, init_val):\n"
        "    return reference(lower, upper, body_fun, init_val)")
    report = grade_notebook(notebook, "02_numpy_and_lax", default_checks_dir(),
                            Limits(exercise_seconds=60))
    result = next(r for r in report.results if r.name == "fori_loop")
    assert (result.status, result.points) == (Status.FAILED, 0)
    assert result.message == (f"{REACHED}this exercise is to be solved without "
                              "minijax.lax.fori_loop: it is the piece this exercise asks you to "
                              "write")
    assert report.score == report.max_score - result.max_points  # the others are unaffected


def test_forbidding_restores_every_function():
    import minijax
    from grader.checks import ForbiddenTransformation, forbidding

    jacrev = minijax.jacrev
    with forbidding(minijax, "jacrev", instead="use vjp"):
        with pytest.raises(ForbiddenTransformation, match="without jax.jacrev: use vjp"):
            jacrev(lambda x: x)
    assert minijax.jacrev is jacrev
    assert np.allclose(np.asarray(jacrev(lambda x: 2 * x)(np.float32(1.0))), 2.0)


def test_every_check_of_the_course_judges_in_the_trusted_process():
    from grader.chapters import known_chapters, load_checks

    checks = default_checks_dir()
    beside = [f"{chapter}:{name}" for chapter in known_chapters(checks)
              for name, check in load_checks(chapter, checks).items() if not check.remote]
    assert beside == []


def test_a_function_crosses_as_its_source_and_its_calls_are_counted_back():
    from grader.checks import Shown
    from grader.plain import FunctionSource, functions_in, realize

    shown = Shown("double", lambda x: 2 * x, "lambda x: 2 * x")
    sent = decode(json.loads(json.dumps(encode([shown, {"k": FunctionSource("y")}]))))
    assert [type(f) for f in functions_in(sent)] == [FunctionSource, FunctionSource]
    made: list = []
    there = realize(sent, {"y": 7}, made)
    assert there[0](21) == 42 and there[0].calls == 1 and there[1] == {"k": 7}
    assert made == [there[0], 7]  # what each source became, in the order both sides count


def test_a_probed_chapter_holds_no_expected_value_for_gc_to_find(tmp_path):
    # Chapter 02's huber is checked with calls and a trace probe; its expected values are
    # computed in the grader only, so the worker's heap has none to hand back.
    notebook = solved_variant(
        tmp_path, "02_numpy_and_lax", "huber",
        "import gc\n\n\n"
        "def huber(x, delta):\n"
        "    for obj in gc.get_objects():\n"
        "        if type(obj) is np.ndarray and obj.shape == np.shape(x) and obj.min() >= 0 \\\n"
        "                and obj.dtype.kind == 'f':\n"
        "            return jnp.asarray(obj, dtype=x.dtype)\n"
        "    return x * 0.0")
    report = grade_notebook(notebook, "02_numpy_and_lax", default_checks_dir(),
                            Limits(exercise_seconds=60))
    result = next(r for r in report.results if r.name == "huber")
    assert (result.status, result.points) == (Status.FAILED, 0), result.message
    assert report.score == report.max_score - result.max_points
