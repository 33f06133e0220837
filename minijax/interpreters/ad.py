"""Forward-mode automatic differentiation: the JVP interpreter.

A :class:`JVPTracer` carries two things through a function: the ordinary value (the
*primal*) and a *tangent*, the directional derivative of that value along the input
tangents. The :class:`JVPTrace` interprets every primitive by its JVP rule (in
``minijax.interpreters.jvp_rules``): given primals and tangents of the inputs, compute the
primal and tangent of the output. That is forward accumulation of the chain rule, one
primitive at a time, with no tape and no graph.

Rules run under another trace, the JVP trace's ``rule_trace``:

* for ``jvp`` it is the trace that was current when ``jvp`` was called (usually eager
  evaluation), so primals and tangents are computed there;
* for ``linearize`` (and so ``vjp`` and ``grad``) it is a
  :class:`~minijax.interpreters.partial_eval.PartialEvalTrace`: operations on primals
  alone are computed right away, while operations that touch a tangent are *recorded*
  into a linear jaxpr. Reverse mode then transposes that jaxpr.

Tangents that are known to be zero are :class:`Zero` objects, never arrays of zeros, so
that differentiating with respect to one input does not compute with all the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax import core, dtypes, errors
from minijax.array import Array
from minijax.core import Primitive, ShapedArray, Trace, Tracer
from minijax.interpreters import batching

# ---------------------------------------------------------------------------------------
# Tangent types and symbolic zeros
# ---------------------------------------------------------------------------------------


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The type of a tangent: the same for floats; ``float0`` (no values) for ints and bools."""
    if dtypes.issubdtype(aval.dtype, np.inexact):
        return aval
    return ShapedArray(aval.shape, dtypes.float0, False)


def is_differentiable(aval: ShapedArray) -> bool:
    return dtypes.issubdtype(aval.dtype, np.inexact)


class Zero:
    """A tangent (or cotangent) known to be zero, of type ``aval``: free to carry around."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    @classmethod
    def like(cls, x: Any) -> Zero:
        """The zero tangent of the value ``x``."""
        return cls(tangent_aval(core.get_aval(x)))

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def instantiate(tangent: Any) -> Any:
    """An array for a tangent: symbolic zeros become real zeros (with the current trace).

    Under ``linearize`` (a partial-evaluation trace), an array of zeros is recorded in the
    linear part with the other tangent computations, as JAX's linearize does, although
    nothing unknown goes into it.
    """
    if type(tangent) is not Zero:
        return tangent
    aval = tangent.aval
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    from minijax import lax
    from minijax.interpreters.partial_eval import PartialEvalTrace

    zero = lax.convert_element_type(0, aval.dtype, aval.weak_type)  # weak stays weak, as in JAX
    trace = core.current_trace()
    if aval.shape and isinstance(trace, PartialEvalTrace):
        return trace.record(lax.broadcast_in_dim_p, [zero],
                            dict(shape=aval.shape, broadcast_dimensions=(), sharding=None))
    return lax.broadcast_in_dim(zero, aval.shape, ())


def add_tangents(x: Any, y: Any) -> Any:
    """The sum of two tangents, skipping symbolic zeros."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_any_p.bind(x, y)


# ``add_any`` adds two tangents or cotangents. It is ``add`` with a name of its own, as in
# JAX, so that jaxprs show where derivative contributions were summed.
add_any_p = Primitive("add_any")
add_any_p.def_impl(np.add)
add_any_p.def_abstract_eval(lambda x, y: x)


def _add_any_batching(axis_data: batching.AxisData, vals: list, dims: list
                      ) -> tuple[Any, int | None]:
    """JAX's rule: the result is batched where a batched operand is; an unbatched one is
    broadcast there."""
    (x, y), (x_dim, y_dim) = vals, dims
    if x_dim is None:
        x, x_dim = batching.broadcast(x, y.shape[y_dim], y_dim), y_dim
    elif y_dim is None:
        y = batching.broadcast(y, x.shape[x_dim], x_dim)
    elif x_dim != y_dim:
        x, x_dim = batching.moveaxis(x, x_dim, y_dim), y_dim
    return add_any_p.bind(x, y), x_dim


