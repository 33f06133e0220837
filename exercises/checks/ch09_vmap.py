"""Checks for chapter 09, ``vmap``.

Most exercises build a piece of the batching machinery: a helper that moves a batch axis,
the batching rules of ``mul``, ``reduce_sum`` and ``dot_general`` in minijax's own rule
interface, and a batching trace of the learner's own (installed as minijax's ``BatchTrace``
for the check, so that ``jax.vmap`` of small programs runs on it and must give what it gives on
minijax's own, see :mod:`grader.pieces`) with a ``my_vmap`` on top of it. A rule
is checked twice: called directly, its result moved to the batch axis it reports must hold,
example by example, what the primitive computes on that example (a loop, with minijax's own
eager primitive); and installed in ``batching.batching_rules`` for the duration of the check
(in the learner's process), ``minijax.vmap`` of small programs must give what ``minijax.vmap``
gives with minijax's own rules (which the test suite checks against JAX).

The other exercises use ``vmap``: per-example gradients (against the gradient worked out by
hand), a batched ``cond`` written as a ``select_n`` (against ``vmap`` of ``lax.cond``) and
per-example random keys (against a loop over minijax's own split keys, bit for bit). Where
the point is that no per-example loop runs, the check counts the equations of the learner's
jaxpr for two batch sizes: a loop's jaxpr grows with the batch, a batched one does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from grader.checks import (
    CheckFailed,
    Returned,
    Shown,
    brief,
    call,
    call_described,
    call_transformed,
    exercise,
    expect_calls,
    expect_close,
    expect_dtype,
    expect_equal,
    learner_function,
    part,
    probe,
    reported,
    show,
)
from grader.pieces import Program, expect_same_with_pieces
from grader.plain import FunctionSource
from minijax import lax

#: The names a function's source may use, here as in the learner's process.
_SCOPE = {"np": np, "jnp": jnp, "lax": lax, "jax": jax}


def program(source: str) -> Shown:
    """A function given as source: the same function here and where the learner's code runs."""
    return Shown(source, eval(source, dict(_SCOPE)))


def data(*shape: int, seed: int = 0) -> Any:
    """A float32 array of the given shape with short, readable values."""
    rng = np.random.default_rng(seed + 10 * len(shape) + sum(shape))
    return jnp.asarray(np.round(rng.normal(size=shape) * 4) / 4, jnp.float32)


def expect_array(got: Returned, shape: tuple[int, ...], hint: str) -> None:
    value = got.value
    if not isinstance(value, jax.Array):
        raise CheckFailed(f"{got.call} returned {brief(value)}, a {type(value).__name__}; "
                          f"expected a jax.Array -- hint: {hint}")
    if value.shape != shape:
        raise CheckFailed(f"{got.call} returned an array of shape {value.shape}; expected "
                          f"shape {shape} -- hint: {hint}")


#: Runs in the learner's process: how many equations ``make_jaxpr`` of the learner's function
#: has (the ``trace`` probe would send the whole text, too long for a random generator's).
_COUNT_EQUATIONS = """def count_equations(ns, name, args, static_argnums):
    describe = __import__("grader.checks", fromlist=["checks"]).describe_exception
    try:
        traced = jax.make_jaxpr(ns[name], static_argnums=tuple(static_argnums))(*args)
    except NotImplementedError:
        raise
    except Exception as exc:
        return {"raised": describe(exc)}
    return {"count": len(traced.jaxpr.eqns)}
"""


def jaxpr_size(ns: Any, name: str, args: list[Any], shown: str,
               static_argnums: tuple[int, ...] = ()) -> int:
    """The number of equations of ``make_jaxpr`` of the learner's ``name`` on ``args``."""
    report = probe(ns, "observe", FunctionSource(_COUNT_EQUATIONS), name, args, static_argnums)
    if "raised" in report:
        raise CheckFailed(f"jax.make_jaxpr({name})({shown}) raised {report['raised']} -- hint: "
                          "write it with jax, jnp and lax functions only, without NumPy")
    return report["count"]


