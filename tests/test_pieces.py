"""The learner's plug (``minijax.pieces``): every piece, once installed, is what the public
API runs; reset brings back the very same reference objects; caches forget what the
previous pieces made; a deliberately broken piece (a cache key that ignores dtypes) is
observable."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp
from minijax import core, lax, pieces
from minijax.compiler import jit as jit_module

X = jnp.float32(0.5)
V = jnp.arange(3.0)


def _sin(x):
    return jnp.sin(x)


def _leaked_tracer():
    saved = []
    jax.jit(lambda x: saved.append(x * 2.0) or x)(X)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jnp.sin(saved[0])


def _bool_of_tracer():
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda x: x if x > 0 else -x)(X)


# For each piece: a program of the public API that must go through it, and for a rule
# table the primitive whose rule is wrapped.
PROGRAMS: dict[str, tuple[Callable[[], Any], Any]] = {
    "bind": (lambda: jnp.sin(X), None),
    "EvalTrace": (lambda: jnp.sin(X), None),
    "broadcast_shapes_trivially": (lambda: jnp.ones((2, 1)) * jnp.ones((1, 3)), None),
    "least_upper_bound": (lambda: jnp.ones(2, jnp.int8) + jnp.ones(2, jnp.uint8), None),
    "fori_loop": (lambda: jax.lax.fori_loop(0, 3, lambda i, c: c * 2, X), None),
    "JVPTrace": (lambda: jax.jvp(_sin, (X,), (X,)), None),
    "jvp_rules": (lambda: jax.grad(_sin)(X), lax.sin_p),
    "jvp": (lambda: jax.jacfwd(_sin)(X), None),
    "jacfwd": (lambda: jax.hessian(_sin)(X), None),
    "linearize_flat": (lambda: jax.grad(_sin)(X), None),
    "transpose_rules": (lambda: jax.grad(lambda x: jnp.sin(x) * 2.0)(X), lax.mul_p),
    "backward_pass": (lambda: jax.grad(_sin)(X), None),
    "vjp": (lambda: jax.grad(_sin)(X), None),
    "grad": (lambda: jax.grad(_sin)(X), None),
    "value_and_grad": (lambda: jax.grad(_sin)(X), None),
    "JaxprTrace": (lambda: jax.make_jaxpr(_sin)(X), None),
    "pp_toplevel_jaxpr": (lambda: str(jax.make_jaxpr(_sin)(X)), None),
    "print_jaxpr": (lambda: str(jax.make_jaxpr(_sin)(X)), None),
    "eval_jaxpr": (lambda: lax.cond(X > 0, jnp.sin, jnp.cos, X), None),
    "dce_jaxpr": (lambda: jax.grad(jax.jit(_sin))(X), None),
    "cache_key": (lambda: jax.jit(_sin)(X), None),
    "cached": (lambda: jax.jit(_sin)(X), None),
    "lowering_rules": (lambda: jax.jit(_sin)(X), lax.sin_p),
    "common_subexpression_elimination": (lambda: jax.jit(_sin)(X), None),
    "dead_code_elimination": (lambda: jax.jit(_sin)(X), None),
    "generate": (lambda: jax.jit(_sin)(X), None),
    "compile_jaxpr": (lambda: jax.jit(lambda x: jnp.cos(x) * 3.0)(X), None),
    "concrete_or_error": (_bool_of_tracer, None),
    "check_valid_tracer": (_leaked_tracer, None),
    "BatchTrace": (lambda: jax.vmap(_sin)(V), None),
    "batching_rules": (lambda: jax.vmap(_sin)(V), lax.sin_p),
    "vmap": (lambda: jax.jacfwd(_sin)(V), None),
}


def test_every_piece_has_a_program():
    assert set(PROGRAMS) == set(pieces.PIECES)


def _counting(name: str, calls: list, primitive: Any = None) -> Any:
    """A wrapper around the reference ``name`` that counts its calls: a subclass for a
    class (its ``process_primitive``), a one-entry table for a rule table (the rule of
    ``primitive``, by default the one of :data:`PROGRAMS`)."""
    reference = pieces.reference(name)
    if pieces.PIECES[name].table:
        primitive = primitive or PROGRAMS[name][1]
        rule = reference[primitive]

        def counted_rule(*args, **params):
            calls.append(name)
            return rule(*args, **params)
        return {primitive: counted_rule}
    if isinstance(reference, type):
        def process_primitive(self, *args, **kwargs):
            calls.append(name)
            return reference.process_primitive(self, *args, **kwargs)
        return type(f"Counting{name}", (reference,), {"process_primitive": process_primitive})

    def counted(*args, **kwargs):
        calls.append(name)
        return reference(*args, **kwargs)
    return counted


def _minijax_globals() -> dict[tuple[str, str], int]:
    """id of every global of every minijax module (a snapshot to compare after reset)."""
    return {(module_name, key): id(value) for module_name, module in list(sys.modules.items())
            if module is not None and module_name.split(".")[0] == "minijax"
            for key, value in vars(module).items()}


def _plain(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, jax.Array) else str(x)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_an_installed_piece_is_what_the_api_runs(name):
    program, _ = PROGRAMS[name]
    want = program()
    before = _minijax_globals()
    references = {n: pieces.reference(n) for n in pieces.PIECES}
    eval_trace = core.eval_trace
    calls: list[str] = []
    pieces.install(name, _counting(name, calls))
    try:
        assert pieces.installed() == [name]
        got = program()
    finally:
        pieces.reset(name)
    assert calls, f"{name} was installed but {program} did not run it"
    if want is not None:
        np.testing.assert_equal(jax.tree.map(_plain, got), jax.tree.map(_plain, want))
    # Reset restores the very same objects, everywhere.
    assert pieces.installed() == []
    for n, reference in references.items():
        current = pieces.current(n)
        assert current == reference if pieces.PIECES[n].table else current is reference
    assert core.eval_trace is eval_trace
    after = _minijax_globals()
    changed = [k for k in before if k in after and before[k] != after[k]]
    assert not changed, f"module globals changed by install+reset of {name}: {changed[:5]}"
    calls.clear()
    program()
    assert not calls, f"{name} still runs after reset"


def test_eval_trace_instance_is_replaced_and_restored():
    own = core.eval_trace
    calls: list[str] = []
    with pieces.using({"EvalTrace": _counting("EvalTrace", calls)}):
        assert type(core.eval_trace).__name__ == "CountingEvalTrace"
        assert core.current_trace() is core.eval_trace
        np.testing.assert_allclose(jnp.sin(X), np.sin(0.5), rtol=1e-6)
    assert core.eval_trace is own and calls


def test_using_nests_and_restores_on_exception():
    reference = pieces.reference("backward_pass")
    outer: list[str] = []
    inner: list[str] = []
    with pieces.using({"backward_pass": _counting("backward_pass", outer)}):
        first = pieces.current("backward_pass")
        with pytest.raises(ZeroDivisionError):
            with pieces.using({"backward_pass": _counting("backward_pass", inner)}):
                jax.grad(_sin)(X)
                raise ZeroDivisionError
        assert pieces.current("backward_pass") is first
        assert pieces.installed() == ["backward_pass"]
        jax.grad(_sin)(X)
    assert inner and outer
    assert pieces.current("backward_pass") is reference and pieces.installed() == []


def test_using_a_table_nests_and_restores():
    reference = dict(pieces.current("jvp_rules"))
    calls: list[str] = []
    with pytest.raises(RuntimeError):
        with pieces.using({"jvp_rules": _counting("jvp_rules", calls)}):
            with pieces.using({"jvp_rules": {lax.cos_p: lambda *a, **k: 1 / 0}}):
                pass
            jax.grad(_sin)(X)
            raise RuntimeError
    assert calls and pieces.current("jvp_rules") == reference


def test_a_rule_registered_inside_a_block_stays():
    new_primitive = core.Primitive("registered_meanwhile")
    table = pieces.current("jvp_rules")
    with pieces.using({"jvp_rules": {lax.sin_p: table[lax.sin_p]}}):
        table[new_primitive] = print  # a module imported in the block registers a rule
    assert table.pop(new_primitive) is print


def test_unknown_names_and_wrong_kinds_raise_clear_errors():
    with pytest.raises(KeyError, match="'backwards_pass' is not a piece of minijax"):
        pieces.install("backwards_pass", print)
    with pytest.raises(TypeError, match="is a rule table: install a dict"):
        pieces.install("jvp_rules", print)
    with pytest.raises(KeyError, match="not a piece"):
        pieces.reset("nope")
    assert pieces.installed() == []


def _key_without_dtypes(in_tree, avals, statics, context):
    return (in_tree, *(a.shape for a in avals), statics, context)


def test_a_cache_key_that_ignores_dtypes_reuses_the_wrong_trace():
    f = jax.jit(lambda x: x * 2)
    floats, ints = jnp.ones(3, jnp.float32), jnp.ones(3, jnp.int32)
    with pieces.using({"cache_key": _key_without_dtypes}):
        assert f(floats).dtype == jnp.float32
        wrong = f(ints)  # the float32 trace again: its result claims float32
        assert wrong.dtype == jnp.float32
        assert f._cache_size() == 1
    right = f(ints)
    assert right.dtype == jnp.int32
    np.testing.assert_array_equal(right, [2, 2, 2])
    assert f(floats).dtype == jnp.float32 and f._cache_size() == 2


def test_a_learners_cache_that_never_stores_retraces_every_call():
    traces = []

    def f(x):
        traces.append(x)
        return x + 1

    g = jax.jit(f)
    with pieces.using({"cached": lambda cache, key, make_entry: make_entry()}):
        g(V), g(V), g(V)
    assert len(traces) == 3
    g(V), g(V)
    assert len(traces) == 4


def test_jit_caches_forget_traces_when_a_piece_changes():
    g = jax.jit(_sin)
    programs = {"lowering_rules": lambda: g(X), "jvp_rules": lambda: jax.grad(g)(X),
                "JaxprTrace": lambda: g(X)}
    for name, program in programs.items():
        program()
        assert g._cache_size() == 1
        calls: list[str] = []
        with pieces.using({name: _counting(name, calls)}):
            assert g._cache_size() == 0
            program()
            assert calls, f"jit(f) served a trace made before {name} was installed"


def test_derived_bodies_and_executables_are_made_again():
    from minijax.compiler import jit_primitive
    g = jax.jit(_sin)
    jax.grad(g)(X)
    assert len(jit_primitive._derived) and len(jit_primitive._executables)
    calls: list[str] = []
    with pieces.using({"transpose_rules": _counting("transpose_rules", calls)}):
        assert not len(jit_primitive._derived) and not len(jit_primitive._executables)
        jax.grad(lambda x: g(x) * 2.0)(X)
    assert calls


def test_eager_loops_are_compiled_again():
    from minijax.compiler import eager_loops
    body = lambda c: c * 2  # noqa: E731
    lax.while_loop(lambda c: c < 10, body, X)
    calls: list[str] = []
    with pieces.using({"lowering_rules": _counting("lowering_rules", calls, lax.mul_p)}):
        assert not eager_loops._programs
        out = lax.while_loop(lambda c: c < 10, body, X)
    assert calls
    np.testing.assert_equal(np.asarray(out), np.float32(16.0))


def test_a_replaced_pass_runs_in_place_of_the_reference():
    calls = []

    def no_cse(module):
        calls.append(module.name)
        return module

    f = jax.jit(lambda x: jnp.sin(x) + jnp.sin(x))
    with pieces.using({"common_subexpression_elimination": no_cse}):
        text = f.lower(X).compile().as_text()
        np.testing.assert_allclose(f(X), 2 * np.sin(0.5), rtol=1e-6)
    assert calls
    assert text.count("np.sin") == 2  # both sines survive without CSE
    assert f.lower(X).compile().as_text().count("np.sin") == 1


def test_the_tracer_check_is_one_function():
    seen = []

    def check(tracer, conversion):
        seen.append(conversion)
        return pieces.reference("concrete_or_error")(tracer, conversion)

    with pieces.using({"concrete_or_error": check}):
        for convert in (bool, int, float, complex, np.asarray, lambda t: t.item(),
                        lambda t: [0][t]):
            with pytest.raises(Exception):  # noqa: B017  (each its own JAX error)
                jax.jit(convert)(X)
    assert seen == ["bool", "int", "float", "complex", "array", "item", "index"]


def test_jit_fast_path_only_with_the_reference_key():
    f = jax.jit(_sin)
    f(X)
    assert f._fast_cache
    with pieces.using({"cache_key": _counting("cache_key", [])}):
        assert not jit_module._fast_path
        f(X)
        assert not f._fast_cache
    f(X)
    assert jit_module._fast_path and f._fast_cache


def test_the_grader_names_the_program_for_a_dtype_blind_key():
    from grader.checks import CheckFailed
    from grader.pieces import Program, expect_same_with_pieces

    program = Program("jit(f) on float32, then on int32: the second result's dtype",
                      "def dtypes():\n    f = jax.jit(lambda x: x * 2)\n"
                      "    f(jnp.ones(3, jnp.float32))\n"
                      "    return str(f(jnp.ones(3, jnp.int32)).dtype)\n")
    ns = {"my_key": _key_without_dtypes, "good_key": pieces.reference("cache_key")}
    expect_same_with_pieces(ns, {"cache_key": "good_key"}, [program])
    with pytest.raises(CheckFailed) as failure:
        expect_same_with_pieces(ns, {"cache_key": "my_key"}, [program])
    message = str(failure.value)
    assert "with your my_key installed, jit(f) on float32, then on int32" in message
    assert "float32" in message and "int32" in message
    assert pieces.installed() == []


def _holders() -> list[str]:
    """What, other than a module's globals, holds a reference piece (the audit below)."""
    import gc
    import types

    import minijax.compiler.numpy_backend  # noqa: F401  (the backends, imported lazily)
    import minijax.compiler.xla_backend  # noqa: F401

    objects = {id(pieces.current(name)): name for name, piece in pieces.PIECES.items()
               if not piece.table}
    namespaces = {id(vars(module)) for module in list(sys.modules.values()) if module}
    holders = []
    for holder in gc.get_referrers(*(pieces.current(n) for n in objects.values())):
        if id(holder) in namespaces or isinstance(holder, (types.FrameType, type)):
            continue
        if holder is jit_module._REFERENCE_CACHE or holder == vars(core.Primitive):
            continue  # the reference cache pair, which jit compares with; bind's class
        if isinstance(holder, types.CellType) or isinstance(holder, tuple) and all(
                isinstance(c, type) for c in holder):  # super()'s __class__, an MRO
            continue
        if type(holder).__name__ in objects.values():  # an instance: core.eval_trace
            continue
        held = [objects[id(x)] for x in gc.get_referents(holder) if id(x) in objects]
        holders.append(f"a {type(holder).__name__} holding {held}")
    return holders


def test_nothing_but_module_globals_holds_a_piece():
    """A piece bound anywhere else (a default argument, a table, a closure, an alias in a
    tuple) would not be replaced by install: the public API would keep the reference. Run
    in a fresh process, so that only what minijax itself holds counts."""
    import pathlib
    import subprocess

    here = pathlib.Path(__file__).resolve().parent
    script = (f"import sys; sys.path[:0] = [{str(here.parent)!r}, {str(here)!r}]\n"
              "import test_pieces; print(test_pieces._holders())")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.strip() == "[]", result.stdout
