"""Tracing a Python function into a jaxpr.

:class:`JaxprTrace` is an interpreter that, instead of computing ``sin(x)``, writes down
the equation ``b:f32[] = sin a`` and hands back a tracer standing for ``b``. Run a
function on such tracers and what is left at the end is a jaxpr of everything it did
with its inputs, whatever Python control flow it took to get there.

Values that enter the trace from outside (arrays captured from Python, or tracers of an
*enclosing* transformation) become constants: Python and NumPy scalars are written inline
as literals, everything else (a jax Array too, even a 0-d one) becomes a *constvar*, an
extra input whose value travels beside the jaxpr (:class:`~minijax.jaxpr.ClosedJaxpr`).
That is how a ``cond`` branch that closes over an outer tracer still works: the tracer is
passed to ``cond`` as an operand.

Each equation also remembers the line of user code that recorded it
(:class:`SourceInfo`), so that error messages can point at it.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from types import CodeType
from typing import Any, NamedTuple

import numpy as np

from minijax import core, dtypes, errors, runtime
from minijax.array import Array, is_jax_value
from minijax.core import Primitive, ShapedArray, Trace, Tracer
from minijax.jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, PrintContext, Var, pp_eqn
from minijax.tree_util import PyTreeDef, leaf_paths, tree_flatten, tree_structure

# ---------------------------------------------------------------------------------------
# Where an equation came from
# ---------------------------------------------------------------------------------------

_MINIJAX_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_internal_code: dict[CodeType, bool] = {}
MAX_FRAMES = 5


def _is_internal(code: CodeType) -> bool:
    """Is this minijax's own code (as opposed to the user's)? Cached per code object."""
    internal = _internal_code.get(code)
    if internal is None:
        internal = _internal_code[code] = code.co_filename.startswith(_MINIJAX_DIR)
    return internal


class SourceInfo:
    """The user's stack frames (at most five, outermost first) when an equation was
    recorded: the frames between minijax's tracing machinery and the operation itself.

    Frames are kept as (code, instruction offset) pairs, which are cheap to take; line
    and column numbers are worked out only when a message needs them.
    """

    __slots__ = ("frames",)

    def __init__(self, frames: list[tuple[CodeType, int]]) -> None:
        self.frames = frames

    @staticmethod
    def capture() -> SourceInfo | None:
        """The user's frames now: skip minijax's frames on top of the stack, then take the
        user's frames below them, up to the next minijax frame (the trace's entry)."""
        frame = sys._getframe(1)
        while frame is not None and _is_internal(frame.f_code):
            frame = frame.f_back
        frames = []
        while frame is not None and len(frames) < MAX_FRAMES and not _is_internal(frame.f_code):
            frames.append((frame.f_code, frame.f_lasti))
            frame = frame.f_back
        return SourceInfo(frames[::-1]) if frames else None

    @staticmethod
    def _summary(code: CodeType, offset: int) -> str:
        """``file:line:column (function)``, as JAX summarises a frame."""
        name = getattr(code, "co_qualname", code.co_name)  # f, or outer.<locals>.f
        if hasattr(code, "co_positions"):  # Python >= 3.11: columns are known
            for i, (line, _, column, _) in enumerate(code.co_positions()):
                if i == offset // 2:
                    return f"{code.co_filename}:{line}:{column} ({name})"
        line = next((n for start, end, n in code.co_lines() if start <= offset < end),
                    code.co_firstlineno)
        return f"{code.co_filename}:{line} ({name})"

    def lines(self) -> tuple[str, ...]:
        return tuple(self._summary(code, offset) for code, offset in self.frames)

    def __str__(self) -> str:
        return self._summary(*self.frames[-1])


# ---------------------------------------------------------------------------------------
# The trace
# ---------------------------------------------------------------------------------------


class JaxprTracer(Tracer):
    """Stands for one variable of the jaxpr being built."""

    __slots__ = ("_aval", "var")
    kind_name = "DynamicJaxprTracer"

    def __init__(self, trace: RecordingTrace, aval: ShapedArray, var: Var) -> None:
        super().__init__(trace)
        self._aval = aval
        self.var = var

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def _context(self) -> str:
        """Which function was being traced and, while its trace is alive, what the value
        depends on: arguments, or else the operations (with their lines) that made it."""
        trace = self._trace
        context = trace.tracing_context
        if context is None:
            return ""
        if not trace.is_valid:  # a leaked tracer: its trace has forgotten its equations
            return context.describe()
        return context.describe(*trace.origin(self.var))

    def _creation_site(self) -> tuple[str, tuple[str, ...]]:
        eqn = self._trace.defining_eqn(self.var)
        if eqn is None or eqn.source_info is None:
            return "", ()
        return str(eqn.source_info), eqn.source_info.lines()

    def __repr__(self) -> str:
        return f"JitTracer({self._aval})"  # ``~float32[]`` only if weakly typed


class RecordingTrace(Trace):
    """What a trace that records a jaxpr needs besides the recording itself: the tables of
    host values converted while it runs, how a value from outside the trace enters the
    jaxpr (:meth:`constant`), and the questions error messages ask. A subclass keeps
    ``invars``, ``eqns``, ``constvars`` (id of a captured value -> its constvar) and
    ``consts``, as :class:`JaxprTrace` does."""

    broadcast_in_dim_p: Primitive  # set by minijax.lax, a layer above (for float0 zeros)

    def __init__(self, tracing_context: errors.TracingContext | None = None) -> None:
        super().__init__()
        self.tracing_context = tracing_context
        outer = core.current_trace()  # a nested trace (a cond's branch) shares its tables
        self.host_constants = {} if outer.host_constants is None else outer.host_constants
        self.host_scalars = {} if outer.host_scalars is None else outer.host_scalars

    def constant(self, x: Any) -> Any:
        """What ``x``, a value from outside this trace, is in the jaxpr: a :class:`Literal`
        for a host scalar (written as the program wrote it), else the value a constvar
        stands for (a jax Array of any shape, or a tracer of an enclosing trace)."""
        if isinstance(x, Tracer):
            core.check_valid_tracer(x)
            return x
        if not isinstance(x, Array):  # a Python or NumPy value
            if getattr(x, "dtype", None) == dtypes.float0:
                return self.float0_constant(np.shape(x))
            array = runtime.host_to_array(x)
            if array.ndim:
                return array
            written = x if type(x) in (bool, int, float, complex) else None
            return Literal(array, array.aval, written)
        written = self.host_scalars.get(id(x))
        if written is not None and written[0] is x:  # made of a host scalar while tracing
            return Literal(x, x.aval, written[1])
        return x

    def float0_constant(self, shape: tuple[int, ...]) -> Any:
        """A float0 value (an integer's cotangent: NumPy zeros with no bytes) as JAX writes
        grad's zeros: the scalar as a literal, ``(b'',):float0[]``, other shapes as its
        broadcast, recorded here (so is a user's own float0 array, where JAX would make a
        constvar). Not an Array: float0 holds no numbers, so no array of the runtime holds it."""
        zero = np.zeros((), dtypes.float0)
        if not shape:
            return Literal(zero, ShapedArray((), dtypes.float0, False))
        with core.set_current_trace(self):
            return self.broadcast_in_dim_p.bind(zero, shape=shape, broadcast_dimensions=(),
                                                sharding=None)

    def defining_eqn(self, var: Var) -> JaxprEqn | None:
        return next((e for e in reversed(self.eqns) if var in e.outvars), None)

    def origin(self, var: Var) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Where the value of ``var`` comes from, for error messages: the names of the
        arguments it depends on; if none, the equations that brought constants into the
        trace (those with a literal or captured-constant input), with their lines."""
        sources = {var}
        for eqn in reversed(self.eqns):
            made_here = sources.intersection(eqn.outvars)
            if made_here:
                sources -= made_here
                sources.update(a for a in eqn.invars if type(a) is Var)
        names = self.tracing_context.arg_names if self.tracing_context else ()
        depends_on = tuple(n for v, n in zip(self.invars, names) if v in sources)
        if depends_on:
            return depends_on, ()
        constvars = sources.intersection(self.constvars.values())
        return (), tuple(
            f"  operation {pp_eqn(eqn, PrintContext()).format()}\n"
            f"    from line {eqn.source_info or 'unknown'}"
            for eqn in self.eqns
            if any(type(a) is Literal or a in constvars for a in eqn.invars))


class JaxprTrace(RecordingTrace):
    """Records every primitive applied to its tracers as an equation."""

    def __init__(self, tracing_context: errors.TracingContext | None = None) -> None:
        super().__init__(tracing_context)
        self.invars: list[Var] = []
        self.eqns: list[JaxprEqn] = []
        self.constvars: dict[int, Var] = {}  # id(captured value) -> its constvar
        self.consts: list[Any] = []  # the captured values, in constvar order

    def new_arg(self, aval: ShapedArray) -> JaxprTracer:
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, aval, var)

    def atom(self, x: Any) -> Atom:
        """The jaxpr atom for ``x``: its variable, a literal, or a (new) constvar."""
        if not (isinstance(x, JaxprTracer) and x._trace is self):
            x = self.constant(x)
        if isinstance(x, JaxprTracer) and x._trace is self:  # a float0 broadcast, too
            return x.var
        if isinstance(x, Literal):
            return x
        var = self.constvars.get(id(x))
        if var is None:
            var = self.constvars[id(x)] = Var(x.aval)
            self.consts.append(x)
        return var

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        invars = [self.atom(x) for x in args]
        out_avals = primitive.abstract_eval(*[v.aval for v in invars], **params)
        if not primitive.multiple_results:
            out_avals = [out_avals]
        outvars = [Var(aval) for aval in out_avals]
        self.eqns.append(JaxprEqn(primitive, invars, outvars, params, SourceInfo.capture()))
        tracers = [JaxprTracer(self, v.aval, v) for v in outvars]
        return tracers if primitive.multiple_results else tracers[0]

    def to_jaxpr(self, outs: Sequence[Any]) -> ClosedJaxpr:
        outvars = [self.atom(x) for x in outs]
        jaxpr = Jaxpr(list(self.constvars.values()), self.invars, outvars, self.eqns)
        return ClosedJaxpr(jaxpr, self.consts)


