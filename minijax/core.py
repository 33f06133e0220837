"""The spine of minijax: abstract values, primitives, traces and tracers.

Every operation in minijax ends in ``primitive.bind(*args, **params)``. ``bind`` does not
compute anything itself: it hands the primitive to the *current trace* (an interpreter),
and the trace decides what "applying sin" means right now:

* the evaluation trace (``runtime.EvalTrace``) computes it on a device;
* the jaxpr trace (``tracing.JaxprTrace``) records an equation instead;
* the JVP trace computes a value and a derivative, and so on.

Which trace is current is *context*, swapped in a ``with set_current_trace(...)`` block,
as in JAX's current "stackless" core. A transformation is therefore an interpreter: a
subclass of :class:`Trace` with one method, :meth:`Trace.process_primitive`.

Values a trace handles that are not plain arrays are :class:`Tracer` objects. A tracer
belongs to one trace; its abstract value (:class:`ShapedArray`: shape, dtype and weak
type) is all that the shape rules of the primitives need.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from minijax import dtypes, errors

# ---------------------------------------------------------------------------------------
# Abstract values
# ---------------------------------------------------------------------------------------

_SHORT_DTYPE_NAMES = {
    "bool": "bool", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}


def short_dtype_name(dtype: np.dtype) -> str:
    """``float32`` -> ``f32``: the spelling jaxprs use (NumPy names float0 ``void``)."""
    if dtype == dtypes.float0:
        return "float0"
    return _SHORT_DTYPE_NAMES.get(dtype.name, dtype.name)


class ShapedArray:
    """What a trace knows about a value it cannot see: its shape, dtype and weak type.

    ``weak_type`` marks values that came from Python scalars (``2.0``): they adopt the
    dtype of whatever they meet (see ``minijax.dtypes``).
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape: tuple[int, ...], dtype: Any, weak_type: bool = False) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self) -> str:
        """The jaxpr spelling: ``f32[3,4]``."""
        return f"{short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def str_long(self) -> str:
        """The spelling error messages use: ``float32[3,4]``."""
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_long()}{weak})"

    def __str__(self) -> str:
        """As JAX prints a type: ``float32[3]``, with ``~`` in front if it is weak."""
        return f"{'~' if self.weak_type else ''}{self.str_long()}"


def physical_aval(aval: ShapedArray) -> ShapedArray:
    """How a value of ``aval`` is stored: itself, or for an extended dtype (a key) the
    array of its physical dtype with the physical trailing dimensions; float0, which has
    no values, as booleans (JAX's choice: ``tensor<i1>``, always false)."""
    dt = aval.dtype
    if dt == dtypes.float0:
        return ShapedArray(aval.shape, np.dtype(bool))
    if not dtypes.is_extended(dt):
        return aval
    return ShapedArray((*aval.shape, *dt.physical_shape), dt.physical_dtype)


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of an Array, a Tracer, or anything else with ``.aval``; of a host
    value (a Python scalar, weakly typed; a NumPy array or scalar), what it becomes as an
    array, as JAX's ``get_aval`` gives it: a lax function may bind a host constant as is."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    if getattr(x, "dtype", None) == dtypes.float0:  # an integer's cotangent: never an array
        return ShapedArray(np.shape(x), dtypes.float0, False)
    return ShapedArray(np.shape(x), dtypes.dtype(x), dtypes.is_weakly_typed(x))


# ---------------------------------------------------------------------------------------
# Primitives
# ---------------------------------------------------------------------------------------