batching.batching_rules[add_any_p] = _add_any_batching  # vmap: batching rules


# ---------------------------------------------------------------------------------------
# The JVP interpreter
# ---------------------------------------------------------------------------------------

# primitive -> rule(primals, tangents, **params) -> (primal_out, tangent_out). Inputs whose
# tangent is known to be zero get a ``Zero``; a rule may return ``Zero`` tangents too.
jvp_rules: dict[Primitive, Callable[..., tuple[Any, Any]]] = {}


class JVPTracer(Tracer):
    """A value being differentiated in forward mode: a primal and its tangent."""

    __slots__ = ("primal", "tangent")
    kind_name = "JVPTracer"

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any) -> None:
        super().__init__(trace)
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return core.get_aval(self.primal)

    def to_concrete_value(self) -> Any:
        """The primal's value, if known: so ``if x > 0:`` works while differentiating."""
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.to_concrete_value()
        return primal._wait()

    # ``if x > 0``, ``int(x)`` and ``x.item()`` may read the primal, but a float, a complex
    # or a NumPy array made from it would carry on without its derivative (a silent zero):
    # JAX refuses those conversions, and so does minijax.
    def __float__(self) -> float:
        raise core._conversion_error("float")(self.aval.str_long(), self._context())

    def __complex__(self) -> complex:
        raise core._conversion_error("complex")(self.aval.str_long(), self._context())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise errors.TracerArrayConversionError(self.aval.str_long(), self._context())

    def __repr__(self) -> str:
        if isinstance(self.tangent, Tracer) and self.tangent.to_concrete_value() is None:
            return f"GradTracer(primal={self.primal}, typeof(tangent)={self.aval.str_short()})"
        tangent = "0.0" if type(self.tangent) is Zero else self.tangent
        return f"JVPTracer(primal={self.primal}, tangent={tangent})"


class JVPTrace(Trace):
    """Interprets primitives by their JVP rules; rules run under ``rule_trace``."""

    def __init__(self, parent: Trace, rule_trace: Trace) -> None:
        super().__init__()
        self.parent = parent
        self.rule_trace = rule_trace
        self.tracing_context = parent.tracing_context
        # constants made while this trace is current are seen by the trace that records
        # (a linearization), which must know what came from the host (see ``core.Trace``)
        self.host_constants = rule_trace.host_constants
        self.host_scalars = rule_trace.host_scalars

    def to_primal_tangent(self, x: Any) -> tuple[Any, Any]:
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            core.check_valid_tracer(x)
        else:  # an Array, or a NumPy constant that a lax function binds directly
            x = _as_value(x)
        return x, Zero.like(x)

    def process_primitive(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
        if all(type(t) is Zero for t in tangents):
            with core.set_current_trace(self.parent):
                return primitive.bind(*primals, **params)
        rule = jvp_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{primitive.name}' not implemented"
            )
        with core.set_current_trace(self.rule_trace):
            primal_out, tangent_out = rule(list(primals), list(tangents), **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(primal_out, tangent_out)]
        return JVPTracer(self, primal_out, tangent_out)

    def lift(self, primal: Any, tangent: Any) -> JVPTracer:
        return JVPTracer(self, primal, tangent)


def _as_value(x: Any) -> Any:
    """Inputs may be Python or NumPy scalars: make them arrays, keeping tracers as they are."""
    if isinstance(x, (Array, Tracer)):
        return x
    from minijax.runtime import host_to_array

    return host_to_array(x)


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any], rule_trace: Trace | None = None
             ) -> tuple[list[Any], list[Any]]:
    """Run ``fun`` (flat inputs -> flat outputs) on JVP tracers; return output primals and
    tangents. ``tangents`` may hold ``Zero`` objects; output tangents may too."""
    parent = core.current_trace()
    trace = JVPTrace(parent, rule_trace or parent)
    inputs = [JVPTracer(trace, _as_value(p), t) for p, t in zip(primals, tangents)]
    try:
        with core.set_current_trace(trace):
            outputs = fun(*inputs)
        pairs = [trace.to_primal_tangent(_as_value(out)) for out in outputs]
    finally:
        trace.invalidate()
    return [p for p, _ in pairs], [t for _, t in pairs]