def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                   context: errors.TracingContext | None = None) -> ClosedJaxpr:
    """Trace ``fun`` (flat list of inputs -> flat list of outputs) into a closed jaxpr."""
    trace = JaxprTrace(context)
    args = [trace.new_arg(aval) for aval in in_avals]
    try:
        with core.set_current_trace(trace):
            outs = fun(*args)
        return trace.to_jaxpr(outs)
    finally:
        trace.invalidate()


def tracing_context(fun: Callable, purpose: str, arg_names: Sequence[str] = ()
                    ) -> errors.TracingContext:
    """Describe ``fun`` for error messages: its name and the line where it was defined."""
    while True:  # through partials and wrappers (grad of a partial, a partial of a jit...)
        while isinstance(fun, functools.partial):
            fun = fun.func
        inner = inspect.unwrap(fun)
        if inner is fun:
            break
        fun = inner
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    source = f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"
    return errors.TracingContext(name, source, purpose, tuple(arg_names))


# ---------------------------------------------------------------------------------------
# Tracing a Python function of pytrees, with the argument names error messages use
# ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def _cached_signature(fun: Callable) -> inspect.Signature:
    return inspect.signature(fun)

def _signature(fun: Callable) -> inspect.Signature:
    """``inspect.signature(fun)``, remembered: it costs tens of microseconds, and an
    eager loop asks for it at every call."""
    try:
        return _cached_signature(fun)
    except TypeError:  # an unhashable callable (or no signature: asked again, raises)
        return inspect.signature(fun)