def expect_no_loop(ns: Any, name: str, small: list[Any], large: list[Any],
                   sizes: tuple[int, int], hint: str, static_argnums: tuple[int, ...] = ()
                   ) -> None:
    """The learner's jaxpr has as many equations for a batch of ``sizes[1]`` as for one of
    ``sizes[0]``: it is one batched program, not a loop over the examples."""
    counts = [jaxpr_size(ns, name, args, f"<a batch of {n}>", static_argnums)
              for args, n in zip((small, large), sizes)]
    if counts[0] != counts[1]:
        raise CheckFailed(f"the jaxpr of {name} has {counts[0]} equations for a batch of "
                          f"{sizes[0]} examples and {counts[1]} for a batch of {sizes[1]}; "
                          f"a batched program has as many for any batch size -- hint: {hint}")


# ---------------------------------------------------------------------------------------
# Exercise 1: move a batch axis to the front
# ---------------------------------------------------------------------------------------


@exercise("move_to_front", points=1, remote=True,
          replaces=("minijax.interpreters.batching.bdim_at_front",
                    "minijax.interpreters.batching.moveaxis",
                    "minijax.interpreters.batching.broadcast"))
def check_move_to_front(ns):
    hint = ("with bdim an int, lax.transpose(x, perm) where perm lists bdim first and then "
            "the other axes in order; with bdim None, lax.broadcast_in_dim(x, (size, *x.shape), "
            "...) where x's axes go to positions 1, 2, ...")
    cases = [(data(3, 4), 1, 4), (data(5, 3), 0, 5), (data(2, 3, 4), 2, 4),
             (data(2, 3, 4), 1, 3), (data(3), None, 4), (data(2, 3), None, 2),
             (jnp.float32(1.5), None, 3)]
    for x, bdim, size in cases:
        got = call(ns, "move_to_front", x, bdim, size, hint=hint)
        value = np.asarray(x)
        want = (np.broadcast_to(value, (size, *value.shape)) if bdim is None
                else np.moveaxis(value, bdim, 0))
        expect_array(got, want.shape, hint)
        expect_equal(got, want, hint=hint)
    for x, bdim, size in ((data(3, 4), 1, 4), (data(3), None, 4)):
        jaxpr_size(ns, "move_to_front", [x, bdim, size], f"{show(x)}, {bdim}, {size}", (1, 2))


# ---------------------------------------------------------------------------------------
# Exercises 2 to 4: batching rules
# ---------------------------------------------------------------------------------------

#: Runs in the learner's process (the ``observe`` probe): the learner's rule for one
#: primitive, called directly (``"rule"``), traced (``"jaxpr"``: the equations of its
#: computation, with their outputs' shapes), or installed in minijax's rule table while
#: ``minijax.vmap`` runs a program (``"vmap"``); minijax's own rule is put back at the end.
_OBSERVE_RULE = """def observe_rule(ns, rule_name, primitive_name, cases):
    batching = __import__("minijax.interpreters.batching", fromlist=["batching"])
    describe = __import__("grader.checks", fromlist=["checks"]).describe_exception
    primitive = getattr(lax, primitive_name + "_p")
    rule = ns[rule_name]
    saved = batching.batching_rules[primitive]
    batching.batching_rules[primitive] = lambda *args, **params: rule(*args, **params)
    reports = []
    try:
        for kind, fun, dims, args, params in cases:
            try:
                if kind == "vmap":
                    reports.append({"value": jax.vmap(fun, in_axes=tuple(dims))(*args)})
                    continue
                size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
                axis = batching.AxisData(None, size)
                if kind == "rule":
                    reports.append({"value": rule(axis, list(args), list(dims), **params)})
                    continue
                traced = jax.make_jaxpr(
                    lambda *xs: rule(axis, list(xs), list(dims), **params)[0])(*args)
                reports.append({"value": [[str(e.primitive), [list(v.aval.shape)
                                for v in e.outvars]] for e in traced.jaxpr.eqns]})
            except NotImplementedError:
                raise
            except Exception as exc:
                reports.append({"raised": describe(exc)})
    finally:
        batching.batching_rules[primitive] = saved
    return reports
"""


def rule_call_text(rule: str, args: list[Any], dims: list[Any], params: dict[str, Any]) -> str:
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
    keywords = "".join(f", {key}={value!r}" for key, value in params.items())
    return (f"{rule}(AxisData(name=None, size={size}), [{', '.join(show(a) for a in args)}], "
            f"{dims!r}{keywords})")


def per_example(primitive: Any, args: list[Any], dims: list[Any], params: dict[str, Any]
                ) -> np.ndarray:
    """The primitive applied to each example on its own (a loop), the results stacked."""
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
    examples = [[x if d is None else lax.index_in_dim(x, i, d, keepdims=False)
                 for x, d in zip(args, dims)] for i in range(size)]
    return np.stack([np.asarray(primitive.bind(*ex, **params)) for ex in examples])