class Primitive:
    """A named operation: the unit that every trace knows how to interpret.

    A primitive carries two rules of its own: ``impl`` (compute it on NumPy arrays) and
    ``abstract_eval`` (from input avals and params to output avals: the shape rule).
    The rules of each *transformation* live in that transformation's own module, in a
    table keyed by primitive, so that all JVP rules, say, can be read in one file.
    """

    # Higher-order primitives (cond, while, ...) are evaluated eagerly by Python code that
    # binds other primitives, on the calling thread, rather than by one NumPy kernel.
    eager_rule: Callable[..., Any] | None = None

    def __init__(self, name: str, multiple_results: bool = False) -> None:
        self.name = name
        self.multiple_results = multiple_results

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive under the current trace: the trace decides what that means."""
        return current_trace().process_primitive(self, args, params)

    def def_impl(self, impl: Callable[..., Any]) -> Callable[..., Any]:
        """Register how to compute the primitive on NumPy arrays (used eagerly)."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Register the shape rule: ``rule(*avals, **params) -> aval`` (or a list)."""
        self.abstract_eval = rule
        return rule

    def def_eager_rule(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Register Python-level eager evaluation (for primitives that carry jaxprs)."""
        self.eager_rule = rule
        return rule

    def impl(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"primitive {self.name} has no eager implementation")

    def abstract_eval(self, *avals: ShapedArray, **params: Any) -> Any:
        raise NotImplementedError(f"primitive {self.name} has no shape rule")

    def __repr__(self) -> str:
        return self.name


# ---------------------------------------------------------------------------------------
# Traces and the current-trace context
# ---------------------------------------------------------------------------------------


class Trace:
    """An interpreter of primitives. Subclasses define :meth:`process_primitive`.

    A trace is *invalidated* when the transformation that made it has finished; a
    tracer of an invalid trace that turns up later has leaked (``UnexpectedTracerError``).
    """

    tracing_context: errors.TracingContext | None = None
    # NumPy arrays converted while this trace was current: id -> (array, Array). Only
    # traces that record programs keep one (see runtime.host_to_array); a trace nested in
    # another shares its tables, so a NumPy array is one constant throughout.
    host_constants: dict[int, tuple[Any, Any]] | None = None
    # 0-d arrays made from host values (Python and NumPy scalars) while this trace was
    # current: id(array) -> (array, the Python number as written, or None). Jaxprs write
    # them inline as literals, a Python number as written (0.1, not 0.10000000149011612);
    # a captured jax Array is a constvar whatever its shape, as in JAX.
    host_scalars: dict[int, tuple[Any, Any]] | None = None

    def __init__(self) -> None:
        self.is_valid = True

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        raise NotImplementedError

    def invalidate(self) -> None:
        self.is_valid = False


class _TraceState(threading.local):
    """The current trace, per thread. ``None`` means the eager evaluation trace."""

    trace: Trace | None = None


_state = _TraceState()
eval_trace: Trace  # installed by minijax.runtime when it is imported


def install_eval_trace(trace: Trace) -> None:
    """Make ``trace`` the one that computes values eagerly: ``minijax.runtime`` installs
    its own when it is imported, ``minijax.pieces`` a learner's ``EvalTrace``."""
    global eval_trace
    eval_trace = trace


def note_host_scalar(array: Any, written: Any = None) -> None:
    """Tell a recording trace that the 0-d ``array`` was made from a host scalar (the
    Python number ``written``, if it holds that number unchanged)."""
    scalars = current_trace().host_scalars
    if scalars is not None:
        scalars[id(array)] = (array, written)


def is_host_scalar(array: Any) -> bool:
    """Was ``array`` made from a host scalar while the current trace was recording?"""
    scalars = current_trace().host_scalars
    entry = None if scalars is None else scalars.get(id(array))
    return entry is not None and entry[0] is array


def current_trace() -> Trace:
    trace = _state.trace
    return eval_trace if trace is None else trace


@contextlib.contextmanager
def set_current_trace(trace: Trace | None) -> Iterator[None]:
    """Make ``trace`` current inside the block (``None``: back to eager evaluation)."""
    previous = _state.trace
    _state.trace = None if trace is eval_trace else trace
    try:
        yield
    finally:
        _state.trace = previous


# ---------------------------------------------------------------------------------------
# Tracers
# ---------------------------------------------------------------------------------------


class Tracer:
    """A stand-in for an array while a trace runs; it belongs to exactly one trace.

    Array-like methods and operators (``x + y``, ``x.sum()``, ``x[0]``) are attached by
    ``minijax.numpy`` to both ``Tracer`` and ``Array``, so user code cannot tell them
    apart until it asks for a concrete value. Those requests (``bool``, ``int``,
    ``np.asarray``) succeed only if the trace knows the value
    (:meth:`to_concrete_value`), and raise JAX's errors otherwise.
    """

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000
    kind_name = "Tracer"  # how JAX's error messages name this kind of tracer
    # Conversions refused even when the value is known (see ``concrete_or_error``).
    refused_conversions: frozenset[str] = frozenset()

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def to_concrete_value(self) -> Any:
        """The value as a NumPy array if this trace knows it (e.g. JVP of eager code)."""
        return None

    def _context(self) -> str:
        """Where this tracer was made, for error messages."""
        context = self._trace.tracing_context
        if context is None:
            return ""
        return context.describe(self._depends_on())

    def _depends_on(self) -> tuple[str, ...]:
        """Names of the traced function's arguments this value depends on."""
        return ()

    def _creation_site(self) -> tuple[str, tuple[str, ...]]:
        """The source line that made this value, and the user's stack frames then."""
        return "", ()

    def __bool__(self) -> bool:
        return bool(concrete_or_error(self, "bool"))

    def __index__(self) -> int:
        return int(concrete_or_error(self, "index"))

    def __int__(self) -> int:
        return int(concrete_or_error(self, "int"))

    def __float__(self) -> float:
        return float(concrete_or_error(self, "float"))

    def __complex__(self) -> complex:
        return complex(concrete_or_error(self, "complex"))

    def item(self, *args: Any) -> Any:
        return concrete_or_error(self, "item").item(*args)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(concrete_or_error(self, "array"), dtype=dtype)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __setitem__(self, index: Any, value: Any) -> None:
        raise errors.item_assignment_error()

    __hash__ = None  # type: ignore[assignment]  # arrays are unhashable, as in JAX


def concrete_or_error(tracer: Tracer, conversion: str) -> np.ndarray:
    """The value of ``tracer`` as a NumPy array, for Python to convert; or JAX's error.

    ``conversion`` is what Python asked for: ``"bool"`` (``if x:``), ``"index"``
    (``range(x)``, ``a[x]`` on a list), ``"int"``, ``"float"``, ``"complex"``, ``"item"``
    (``x.item()``) or ``"array"`` (``np.asarray(x)``). Every conversion method of
    :class:`Tracer` comes here, so that a tracer whose value the trace does not know
    (:meth:`Tracer.to_concrete_value` is None: the value exists only when the program
    runs) fails with the error JAX raises for that conversion, naming the tracer's type
    and (``tracer._context()``) the traced function and the arguments it depends on. A
    kind of tracer may refuse some conversions even of a known value: a JVP tracer's
    ``float(x)`` would drop its derivative (``refused_conversions``).
    """
    if conversion not in tracer.refused_conversions:
        value = tracer.to_concrete_value()
        if value is not None:
            return value
    aval, context = tracer.aval.str_long(), tracer._context()
    if conversion == "bool":
        raise errors.TracerBoolConversionError(aval, context)
    if conversion == "index":
        raise errors.TracerIntegerConversionError(aval, context)
    if conversion == "array":
        raise errors.TracerArrayConversionError(aval, context)
    if conversion == "item":
        problem = "This occurred in the item() method of jax.Array"
    else:
        problem = (f"The problem arose with the `{conversion}` function. If trying to convert "
                   f"the data type of a value, try using `x.astype({conversion})` or "
                   f"`jnp.array(x, {conversion})` instead.")
    raise errors.ConcretizationTypeError(aval, problem, context)


def check_valid_tracer(tracer: Tracer) -> None:
    """Raise ``UnexpectedTracerError`` if ``tracer`` outlived its transformation."""
    trace = tracer._trace
    if not trace.is_valid:
        context = trace.tracing_context
        if context is None:
            raise errors.UnexpectedTracerError(tracer.aval.str_long(), tracer.kind_name)
        where = (f"The function being traced when the value leaked was {context.fun_name} "
                 f"at {context.source} traced for {context.purpose}.")
        raise errors.UnexpectedTracerError(tracer.aval.str_long(), tracer.kind_name, where,
                                           *tracer._creation_site())


# ---------------------------------------------------------------------------------------
# Jaxpr literals and evaluation (the rest of the jaxpr data lives in minijax.jaxpr)
# ---------------------------------------------------------------------------------------


class Literal:
    """A scalar constant written inline in an equation, e.g. ``2.0:f32[]``.

    ``value`` is the constant (an Array made of a host scalar). ``written`` is the Python
    number it was made from when it kept that number's default dtype: JAX prints what the
    user wrote, so ``x * 0.1`` shows ``0.1:f32[]``, while ``x * np.float32(0.1)`` shows
    the float32 value, ``0.10000000149011612:f32[]``.
    """

    __slots__ = ("_value", "aval", "written")

    def __init__(self, value: Any, aval: ShapedArray, written: Any = None) -> None:
        self._value = value
        self.aval = aval
        self.written = written

    @property
    def value(self) -> Any:
        """The constant. Reading it tells the current trace that it is a host scalar, so
        that a jaxpr evaluated under a trace records its literals as literals again."""
        note_host_scalar(self._value, self.written)
        return self._value

    @property
    def val(self) -> Any:
        """The constant, under JAX's name for it (interpreters written for JAX read it)."""
        return self.value

    def text(self) -> str:
        """As a jaxpr writes it: ``2.0:f32[]``."""
        value = self.written if self.written is not None else np.asarray(self.value)
        return f"{np.asarray(value).item()}:{self.aval.str_short()}"

    def __repr__(self) -> str:
        return f"Literal({self.text()})"


def eval_jaxpr(jaxpr: Any, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Run ``jaxpr`` on ``args``: a tiny interpreter that binds every equation.

    It is JAX's ``jax.core.eval_jaxpr``; the data it walks is defined in
    ``minijax.jaxpr``, and the literals it reads are :class:`Literal` s, defined here.

    Because it *binds* (rather than computing with NumPy), evaluating a jaxpr under a
    transformation transforms it: this is how control-flow bodies get differentiated,
    traced again or evaluated eagerly, with one function.
    """
    env: dict[Any, Any] = {}  # Var -> value

    def read(atom: Any) -> Any:
        return atom.value if type(atom) is Literal else env[atom]

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        env[var] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[var] = value
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for var, value in zip(eqn.outvars, outs, strict=True):
            env[var] = value
    return [read(atom) for atom in jaxpr.outvars]


def is_concrete(x: Any) -> bool:
    """True for values Python can look at now: arrays and tracers with a known value."""
    return not isinstance(x, Tracer) or x.to_concrete_value() is not None