def _parameter_names(fun: Callable, args: Sequence[Any], kwargs: dict[str, Any]
                     ) -> tuple[list[str], dict[str, str]] | None:
    """How each positional and keyword argument of a call is named by ``fun``'s signature
    (``args[2]`` for a ``*args`` parameter); None if there is no usable signature."""
    try:
        bound = _signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    positional: list[str] = []
    keyword: dict[str, str] = {}
    for name, param in bound.signature.parameters.items():
        if name not in bound.arguments:
            continue
        if param.kind is param.VAR_POSITIONAL:
            positional += [f"{name}[{i}]" for i in range(len(bound.arguments[name]))]
        elif param.kind is param.VAR_KEYWORD:
            keyword.update({key: f"{name}[{key!r}]" for key in bound.arguments[name]})
        elif name in kwargs:
            keyword[name] = name
        else:
            positional.append(name)
    return positional, keyword

def argument_names(fun: Callable, args: Sequence[Any], kwargs: dict[str, Any] | None = None,
                   static_argnums: Sequence[int] = ()) -> tuple[str, ...]:
    """The name of every leaf of ``(args, kwargs)``, in flattening order, leaving out the
    arguments at ``static_argnums``: what "depends on the value of the argument ..." says."""
    kwargs = kwargs or {}
    names = _parameter_names(fun, args, kwargs)
    if names is None:
        return ()
    positional, keyword = names
    out: list[str] = []
    for i, (name, arg) in enumerate(zip(positional, args)):
        if i not in static_argnums:
            out += [name + path for path in leaf_paths(tree_structure(arg))]
    for key in sorted(kwargs):
        out += [keyword[key] + path
                for path in leaf_paths(tree_structure(kwargs[key]))]
    return tuple(out)