def expect_rule_result(got: Returned, want: np.ndarray, hint: str) -> None:
    """``got`` is ``(out, out_dim)`` and ``out``, read along ``out_dim``, is ``want``'s batch."""
    value = got.value
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise CheckFailed(f"{got.call} returned {brief(value)}; expected a pair (batched "
                          f"result, its batch dimension) -- hint: {hint}")
    out, out_dim = value
    shape = getattr(out, "shape", None)
    if shape is None or type(out_dim) is not int:
        raise CheckFailed(f"{got.call} returned ({brief(out)}, {out_dim!r}); expected an array "
                          "and the index of its batch axis (an int) -- hint: " + hint)
    if not 0 <= out_dim < len(shape):
        raise CheckFailed(f"{got.call} returned batch axis {out_dim} for a result of shape "
                          f"{shape}, which has no such axis -- hint: {hint}")
    batch = np.moveaxis(np.asarray(out), out_dim, 0)
    if batch.shape != want.shape:
        raise CheckFailed(f"{got.call} returned an array of shape {shape} batched along axis "
                          f"{out_dim}, that is {batch.shape[0]} examples of shape "
                          f"{batch.shape[1:]}; expected {want.shape[0]} examples of shape "
                          f"{want.shape[1:]} -- hint: {hint}")
    expect_close(Returned(f"{got.call}, read along its batch axis {out_dim},", batch), want,
                 rtol=1e-5, atol=1e-5, hint=hint)


def check_rule(ns: Any, rule: str, primitive: Any, cases: list[tuple[Any, ...]],
               programs: list[tuple[str, tuple[Any, ...], list[Any]]], hint: str,
               judge: tuple[list[Any], list[Any], dict[str, Any], Any] | None = None) -> None:
    """The learner's ``rule`` for ``primitive``: on the direct ``cases`` (arguments, batch
    dimensions, parameters), on the traced ``judge`` case (judged by its function of the
    equations), and installed while ``minijax.vmap`` runs ``programs``."""
    learner_function(ns, rule)
    requests = [("rule", None, dims, args, params) for args, dims, params in cases]
    if judge is not None:
        requests.append(("jaxpr", None, judge[1], judge[0], judge[2]))
    shown_programs = [(program(source), axes, args) for source, axes, args in programs]
    requests += [("vmap", fun, list(axes), args, {}) for fun, axes, args in shown_programs]
    reports = probe(ns, "observe", FunctionSource(_OBSERVE_RULE), rule, primitive.name,
                    requests)
    for (args, dims, params), report in zip(cases, reports):
        got = reported(rule_call_text(rule, args, dims, params), report, hint)
        expect_rule_result(got, per_example(primitive, args, dims, params), hint)
    reports = reports[len(cases):]
    if judge is not None:
        args, dims, params, verdict = judge
        text = rule_call_text(rule, args, dims, params)
        got = reported(f"jax.make_jaxpr(lambda *xs: {text}[0])", reports.pop(0), hint)
        problem = verdict(got.value)
        if problem:
            raise CheckFailed(f"traced, {text} computes {problem}")
    for (fun, axes, args), report in zip(shown_programs, reports):
        text = f"jax.vmap({fun!r}, in_axes={axes!r})({', '.join(show(a) for a in args)})"
        got = reported(f"with your rule, {text}", report, hint)
        want = jax.vmap(fun.fun, in_axes=axes)(*args)
        expect_array(got, want.shape, hint)
        expect_close(got, np.asarray(want), rtol=1e-5, atol=1e-5, hint=hint)


def _no_full_copy(size: int, elements: int) -> Any:
    """A verdict on a rule's equations: only the product (or a transpose) makes an array as
    large as the result (an unbatched operand is not copied for every example)."""
    def verdict(eqns: list[Any]) -> str | None:
        for name, shapes in eqns:
            for shape in shapes:
                if name not in ("mul", "transpose") and int(np.prod(shape)) == elements:
                    return (f"{name} with a result of shape {tuple(shape)}, as large as the "
                            f"product: the unbatched operand was copied {size} times -- "
                            "hint: give it a leading axis of size 1 instead "
                            "(lax.expand_dims(y, (0,))) and let the operation broadcast it")
        return None
    return verdict


