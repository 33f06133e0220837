"""The pieces of minijax a learner writes, and the one call that plugs each one in.

Each chapter of the course explains a mechanism (the evaluation trace, the JVP trace,
``backward_pass``, the jaxpr printer, jit's cache, ...) and its exercises have the learner
write it. :func:`install` puts the learner's version into the engine for the rest of the
session, so that everything built on the mechanism -- all of ``jnp``, ``grad`` of anything,
``jit`` of anything -- runs on it; :func:`reset` takes the reference back::

    from minijax import pieces
    pieces.install("backward_pass", my_backward_pass)
    jax.grad(f)(x)                 # now runs my_backward_pass
    pieces.reset("backward_pass")  # minijax's own again

    with pieces.using({"jvp_rules": {lax.sin_p: my_sin_jvp}}):
        ...                        # only inside the block

How a piece is plugged in, so that nothing else needs to change: a piece is a named object of
one minijax module (a function, a class, a method, or a rule table). Installing a function or
a class rebinds its name in *every* minijax module that holds the reference object under that
name (``from minijax.interpreters.transpose import backward_pass`` included), and modules look
their globals up when they run, so the next call uses the new piece. Installing into a rule
table replaces only the entries given. Caches that remember what a piece produced (traced
jaxprs, compiled executables) are told to forget (:func:`minijax.flags.on_pieces_change`).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import sys
import textwrap
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from minijax import flags


class Piece(NamedTuple):
    """A mechanism a learner can write: where it lives and what it must do."""

    name: str
    chapter: str
    module: str      # the module that defines it, e.g. "minijax.interpreters.ad"
    attribute: str   # its name there; "Class.method" for a method
    summary: str
    table: bool = False  # a rule table {primitive: rule}: installing replaces entries


PIECES: dict[str, Piece] = {piece.name: piece for piece in [
    Piece("bind", "02", "minijax.core", "Primitive.bind",
          "Primitive.bind(self, *args, **params): hand the primitive to the current trace"),
    Piece("EvalTrace", "02", "minijax.runtime", "EvalTrace",
          "the core.Trace subclass that computes values: process_primitive(primitive, "
          "args, params); installing makes a fresh instance core.eval_trace"),
    Piece("broadcast_shapes_trivially", "02", "minijax.lax.base", "broadcast_shapes_trivially",
          "(name, shapes) -> the result shape of an elementwise lax op, or JAX's TypeError"),
    Piece("least_upper_bound", "02", "minijax.dtypes", "_least_upper_bound",
          "(nodes, strict, x64) -> the join of lattice nodes, or TypePromotionError"),
    Piece("fori_loop", "02", "minijax.lax.control_flow.loops", "fori_loop",
          "fori_loop(lower, upper, body_fun, init_val), written with other primitives"),
    Piece("JVPTrace", "04", "minijax.interpreters.ad", "JVPTrace",
          "the forward-mode trace: JVPTrace(parent, rule_trace), process_primitive"),
    Piece("jvp_rules", "04", "minijax.interpreters.ad", "jvp_rules",
          "{primitive: rule(primals, tangents, **params) -> (primal_out, tangent_out)}",
          table=True),
    Piece("jvp", "04", "minijax.autodiff", "jvp",
          "jvp(fun, primals, tangents) -> (primals_out, tangents_out), over pytrees"),
    Piece("jacfwd", "04", "minijax.autodiff", "jacfwd",
          "jacfwd(fun, argnums=0, ...) -> the Jacobian by forward mode"),
    Piece("linearize_flat", "05", "minijax.autodiff", "linearize_flat",
          "linearize_flat(fun, primals) -> Linearization (known and unknown parts)"),
    Piece("transpose_rules", "05", "minijax.interpreters.transpose", "transpose_rules",
          "{primitive: rule(cotangent, *inputs, **params) -> input cotangents}", table=True),
    Piece("backward_pass", "05", "minijax.interpreters.transpose", "backward_pass",
          "backward_pass(jaxpr, consts, linear_inputs, args, cotangents) -> cotangents"),
    Piece("vjp", "05", "minijax.autodiff", "vjp",
          "vjp(fun, *primals, has_aux=False) -> (primals_out, vjp_fun)"),
    Piece("grad", "05", "minijax.autodiff", "grad",
          "grad(fun, argnums=0, has_aux=False, ...) -> the gradient function"),
    Piece("value_and_grad", "05", "minijax.autodiff", "value_and_grad",
          "value_and_grad(fun, argnums=0, ...) -> (value, gradient) function"),
    Piece("JaxprTrace", "06", "minijax.tracing", "JaxprTrace",
          "the trace that records equations (make_jaxpr, jit): new_arg, process_primitive, "
          "to_jaxpr; partial evaluation keeps minijax's own as its base class"),
    Piece("pp_toplevel_jaxpr", "06", "minijax.jaxpr", "pp_toplevel_jaxpr",
          "pp_toplevel_jaxpr(jaxpr) -> the printed jaxpr (a pretty-printer Doc)"),
    Piece("print_jaxpr", "06", "minijax.jaxpr", "print_jaxpr",
          "print_jaxpr(jaxpr) -> str(jaxpr), the text JAX prints"),
    Piece("eval_jaxpr", "06", "minijax.core", "eval_jaxpr",
          "eval_jaxpr(jaxpr, consts, *args) -> the outputs' values"),
    Piece("dce_jaxpr", "06", "minijax.interpreters.partial_eval", "dce_jaxpr",
          "dce_jaxpr(closed, used_outputs, instantiate=False) -> (jaxpr, used inputs)"),
    Piece("cache_key", "07", "minijax.compiler.jit", "cache_key",
          "cache_key(in_tree, avals, statics, context) -> the hashable key of a signature"),
    Piece("cached", "07", "minijax.compiler.jit", "cached",
          "cached(cache, key, make_entry) -> the entry for key, made and stored on a miss"),
    Piece("lowering_rules", "07", "minijax.compiler.lowering", "lowering_rules",
          "{primitive: rule(ctx, *operands, **params) -> StableHLO values}", table=True),
    Piece("common_subexpression_elimination", "07", "minijax.compiler.passes",
          "common_subexpression_elimination",
          "common_subexpression_elimination(module) -> module: a mini-XLA pass"),
    Piece("dead_code_elimination", "07", "minijax.compiler.passes", "dead_code_elimination",
          "dead_code_elimination(module) -> module: a mini-XLA pass"),
    Piece("compile_jaxpr", "07", "minijax.compiler.jit_primitive", "compile_jaxpr",
          "compile_jaxpr(closed, name, keep_unused) -> a function of NumPy arrays: jit's compiler"),
    Piece("generate", "07", "minijax.compiler.numpy_backend", "generate",
          "generate(module) -> (Python source, namespace): the mini-XLA's code generator"),
    Piece("concrete_or_error", "08", "minijax.core", "concrete_or_error",
          "concrete_or_error(tracer, conversion) -> the known value, or JAX's conversion error"),
    Piece("check_valid_tracer", "08", "minijax.core", "check_valid_tracer",
          "check_valid_tracer(tracer): UnexpectedTracerError if its transformation is over"),
    Piece("BatchTrace", "09", "minijax.interpreters.batching", "BatchTrace",
          "the batching trace: BatchTrace(parent, axis_data), process_primitive"),
    Piece("batching_rules", "09", "minijax.interpreters.batching", "batching_rules",
          "{primitive: rule(axis_data, vals, dims, **params) -> (out, out_dim)}", table=True),
    Piece("vmap", "09", "minijax.vectorize", "vmap",
          "vmap(fun, in_axes=0, out_axes=0, ...) -> the batched function"),
]}

# name -> the reference object (a function or class), or for a table the reference
# entries that an install replaced, {primitive: rule or _ABSENT}.
_saved: dict[str, Any] = {}
_ABSENT = object()


def _piece(name: str) -> Piece:
    if name not in PIECES:
        raise KeyError(f"{name!r} is not a piece of minijax; the pieces are: "
                       f"{', '.join(PIECES)}")
    return PIECES[name]


def _owner(piece: Piece) -> tuple[Any, str]:
    """The object that holds the piece (a module or a class) and the name it holds it by."""
    owner: Any = importlib.import_module(piece.module)
    *path, last = piece.attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, last


def current(name: str) -> Any:
    """What the engine uses for the piece ``name`` now (the learner's, if installed)."""
    owner, attribute = _owner(_piece(name))
    return getattr(owner, attribute)


def reference(name: str) -> Any:
    """minijax's own implementation of ``name`` (for a table: the whole reference table)."""
    piece = _piece(name)
    if piece.table:
        table = dict(current(name))
        _restore_entries(table, _saved.get(name, {}))
        return table
    return _saved.get(name, current(name))


def installed() -> list[str]:
    """The names of the pieces that are the learner's now."""
    return list(_saved)


def is_stub(implementation: Any) -> bool:
    """Whether a learner's piece is still an exercise's stub: a function whose body (after
    its docstring) only raises ``NotImplementedError``, a class with such a method of its
    own, or a rule table holding such a rule. Installing one would break everything built
    on the piece, so :func:`install` leaves it out. (The source comes from ``inspect``,
    which finds a notebook cell's code; where there is none, the piece counts as
    written.)"""
    if isinstance(implementation, Mapping):
        return any(is_stub(rule) for rule in implementation.values())
    if isinstance(implementation, type):
        return any(is_stub(method) for method in vars(implementation).values()
                   if inspect.isfunction(method))
    if not inspect.isfunction(implementation):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(implementation)))
    except (OSError, TypeError, SyntaxError):
        return False
    function = tree.body[0] if tree.body else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _rebind(old: Any, new: Any) -> None:
    """Point every minijax module global that is ``old`` at ``new``."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "minijax" or module_name.startswith("minijax.")):
            continue
        namespace = vars(module)
        for key, value in list(namespace.items()):
            if value is old:
                namespace[key] = new


def install(name: str, implementation: Any) -> None:
    """Put ``implementation`` into minijax as the piece ``name`` (see the module docstring).

    For a rule table, ``implementation`` is a mapping ``{primitive: rule}``: those entries
    are replaced, the others stay minijax's own. An exercise's stub is left out (it would
    break everything built on the piece, and the rest of the notebook with it): install
    says so, and minijax's own stays in its place.
    """
    piece = _piece(name)
    if piece.table and isinstance(implementation, Mapping):
        stubs = [rule for rule in implementation.values() if is_stub(rule)]
        implementation = {p: rule for p, rule in implementation.items()
                          if not is_stub(rule)} or None
    else:
        stubs = [implementation] if is_stub(implementation) else []
        implementation = None if stubs else implementation
    for stub in stubs:
        print(f"{getattr(stub, '__name__', name)} is still the exercise's stub (its code only "
              f"raises NotImplementedError): write it and run its cell; minijax's own stays")
    if implementation is not None:
        _install(piece, implementation)


def _install(piece: Piece, implementation: Any) -> None:
    """Install a piece as it is (a stub too: under :func:`using`, which the grader runs a
    learner's piece with, a stub raises ``NotImplementedError`` when a program reaches it,
    and that program's part is "not attempted")."""
    owner, attribute = _owner(piece)
    if piece.table:
        if not isinstance(implementation, Mapping):
            raise TypeError(f"the piece {piece.name!r} is a rule table: install a dict "
                            f"{{primitive: rule}}, not {type(implementation).__name__}")
        table = getattr(owner, attribute)
        saved = _saved.setdefault(piece.name, {})
        for primitive, rule in implementation.items():
            saved.setdefault(primitive, table.get(primitive, _ABSENT))
            table[primitive] = rule
    else:
        present = getattr(owner, attribute)
        _saved.setdefault(piece.name, present)
        _replace(owner, attribute, present, implementation)
    flags.pieces_changed()


def _replace(owner: Any, attribute: str, present: Any, new: Any) -> None:
    if isinstance(owner, type):
        setattr(owner, attribute, new)
    else:
        _rebind(present, new)
    if owner is sys.modules.get("minijax.runtime") and attribute == "EvalTrace":
        # The trace instance is what ``bind`` finds: a fresh one of the learner's class,
        # and the runtime's own instance again when its class comes back.
        from minijax import core
        own = owner.eval_trace
        core.install_eval_trace(own if type(own) is new else new())


def reset(name: str | None = None) -> None:
    """Take minijax's own ``name`` back (every piece, if ``name`` is None). Caches are
    told only if something changed: resetting the reference costs nothing."""
    names = list(_saved) if name is None else [_piece(name).name]
    if not any(each in _saved for each in names):
        return
    for each in names:
        if each not in _saved:
            continue
        piece = PIECES[each]
        owner, attribute = _owner(piece)
        saved = _saved.pop(each)
        if piece.table:
            _restore_entries(getattr(owner, attribute), saved)
        else:
            _replace(owner, attribute, getattr(owner, attribute), saved)
    flags.pieces_changed()


def _restore_entries(table: dict, entries: Mapping[Any, Any]) -> None:
    """Put ``entries`` ({primitive: rule or _ABSENT}) back into the rule table."""
    for primitive, rule in entries.items():
        if rule is _ABSENT:
            table.pop(primitive, None)
        else:
            table[primitive] = rule


@contextlib.contextmanager
def using(implementations: Mapping[str, Any]) -> Iterator[None]:
    """Install ``{name: implementation}`` for the block only, then restore what was there."""
    before = {name: current(name) for name in implementations}
    # For a table, only the entries the block replaces (rules registered meanwhile stay).
    before_tables = {name: {primitive: current(name).get(primitive, _ABSENT)
                            for primitive in implementations[name]}
                     for name in implementations
                     if _piece(name).table and isinstance(implementations[name], Mapping)}
    was_installed = set(_saved)
    saved_before = {name: dict(_saved[name]) if _piece(name).table else _saved[name]
                    for name in implementations if name in _saved}
    try:
        for name, implementation in implementations.items():
            _install(_piece(name), implementation)
        yield
    finally:
        for name in implementations:
            piece = PIECES[name]
            owner, attribute = _owner(piece)
            if piece.table:
                _restore_entries(getattr(owner, attribute), before_tables.get(name, {}))
            else:
                _replace(owner, attribute, getattr(owner, attribute), before[name])
            if name in was_installed:
                _saved[name] = saved_before[name]
            else:
                _saved.pop(name, None)
        flags.pieces_changed()