class DebugInfo(NamedTuple):
    """What error messages say about a traced function: why it is traced ("cond",
    "scan", "jit", ...) and, when the function traced is a wrapper (``fori_loop``'s loop
    body), the user's function and the names of its arguments."""

    purpose: str
    fun: Callable | None = None
    arg_names: Sequence[str] | None = None

def trace_function(fun: Callable, args_avals: tuple, debug: DebugInfo,
                   kwargs_avals: dict | None = None) -> tuple[ClosedJaxpr, PyTreeDef]:
    """Trace ``fun(*args, **kwargs)``, given as pytrees of avals, into a closed jaxpr of the
    flattened inputs and outputs; also return the treedef of the output.

    The tracing context names the function and its arguments, so that an ``if`` on a
    traced value says which function and which argument it came from.
    """
    kwargs_avals = kwargs_avals or {}
    named_fun = debug.fun or fun
    arg_names = debug.arg_names
    if arg_names is None:
        arg_names = argument_names(named_fun, args_avals, kwargs_avals)
    in_avals, in_tree = tree_flatten((args_avals, kwargs_avals))
    out_tree: PyTreeDef | None = None

    def flat_fun(*flat_args: Any) -> list[Any]:
        nonlocal out_tree
        args, kwargs = in_tree.unflatten(flat_args)
        outs, out_tree = tree_flatten(fun(*args, **kwargs))
        _check_outputs(outs, out_tree, context)
        return outs

    context = tracing_context(named_fun, debug.purpose, arg_names)
    jaxpr = trace_to_jaxpr(flat_fun, in_avals, context)
    return jaxpr, out_tree

def _check_outputs(outs: list[Any], out_tree: PyTreeDef, context: Any) -> None:
    """JAX's TypeError for an output that is no array (a string...), naming where it is."""
    for i, leaf in enumerate(outs):
        if not is_jax_value(leaf):
            path = leaf_paths(out_tree)[i]
            at = f" at output component {path}" if path else ""
            raise TypeError(
                f"function {context.fun_name} at {context.source} traced for {context.purpose} "
                f"returned a value of type {type(leaf)}{at}, which is not a valid JAX type")