@exercise("mul_batching_rule", points=2, remote=True)
def check_mul_batching_rule(ns):
    hint = ("if both operands have the same batch dimension, multiply them as they are; "
            "otherwise move each batched operand's batch axis to the front, give each "
            "unbatched operand that is not a scalar a leading axis of size 1, multiply, and "
            "report batch dimension 0")
    cases = [([data(5, 3), data(5, 3, seed=1)], [0, 0], {}),
             ([data(5, 3), data(3)], [0, None], {}),
             ([data(3, 5), data(5, 3, seed=1)], [1, 0], {}),
             ([data(5), jnp.float32(2.0)], [0, None], {}),
             ([data(5), data(3)], [0, None], {}),
             ([data(5), data(5, 3, seed=1)], [0, 0], {}),
             ([data(2, 3), data(5, seed=1)], [None, 0], {}),
             ([data(3), data(3, 5)], [None, 1], {}),
             ([data(2, 5, 3), data(2, 3, seed=1)], [1, None], {})]
    programs = [("lambda x, y: x * y", (0, 0), [data(5, 3), data(5, 3, seed=1)]),
                ("lambda x, y: x * y", (0, None), [data(5, 3), data(3)]),
                ("lambda x, y: x * y", (1, 0), [data(3, 5), data(5, 3, seed=1)]),
                ("lambda x: x * 2.0", (0,), [data(5, 3)]),
                ("lambda x, y: x * y", (0, None), [data(5), data(3)]),
                ("lambda x: jnp.sum(x * x, axis=0)", (1,), [data(3, 4)])]
    judge = ([data(5, 3), data(3)], [0, None], {}, _no_full_copy(5, 15))
    check_rule(ns, "mul_batching_rule", lax.mul_p, cases, programs, hint, judge)


@exercise("reduce_sum_batching_rule", points=2, remote=True)
def check_reduce_sum_batching_rule(ns):
    hint = ("the example's axis a is axis a of the batch if a < bdim and axis a + 1 "
            "otherwise (or: move the batch axis to the front and add 1 to every axis); "
            "bind lax.reduce_sum_p with the new axes and the other params unchanged, and "
            "report where the batch axis is among the axes that remain")
    none = {"out_sharding": None}
    cases = [([data(5, 3)], [0], {"axes": (0,), **none}),
             ([data(3, 5)], [1], {"axes": (0,), **none}),
             ([data(2, 5, 3)], [1], {"axes": (0, 1), **none}),
             ([data(4, 2, 5)], [2], {"axes": (1,), **none}),
             ([data(5, 2, 3)], [0], {"axes": (1,), **none}),
             ([data(2, 3, 5)], [2], {"axes": (0,), **none})]
    programs = [("lambda x: jnp.sum(x)", (0,), [data(5, 3)]),
                ("lambda x: jnp.sum(x, axis=0)", (1,), [data(3, 5, 2)]),
                ("lambda x: jnp.sum(x ** 2, axis=-1)", (2,), [data(2, 3, 5)]),
                ("lambda x: x.sum(axis=(0, 2)) * 2.0", (1,), [data(2, 5, 3, 2)])]
    check_rule(ns, "reduce_sum_batching_rule", lax.reduce_sum_p, cases, programs, hint)


def _one_dot_general(eqns: list[Any]) -> str | None:
    """A verdict: the rule makes one dot_general, and copies no operand for every example."""
    names = [name for name, _ in eqns]
    if names.count("dot_general") != 1 or "broadcast_in_dim" in names:
        return (f"the equations {names}; expected one dot_general and no broadcast_in_dim "
                "-- hint: an unbatched operand is used as it is: the batch axis of the "
                "other operand becomes a free (kept) axis of the product, so there is "
                "nothing to copy")
    return None


@exercise("dot_general_batching_rule", points=3, remote=True)
def check_dot_general_batching_rule(ns):
    hint = ("both batched: move both batch axes to the front, add 1 to every contracting "
            "and batch dimension and add (0, 0) as a new first batch dimension (result "
            "batch dimension 0); one batched: move its batch axis to the front and add 1 to "
            "its dimension numbers; that axis is then a free axis of the product, which "
            "comes after the batch dimensions, and, for the right operand, after the left "
            "operand's free axes too")
    matvec = (((1,), (0,)), ((), ()))

    def params(numbers: Any) -> dict[str, Any]:
        return {"dimension_numbers": numbers, "precision": None,
                "preferred_element_type": None, "out_sharding": None}

    batched_matmul = (((2,), (1,)), ((0,), (0,)))
    cases = [([data(3, 4), data(5, 4)], [None, 0], params(matvec)),
             ([data(5, 4), data(4, 3)], [0, None], params((((0,), (0,)), ((), ())))),
             ([data(5, 4), data(5, 4, seed=1)], [0, 0], params((((0,), (0,)), ((), ())))),
             ([data(2, 5, 3), data(3, 4)], [1, None], params(matvec)),
             ([data(2, 3, 4), data(2, 4, 5)], [None, 2], params(batched_matmul)),
             ([data(5, 2, 3, 4), data(2, 4, 5)], [0, 2], params(batched_matmul)),
             ([data(3, 4, 5), data(4, 5, 2)], [2, 1], params(matvec))]
    programs = [("lambda W, x: W @ x", (None, 0), [data(3, 4), data(5, 4)]),
                ("lambda x, W: x @ W", (0, None), [data(5, 4), data(4, 3)]),
                ("lambda x, y: jnp.dot(x, y)", (0, 0), [data(5, 4), data(5, 4, seed=1)]),
                ("lambda a, b: a @ b", (1, None), [data(3, 5, 4), data(4, 2)]),
                ("lambda a, b: jnp.matmul(a, b)", (None, 2), [data(2, 3, 4), data(2, 4, 5, 3)]),
                ("lambda W, x: jnp.tanh(W @ x + 1.0)", (None, 0), [data(3, 4), data(5, 4)])]
    judge = ([data(3, 4), data(5, 4)], [None, 0], params(matvec), _one_dot_general)
    check_rule(ns, "dot_general_batching_rule", lax.dot_general_p, cases, programs, hint,
               judge)


# ---------------------------------------------------------------------------------------
# Exercise 5: a batching trace of your own, installed as minijax's
# ---------------------------------------------------------------------------------------

#: (how the program is shown, its source, its arguments): run by ``jax.vmap`` with the
#: learner's trace installed as minijax's ``BatchTrace``, and with minijax's own.
_TRACE_PROGRAMS = [
    ("jax.vmap(lambda x: jnp.sin(x) * 2.0 + x)(xs)",
     "lambda xs: jax.vmap(lambda x: jnp.sin(x) * 2.0 + x)(xs)", (data(5, 4),)),
    ("jax.vmap(lambda W, x: jnp.tanh(W @ x), in_axes=(None, 0))(W, xs)",
     "lambda W, xs: jax.vmap(lambda W, x: jnp.tanh(W @ x), in_axes=(None, 0))(W, xs)",
     (data(3, 4), data(5, 4))),
    ("jax.vmap(lambda x: jnp.sum(x ** 2), in_axes=1)(xs)",
     "lambda xs: jax.vmap(lambda x: jnp.sum(x ** 2), in_axes=1)(xs)", (data(4, 5),)),
    ("jax.vmap(lambda x, c: c * 2.0, in_axes=(0, None))(xs, c)  # an unbatched result",
     "lambda xs, c: jax.vmap(lambda x, c: c * 2.0, in_axes=(0, None))(xs, c)",
     (data(5, 2), data(3))),
    ("jax.vmap(lambda x: (jnp.max(x), x[::-1]))(xs)  # two results",
     "lambda xs: jax.vmap(lambda x: (jnp.max(x), x[::-1]))(xs)", (data(4, 3),)),
    ("jax.vmap(jax.vmap(lambda p, q: jnp.sum((p - q) ** 2), in_axes=(None, 0)), "
     "in_axes=(0, None))(ps, qs)",
     "lambda ps, qs: jax.vmap(jax.vmap(lambda p, q: jnp.sum((p - q) ** 2), "
     "in_axes=(None, 0)), in_axes=(0, None))(ps, qs)", (data(4, 2), data(3, 2))),
    ("jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)))(xs)",
     "lambda xs: jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)))(xs)", (data(5, 3),)),
    ("jax.jit(jax.vmap(lambda x: x @ x))(xs)",
     "lambda xs: jax.jit(jax.vmap(lambda x: x @ x))(xs)", (data(6, 2),)),
    ("jax.grad(lambda xs: jnp.sum(jax.vmap(jnp.cos)(xs)))(xs)",
     "lambda xs: jax.grad(lambda xs: jnp.sum(jax.vmap(jnp.cos)(xs)))(xs)", (data(3, 2),)),
]


@exercise("batch_trace", points=2, remote=True,
          parts={"one primitive at a time": 1, "composed with vmap, grad and jit": 1})
def check_batch_trace(ns):
    hint = ("to_batch_info(x) gives (x.val, x.bdim) for a tracer of this very trace and (x, "
            "None) for anything else; process_primitive binds under the parent trace when "
            "no dim is an int and otherwise calls batching.batching_rules[primitive] there, "
            "then boxes each result (box(val, None) is val itself)")
    for name in ("MyBatchTracer", "MyBatchTrace"):
        if name not in ns:
            raise CheckFailed(f"{name} is not defined: did you run its cell?")
    programs = [Program(*case) for case in _TRACE_PROGRAMS]
    for title, chosen in (("one primitive at a time", programs[:5]),
                          ("composed with vmap, grad and jit", programs[5:])):
        with part(title):
            expect_same_with_pieces(ns, {"BatchTrace": "MyBatchTrace"}, chosen, hint=hint)


# ---------------------------------------------------------------------------------------
# Exercise 6: my_vmap, on your trace
# ---------------------------------------------------------------------------------------

#: Runs in the learner's process: what the function given to ``my_vmap`` receives.
_OBSERVE_TRACER = """def observe_tracer(ns, xs):
    core = __import__("minijax.core", fromlist=["core"])
    batching = __import__("minijax.interpreters.batching", fromlist=["batching"])
    pieces = __import__("minijax.pieces", fromlist=["pieces"])  # BatchTrace may be yours
    seen = []

    def f(x):
        seen.append(x)
        return x * 2.0

    ns["my_vmap"](f)(xs)
    if not seen:
        return {"called": False}
    x = seen[0]
    trace = getattr(x, "_trace", None)
    return {"called": True, "kind": type(x).__name__, "tracer": isinstance(x, core.Tracer),
            "minijax": isinstance(x, batching.BatchTracer)
            or isinstance(trace, pieces.reference("BatchTrace")),
            "trace": isinstance(trace, core.Trace), "aval": str(getattr(x, "aval", None))}
"""

#: (how the call is shown, the transformation of my_vmap, its arguments)
_MY_VMAP_CASES = [
    ("my_vmap(lambda x: jnp.sin(x) * 2.0 + x)", "lambda my_vmap: my_vmap("
     "lambda x: jnp.sin(x) * 2.0 + x)", [data(5, 4)]),
    ("my_vmap(lambda W, x: jnp.tanh(W @ x), in_axes=(None, 0))", "lambda my_vmap: my_vmap("
     "lambda W, x: jnp.tanh(W @ x), in_axes=(None, 0))", [data(3, 4), data(5, 4)]),
    ("my_vmap(lambda x: jnp.sum(x ** 2), in_axes=1)", "lambda my_vmap: my_vmap("
     "lambda x: jnp.sum(x ** 2), in_axes=1)", [data(4, 5)]),
    ("my_vmap(lambda x, y: jnp.dot(x, y))", "lambda my_vmap: my_vmap("
     "lambda x, y: jnp.dot(x, y))", [data(5, 4), data(5, 4, seed=1)]),
    ("my_vmap(lambda x, y: x - y.sum(), in_axes=(None, 0))", "lambda my_vmap: my_vmap("
     "lambda x, y: x - y.sum(), in_axes=(None, 0))", [data(3), data(5, 2)]),
    ("my_vmap(lambda x, c: c * 2.0, in_axes=(0, None))  # an unbatched result",
     "lambda my_vmap: my_vmap(lambda x, c: c * 2.0, in_axes=(0, None))",
     [data(5, 2), data(3)]),
    ("my_vmap(my_vmap(lambda p, q: jnp.sum((p - q) ** 2), in_axes=(None, 0)), "
     "in_axes=(0, None))", "lambda my_vmap: my_vmap(my_vmap(lambda p, q: jnp.sum((p - q) ** 2),"
     " in_axes=(None, 0)), in_axes=(0, None))", [data(4, 2), data(3, 2)]),
    ("jax.jit(my_vmap(lambda x: jnp.sum(x ** 2)))",
     "lambda my_vmap: jax.jit(my_vmap(lambda x: jnp.sum(x ** 2)))", [data(5, 3)]),
    ("jax.grad(lambda x: jnp.sum(my_vmap(jnp.sin)(x) ** 2))",
     "lambda my_vmap: jax.grad(lambda x: jnp.sum(my_vmap(jnp.sin)(x) ** 2))", [data(5, 3)]),
]


@exercise("my_vmap", points=2, remote=True,
          replaces=("minijax.vmap", "minijax.interpreters.batching.batch_flat",
                    "minijax.interpreters.batching.batch_jaxpr"))
def check_my_vmap(ns):
    hint = ("my_vmap makes MyBatchTrace(core.current_trace(), batching.AxisData(None, "
            "size)), boxes each mapped argument, runs f once with the trace current, and "
            "moves the output's batch axis to the front (move_to_front), which also "
            "broadcasts an unbatched output")
    for shown, transform, args in _MY_VMAP_CASES:
        got = call_transformed(ns, transform, "my_vmap", *args, shown=shown, hint=hint)
        want = eval(transform, dict(_SCOPE))(jax.vmap)(*args)
        expect_array(got, want.shape, hint)
        expect_close(got, np.asarray(want), rtol=1e-5, atol=1e-5, hint=hint)
    xs = data(5, 4)
    seen = probe(ns, "observe", FunctionSource(_OBSERVE_TRACER), xs)
    text = f"my_vmap(f)({show(xs)})"
    if not seen["called"]:
        raise CheckFailed(f"{text} never called f -- hint: call f once, on your tracers")
    if not seen["tracer"] or seen["minijax"] or not seen["trace"]:
        raise CheckFailed(f"in {text}, f received an object of type {seen['kind']}; expected an "
                          "instance of your own subclass of core.Tracer, belonging to your own "
                          "subclass of core.Trace (not minijax's BatchTracer)")
    if seen["aval"] != "float32[4]":
        raise CheckFailed(f"in {text}, the aval of the tracer f received is {seen['aval']}; "
                          "expected float32[4], the type of one example -- hint: remove the "
                          "batch axis from the value's shape")


# ---------------------------------------------------------------------------------------
# Exercise 7: per-example gradients
# ---------------------------------------------------------------------------------------


def _linear_model(n: int, seed: int) -> tuple[dict[str, Any], Any, Any]:
    params = {"w": data(3, seed=seed), "b": jnp.float32(0.5)}
    return params, data(n, 3, seed=seed), data(n, seed=seed + 1)


#: The learner's function, handed the parameters as a dict built where it runs (a dict
#: argument of ``call`` would be compared with ``!=`` when it comes back, which arrays refuse).
_WITH_PARAMS = "lambda f: lambda w, b, xs, ys: f({'w': w, 'b': b}, xs, ys)"


def call_with_params(ns: Any, params: dict[str, Any], xs: Any, ys: Any, hint: str) -> Returned:
    learner_function(ns, "per_example_grads")
    text = (f"per_example_grads({{'w': {show(params['w'])}, 'b': {show(params['b'])}}}, "
            f"{show(xs)}, {show(ys)})")
    return call_described(
        lambda *args: probe(ns, "apply", FunctionSource(_WITH_PARAMS), "per_example_grads",
                            *args), text, params["w"], params["b"], xs, ys, hint=hint)


@exercise("per_example_grads", points=2, remote=True)
def check_per_example_grads(ns):
    hint = ("the gradient of the one-example loss with respect to params, mapped over the "
            "examples and the labels, the parameters shared by all (in_axes None)")
    for n, seed in ((4, 0), (1, 3), (7, 5)):
        params, xs, ys = _linear_model(n, seed)
        got = call_with_params(ns, params, xs, ys, hint)
        if not isinstance(got.value, dict) or sorted(got.value) != ["b", "w"]:
            raise CheckFailed(f"{got.call} returned {brief(got.value)}; expected a dict with "
                              "the keys 'w' and 'b', like params -- hint: " + hint)
        x, y, w = (np.asarray(v, np.float64) for v in (xs, ys, params["w"]))
        residual = x @ w + 0.5 - y  # the gradient of (x . w + b - y)^2 is 2 r (x, 1)
        for key, want in (("w", 2 * residual[:, None] * x), ("b", 2 * residual)):
            part = Returned(f"{got.call}[{key!r}]", got.value[key])
            expect_array(part, want.shape, hint)
            expect_close(part, want, rtol=1e-5, atol=1e-5, hint=hint)
    expect_no_loop(ns, "per_example_grads", list(_linear_model(2, 0)),
                   list(_linear_model(16, 0)), (2, 16), hint)


# ---------------------------------------------------------------------------------------
# Exercise 8: a batched cond is a select
# ---------------------------------------------------------------------------------------

_COND_CASES = [
    ([True, False, True, False], "lambda v: v * 2.0", "lambda v: -v", (4,)),
    ([False, False, True], "lambda v: jnp.log1p(jnp.abs(v))", "lambda v: jnp.sin(v)", (3, 2)),
    ([True, True], "lambda v: v + 1.0", "lambda v: v * v", (2, 2, 3)),
    ([False], "lambda v: jnp.exp(v)", "lambda v: v - 3.0", (1, 4)),
]


@exercise("batched_cond", points=2, remote=True, replaces=("minijax.vmap",))
def check_batched_cond(ns):
    hint = ("run both branches on the whole batch, broadcast preds along the examples' "
            "axes with lax.broadcast_in_dim(preds, shape, (0,)), and pick with "
            "lax.select_n(which, on_false, on_true): case 0 where False, case 1 where True")
    for preds, true_src, false_src, shape in _COND_CASES:
        which = jnp.asarray(preds)
        xs = data(*shape)
        on_true, on_false = program(true_src), program(false_src)
        got = call(ns, "batched_cond", which, on_true, on_false, xs, hint=hint)
        for branch in (on_true, on_false):
            expect_calls(got, branch, 1, "a batched cond runs each branch once, on the "
                         "whole batch, whatever the predicates say")
        want = jax.vmap(lambda p, x, t=on_true.fun, f=on_false.fun: lax.cond(p, t, f, x))(
            which, xs)
        expect_array(got, shape, hint)
        expect_close(got, np.asarray(want), rtol=1e-6, atol=1e-6, hint=hint)
        expect_dtype(got, np.float32, hint=hint)
    preds, true_src, false_src, shape = _COND_CASES[1]
    args = [jnp.asarray(preds), FunctionSource(true_src), FunctionSource(false_src), data(*shape)]
    report = probe(ns, "trace", "batched_cond", args, (1, 2))
    text = f"jax.make_jaxpr(batched_cond, static_argnums=(1, 2))(..., {true_src}, ...)"
    if "raised" in report:
        raise CheckFailed(f"{text} raised {report['raised']} -- hint: no Python `if` on "
                          "the predicates: they are values of the batch")
    if "select_n" not in report["primitives"] or "cond" in report["nested"]:
        raise CheckFailed(f"the jaxpr of {text} has the equations {report['primitives']}; "
                          f"expected a select_n and no cond -- hint: {hint}")


# ---------------------------------------------------------------------------------------
# Exercise 9: per-example random keys
# ---------------------------------------------------------------------------------------


def _looped_dropout(key: Any, xs: Any, keep: float) -> np.ndarray:
    """Example i keeps each entry where bernoulli(split(key, n)[i], keep) is True."""
    keys = jax.random.split(key, xs.shape[0])
    rows = []
    for k, x in zip(keys, xs):
        mask = jax.random.bernoulli(k, keep, x.shape)
        rows.append(np.asarray(jnp.where(mask, x / keep, 0.0)))
    return np.stack(rows)


@exercise("per_example_dropout", points=2, remote=True)
def check_per_example_dropout(ns):
    hint = ("split key into one key per example, in order; then map, over the keys and the "
            "examples together, a function of one key and one example that draws that "
            "example's mask")
    for seed, shape, keep in ((0, (4, 3), 0.5), (7, (6,), 0.75), (42, (3, 2, 2), 0.25)):
        key = jax.random.PRNGKey(seed)
        xs = data(*shape, seed=seed)
        got = call(ns, "per_example_dropout", key, xs, keep, hint=hint)
        want = _looped_dropout(key, xs, keep)
        expect_array(got, shape, hint)
        expect_dtype(got, np.float32, hint=hint)
        kept = Returned(f"{got.call} != 0 (the entries kept)", np.asarray(got.value) != 0)
        expect_equal(kept, want != 0, hint="example i draws its mask from key i of "
                     "jax.random.split(key, len(xs)), with jax.random.bernoulli: " + hint)
        expect_equal(got, want, hint="a kept entry is divided by keep")
    key = jax.random.PRNGKey(1)
    expect_no_loop(ns, "per_example_dropout", [key, data(2, 3), 0.5], [key, data(8, 3), 0.5],
                   (2, 8), hint, static_argnums=(2,))
