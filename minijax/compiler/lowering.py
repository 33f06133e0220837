"""Lowering: a jaxpr becomes a StableHLO module, printed exactly as JAX prints it.

``lower_jaxpr`` walks the equations of a (closed) jaxpr and asks the *lowering rule*
of each primitive to emit StableHLO ops into the function being built. All rules live
in one table, :data:`lowering_rules`, keyed by primitive: ``rule(ctx, *operands,
**params)`` receives the operands as :class:`~minijax.compiler.stablehlo.Value` s and
returns the results. ``ctx.b`` is a :class:`Builder` that appends ops; ``ctx.avals_in``
and ``ctx.avals_out`` are the equation's abstract values.

Each rule makes the same op choices as JAX's, so the text matches
``jax.jit(f).lower(*args).as_text()`` op for op: a Python scalar in an equation becomes
a ``stablehlo.constant`` followed by a ``broadcast_in_dim``; ``argmax`` and ``cumsum``
become private functions; ``scan`` becomes a ``while`` loop that calls its body.

Before lowering, dead code is removed from the jaxpr, as JAX does (so unused results
of a ``cond``, a ``scan`` or a nested ``jit`` disappear, and so do unused arguments).

``cost_analysis`` counts flops and bytes on the lowered module (see its docstring).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax import dtypes, lax
from minijax.compiler.stablehlo import (
    Block,
    Dense,
    DenseArray,
    Func,
    Module,
    Op,
    Opaque,
    Struct,
    TensorType,
    Typed,
    Value,
    is_splat,
    print_module,
)
from minijax.core import Primitive, ShapedArray
from minijax.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Var,
    effectful_primitives,
    has_effects,
    jaxprs_in_params,
)
from minijax.lax import linalg as lax_linalg
from minijax.lax import shapes as lax_shapes
from minijax.lax.slicing import GatherScatterMode

# ---------------------------------------------------------------------------------------
# Building ops
# ---------------------------------------------------------------------------------------


def tensor_type(aval: ShapedArray) -> TensorType:
    return TensorType(tuple(aval.shape), np.dtype(aval.dtype))


def compare_type(dtype: np.dtype) -> str:
    """How StableHLO compares elements of ``dtype``: as floats, signed or unsigned ints."""
    if dtypes.issubdtype(dtype, np.inexact):
        return "FLOAT"
    return "SIGNED" if dtype.kind == "i" else "UNSIGNED"


class Builder:
    """Appends ops to one block; ``module`` is the :class:`ModuleContext` being built."""

    __slots__ = ("module", "block")

    def __init__(self, module: ModuleContext, block: Block) -> None:
        self.module = module
        self.block = block

    def op(self, name: str, operands: Sequence[Value], result_types: Sequence[TensorType],
           attrs: dict[str, Any] | None = None, regions: Sequence[Block] = ()) -> Op:
        op = Op(name, operands, result_types, attrs, regions)
        self.block.ops.append(op)
        return op

    def emit(self, name: str, *operands: Value, type: TensorType | None = None,
             **attrs: Any) -> Value:
        """A one-result op whose result type defaults to that of the first operand."""
        return self.op(name, operands, [type or operands[0].type], attrs).result

    def constant(self, value: Any, dtype: Any = None) -> Value:
        value = np.array(value, dtype=dtype)
        return self.op("stablehlo.constant", [], [TensorType(value.shape, value.dtype)],
                       {"value": value}).result

    def broadcast(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        """``broadcast_in_dim``, always emitted (even when nothing changes, as JAX does
        for its MLIR-level helpers)."""
        return self.emit("stablehlo.broadcast_in_dim", x, type=TensorType(tuple(shape),
                         x.type.dtype), dims=tuple(dims))

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        """Broadcast a smaller operand to ``shape``, lining up trailing dimensions
        (NumPy's rule); a no-op if the shape already matches."""
        shape = tuple(shape)
        if x.type.shape == shape:
            return x
        rank = len(x.type.shape)
        return self.broadcast(x, shape, range(len(shape) - rank, len(shape)))

    def full(self, value: Any, type: TensorType) -> Value:
        """A constant broadcast to ``type`` (JAX's ``full_like_aval``)."""
        return self.broadcast(self.constant(value, type.dtype), type.shape, ())

    def full_if_needed(self, value: Any, type: TensorType) -> Value:
        """``lax.full_like`` traced inside a lowering: no broadcast for scalars."""
        c = self.constant(value, type.dtype)
        return self.broadcast(c, type.shape, ()) if type.shape else c

    def compare(self, a: Value, b: Value, direction: str, kind: str | None = None) -> Value:
        return self.emit("stablehlo.compare", a, b, type=TensorType(a.type.shape, np.dtype(bool)),
                         direction=direction, compare_type=kind or compare_type(a.type.dtype))

    def select(self, pred: Value, on_true: Value, on_false: Value) -> Value:
        return self.emit("stablehlo.select", pred, on_true, on_false, type=on_true.type)

    def convert(self, x: Value, dtype: np.dtype) -> Value:
        """``convert_element_type``: to bool by comparing with zero, as JAX does."""
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            x = self.compare(x, self.full(0, x.type), "NE")
        return self.emit("stablehlo.convert", x, type=TensorType(x.type.shape, dtype))

    def call(self, func: Func, args: Sequence[Value]) -> list[Value]:
        return self.op("func.call", args, func.result_types, {"callee": func.name}).results

    def ret(self, values: Sequence[Value], name: str = "stablehlo.return") -> None:
        self.op(name, values, [])


class ModuleContext:
    """One module being built: its functions, and the symbol names already taken."""

    def __init__(self, name: str) -> None:
        self.module = Module(name)
        self.symbols: set[str] = set()
        self.next_suffix = 0
        self.cache: dict[Any, Func] = {}

    def unique_symbol(self, name: str) -> str:
        """MLIR renames a clashing symbol ``name_0``, ``name_1``... with one counter."""
        unique = name
        while unique in self.symbols:
            unique = f"{name}_{self.next_suffix}"
            self.next_suffix += 1
        self.symbols.add(unique)
        return unique

    def function(self, name: str, arg_types: Sequence[TensorType],
                 build: Callable[[Builder, list[Value]], Sequence[Value]],
                 key: Any = None) -> Func:
        """A private function, built by ``build(builder, args) -> results`` (or an
        existing one with the same ``key``: identical helpers are emitted once)."""
        if key is not None and key in self.cache:
            return self.cache[key]
        func = Func(self.unique_symbol(name), arg_types, [])
        self.module.funcs.append(func)
        if key is not None:
            self.cache[key] = func
        b = Builder(self, func.body)
        outs = list(build(b, func.body.args))
        func.result_types = [v.type for v in outs]
        func.result_infos = [None] * len(outs)
        b.ret(outs, "func.return")
        return func

    def jaxpr_function(self, name: str, closed: ClosedJaxpr) -> Func:
        """A private function computing ``closed`` (one per jaxpr object)."""
        return self.function(
            name, [tensor_type(a) for a in closed.in_avals],
            lambda b, args: lower_closed_jaxpr(b, closed, args), key=("jaxpr", closed))


class RuleContext(NamedTuple):
    """What a lowering rule gets besides its operands."""

    b: Builder
    avals_in: Sequence[ShapedArray]
    avals_out: Sequence[ShapedArray]

    @property
    def type_out(self) -> TensorType:
        return tensor_type(self.avals_out[0])


lowering_rules: dict[Primitive, Callable[..., Any]] = {}


def register(*prims: Primitive) -> Callable[[Callable], Callable]:
    def decorate(rule: Callable) -> Callable:
        for prim in prims:
            lowering_rules[prim] = rule
        return rule
    return decorate


# ---------------------------------------------------------------------------------------
# Lowering jaxprs
# ---------------------------------------------------------------------------------------


def lower_jaxpr_into(b: Builder, jaxpr: Jaxpr, consts: Sequence[Value],
                     args: Sequence[Value]) -> list[Value]:
    """Emit the equations of ``jaxpr`` into ``b``'s block; return the output values.

    A literal becomes a new ``stablehlo.constant`` at each use, as in JAX.
    """
    env: dict[Var, Value] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom: Any) -> Value:
        if type(atom) is Literal:
            return b.constant(np.asarray(atom.value), atom.aval.dtype)
        return env[atom]

    for eqn in jaxpr.eqns:
        rule = lowering_rules.get(eqn.primitive) or _rules_by_name.get(eqn.primitive.name)
        if rule is None:
            raise NotImplementedError(
                f"minijax has no StableHLO lowering rule for the primitive "
                f"'{eqn.primitive.name}' (add one to minijax.compiler.lowering.lowering_rules)")
        operands = [read(a) for a in eqn.invars]
        ctx = RuleContext(b, [a.aval for a in eqn.invars], [v.aval for v in eqn.outvars])
        outs = rule(ctx, *operands, **eqn.params)
        outs = list(outs) if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


def lower_closed_jaxpr(b: Builder, closed: ClosedJaxpr, args: Sequence[Value]) -> list[Value]:
    """Constants first (``stablehlo.constant`` with the captured values), then the body."""
    consts = [b.constant(np.asarray(c), v.aval.dtype)
              for c, v in zip(closed.consts, closed.jaxpr.constvars)]
    return lower_jaxpr_into(b, closed.jaxpr, consts, args)


def _region(b: Builder, arg_types: Sequence[TensorType],
            body: Callable[[Builder, list[Value]], Sequence[Value]]) -> Block:
    """A nested block (a region of ``case``, ``while``, ``reduce``...) ending in a return."""
    block = Block(arg_types)
    inner = Builder(b.module, block)
    inner.ret(list(body(inner, block.args)))
    return block


# ---------------------------------------------------------------------------------------
# Dead-code elimination on jaxprs, as JAX runs it before lowering
# ---------------------------------------------------------------------------------------

def _has_effects(eqn: JaxprEqn) -> bool:
    """An equation that must run even if nobody uses its results (a debug print)."""
    return eqn.primitive in effectful_primitives or any(
        has_effects(inner) for inner in jaxprs_in_params(eqn.params))


class _DCE:
    """Remove equations whose results nobody needs, looking inside ``jit``, ``cond`` and
    ``scan`` (as JAX's per-primitive DCE rules do), and memoise by jaxpr so that two
    identical nested calls still share one lowered function."""

    def __init__(self) -> None:
        self.memo: dict[tuple, tuple[Jaxpr, list[bool]]] = {}
        self.keep: list[Any] = []  # keeps memoised jaxprs alive, so ids stay unique

    def jaxpr(self, jaxpr: Jaxpr, used_outputs: Sequence[bool],
              instantiate: Sequence[bool] | bool = False) -> tuple[Jaxpr, list[bool]]:
        if isinstance(instantiate, bool):
            instantiate = [instantiate] * len(jaxpr.invars)
        key = (id(jaxpr), tuple(used_outputs), tuple(instantiate))
        if key not in self.memo:
            self.keep.append(jaxpr)
            self.memo[key] = self._run(jaxpr, list(used_outputs), list(instantiate))
        return self.memo[key]

    def closed(self, closed: ClosedJaxpr, used_outputs: Sequence[bool],
               instantiate: Sequence[bool] | bool = False) -> tuple[ClosedJaxpr, list[bool]]:
        key = ("closed", id(closed), tuple(used_outputs), instantiate if isinstance(
            instantiate, bool) else tuple(instantiate))
        if key not in self.memo:
            jaxpr, used = self.jaxpr(closed.jaxpr, used_outputs, instantiate)
            kept = set(jaxpr.constvars)
            consts = [c for c, v in zip(closed.consts, closed.jaxpr.constvars) if v in kept]
            self.keep.append(closed)
            self.memo[key] = (ClosedJaxpr(jaxpr, consts), used)
        return self.memo[key]

    def _run(self, jaxpr: Jaxpr, used_outputs: list[bool], instantiate: list[bool]
             ) -> tuple[Jaxpr, list[bool]]:
        used_vars = {v for v, u in zip(jaxpr.outvars, used_outputs) if u and type(v) is Var}
        eqns = []
        for eqn in reversed(jaxpr.eqns):
            used_outs = [v in used_vars for v in eqn.outvars]
            rule = _dce_rules.get(eqn.primitive.name, _default_dce)
            used_ins, new_eqn = rule(self, used_outs, eqn)
            if new_eqn is not None:
                eqns.append(new_eqn)
                used_vars.update(v for v, u in zip(eqn.invars, used_ins)
                                 if u and type(v) is Var)
        used_inputs = [v in used_vars or i for v, i in zip(jaxpr.invars, instantiate)]
        constvars = [v for v in jaxpr.constvars if v in used_vars]
        new = Jaxpr(constvars, [v for v, u in zip(jaxpr.invars, used_inputs) if u],
                    [v for v, u in zip(jaxpr.outvars, used_outputs) if u], eqns[::-1])
        return new, used_inputs


def _default_dce(dce: _DCE, used_outs: list[bool], eqn: JaxprEqn
                 ) -> tuple[list[bool], JaxprEqn | None]:
    if not any(used_outs) and not _has_effects(eqn):
        return [False] * len(eqn.invars), None
    return [True] * len(eqn.invars), eqn


def _keep(values: Sequence[Any], keep: Sequence[bool]) -> list[Any]:
    return [v for v, k in zip(values, keep) if k]


def _dce_jit(dce: _DCE, used_outs: list[bool], eqn: JaxprEqn
             ) -> tuple[list[bool], JaxprEqn | None]:
    if not any(used_outs) and not _has_effects(eqn):
        return [False] * len(eqn.invars), None
    closed, used_ins = dce.closed(eqn.params["jaxpr"], used_outs)
    params = dict(eqn.params, jaxpr=closed)
    for name in ("donated_invars", "in_shardings", "in_layouts"):
        if isinstance(params.get(name), tuple):
            params[name] = tuple(_keep(params[name], used_ins))
    for name in ("out_shardings", "out_layouts"):
        if isinstance(params.get(name), tuple):
            params[name] = tuple(_keep(params[name], used_outs))
    return used_ins, JaxprEqn(eqn.primitive, _keep(eqn.invars, used_ins),
                              _keep(eqn.outvars, used_outs), params)


def _dce_cond(dce: _DCE, used_outs: list[bool], eqn: JaxprEqn
              ) -> tuple[list[bool], JaxprEqn | None]:
    if not any(used_outs) and not _has_effects(eqn):
        return [False] * len(eqn.invars), None
    branches = eqn.params["branches"]
    used_ins = [False] * (len(eqn.invars) - 1)
    for branch in branches:
        _, used = dce.closed(branch, used_outs)
        used_ins = [a or b for a, b in zip(used_ins, used)]
    new_branches = tuple(dce.closed(branch, used_outs, used_ins)[0] for branch in branches)
    used_ins = [True, *used_ins]
    return used_ins, JaxprEqn(eqn.primitive, _keep(eqn.invars, used_ins),
                              _keep(eqn.outvars, used_outs), dict(eqn.params,
                                                                  branches=new_branches))


def _dce_scan(dce: _DCE, used_outs: list[bool], eqn: JaxprEqn
              ) -> tuple[list[bool], JaxprEqn | None]:
    """A carry is needed if its result is used or a needed value depends on it: iterate
    to a fixed point."""
    if not any(used_outs) and not _has_effects(eqn):
        return [False] * len(eqn.invars), None
    closed = eqn.params["jaxpr"]
    num_consts, num_carry = eqn.params["num_consts"], eqn.params["num_carry"]
    num_xs = len(closed.in_avals) - num_consts - num_carry
    used_carry, used_ys = used_outs[:num_carry], used_outs[num_carry:]
    while True:
        new, used_ins = dce.closed(closed, used_carry + used_ys,
                                   [False] * num_consts + used_carry + [False] * num_xs)
        used_carry_in = used_ins[num_consts:num_consts + num_carry]
        if used_carry_in == used_carry:
            break
        used_carry = [a or b for a, b in zip(used_carry, used_carry_in)]
    used_outs = used_carry + used_ys
    params = dict(eqn.params, jaxpr=new, num_consts=sum(used_ins[:num_consts]),
                  num_carry=sum(used_carry))
    return used_ins, JaxprEqn(eqn.primitive, _keep(eqn.invars, used_ins),
                              _keep(eqn.outvars, used_outs), params)


_dce_rules: dict[str, Callable] = {"jit": _dce_jit, "pjit": _dce_jit, "cond": _dce_cond,
                                   "scan": _dce_scan}


def dead_code_elimination(closed: ClosedJaxpr, keep_unused: bool = False
                          ) -> tuple[ClosedJaxpr, list[bool]]:
    """The jaxpr JAX would lower, and which of its inputs it still takes (unused ones are
    dropped unless ``keep_unused``)."""
    jaxpr = closed.jaxpr
    new, used_inputs = _DCE().jaxpr(jaxpr, [True] * len(jaxpr.outvars), keep_unused)
    consts = [c for c, v in zip(closed.consts, jaxpr.constvars) if v in set(new.constvars)]
    return ClosedJaxpr(new, consts), used_inputs


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------


def module_name(fun_name: str) -> str:
    """The module name JAX gives ``jit(f)``: ``jit_f``; ``<lambda>`` becomes ``_lambda``."""
    return re.sub(r"[^\w.-]", "_", f"jit({fun_name})").rstrip("_")


def default_result_names(count: int) -> list[str]:
    return ["result"] if count == 1 else [f"result[{i}]" for i in range(count)]


def lower_to_module(closed: ClosedJaxpr, *, module_name: str,
                    result_names: Sequence[str] | None = None, keep_unused: bool = False
                    ) -> tuple[Module, list[bool]]:
    """The lowered :class:`Module`, and which of the jaxpr's inputs ``main`` takes."""
    closed, used_inputs = dead_code_elimination(closed, keep_unused)
    ctx = ModuleContext(module_name)
    in_types = [tensor_type(a) for a in closed.in_avals]
    out_types = [tensor_type(a) for a in closed.out_avals]
    names = list(result_names) if result_names is not None \
        else default_result_names(len(out_types))
    main = Func(ctx.unique_symbol("main"), in_types, out_types, "public", names)
    ctx.module.funcs.append(main)
    b = Builder(ctx, main.body)
    b.ret(lower_closed_jaxpr(b, closed, main.body.args), "func.return")
    return ctx.module, used_inputs


def lower_jaxpr(closed_jaxpr: ClosedJaxpr, *, module_name: str,
                arg_names: Sequence[str] | None = None,
                result_names: Sequence[str] | None = None, keep_unused: bool = False) -> str:
    """StableHLO text for ``closed_jaxpr``, as ``jax.jit(f).lower(...).as_text()``.

    ``result_names`` label the outputs (``jax.result_info``; JAX uses pytree paths such
    as ``result[0]`` or ``result['w']``). ``arg_names`` are accepted for symmetry: JAX
    no longer prints them. Inputs the program does not use are dropped from ``main``
    unless ``keep_unused`` (see :func:`used_inputs`).
    """
    del arg_names
    module, _ = lower_to_module(closed_jaxpr, module_name=module_name,
                                result_names=result_names, keep_unused=keep_unused)
    return print_module(module)


def used_inputs(closed_jaxpr: ClosedJaxpr) -> list[bool]:
    """Which inputs of ``closed_jaxpr`` the lowered ``main`` takes as arguments."""
    return dead_code_elimination(closed_jaxpr)[1]


# ---------------------------------------------------------------------------------------
# Elementwise primitives
# ---------------------------------------------------------------------------------------


def _nary(op_name: str) -> Callable[..., Value]:
    """An elementwise op: operands of a smaller shape are broadcast first."""

    def rule(ctx: RuleContext, *args: Value, **params: Any) -> Value:
        shape = tuple(ctx.avals_out[0].shape)
        args = [ctx.b.broadcast_to(a, shape) for a in args]
        return ctx.b.emit(op_name, *args, type=ctx.type_out)

    return rule


_ELEMENTWISE = {
    lax.neg_p: "stablehlo.negate", lax.floor_p: "stablehlo.floor", lax.ceil_p: "stablehlo.ceil",
    lax.is_finite_p: "stablehlo.is_finite", lax.exp_p: "stablehlo.exponential",
    lax.log_p: "stablehlo.log", lax.log1p_p: "stablehlo.log_plus_one",
    lax.expm1_p: "stablehlo.exponential_minus_one", lax.sqrt_p: "stablehlo.sqrt",
    lax.rsqrt_p: "stablehlo.rsqrt", lax.cbrt_p: "stablehlo.cbrt", lax.sin_p: "stablehlo.sine",
    lax.cos_p: "stablehlo.cosine", lax.tan_p: "stablehlo.tan", lax.tanh_p: "stablehlo.tanh",
    lax.asin_p: "chlo.asin", lax.acos_p: "chlo.acos", lax.atan_p: "chlo.atan",
    lax.sinh_p: "chlo.sinh", lax.cosh_p: "chlo.cosh", lax.asinh_p: "chlo.asinh",
    lax.acosh_p: "chlo.acosh", lax.atanh_p: "chlo.atanh", lax.real_p: "stablehlo.real",
    lax.imag_p: "stablehlo.imag", lax.not_p: "stablehlo.not",
    lax.population_count_p: "stablehlo.popcnt", lax.abs_p: "stablehlo.abs",
    lax.add_p: "stablehlo.add", lax.sub_p: "stablehlo.subtract",
    lax.mul_p: "stablehlo.multiply", lax.div_p: "stablehlo.divide",
    lax.rem_p: "stablehlo.remainder",
    lax.atan2_p: "stablehlo.atan2", lax.nextafter_p: "chlo.next_after",
    lax.complex_p: "stablehlo.complex", lax.and_p: "stablehlo.and", lax.or_p: "stablehlo.or",
    lax.xor_p: "stablehlo.xor", lax.shift_left_p: "stablehlo.shift_left",
    lax.shift_right_logical_p: "stablehlo.shift_right_logical",
    lax.shift_right_arithmetic_p: "stablehlo.shift_right_arithmetic",
    lax.clamp_p: "stablehlo.clamp", lax.bitcast_convert_type_p: "stablehlo.bitcast_convert",
    lax.clz_p: "stablehlo.count_leading_zeros", lax.erf_p: "chlo.erf", lax.erfc_p: "chlo.erfc",
    lax.erf_inv_p: "chlo.erf_inv", lax.lgamma_p: "chlo.lgamma", lax.digamma_p: "chlo.digamma",
}
for _prim, _name in _ELEMENTWISE.items():
    lowering_rules[_prim] = _nary(_name)


@register(lax.pow_p)
def _pow(ctx: RuleContext, x: Value, y: Value) -> Value:
    """An integer exponent is converted to the base's dtype first."""
    if y.type.dtype != x.type.dtype:
        y = ctx.b.convert(y, x.type.dtype)
    return _nary("stablehlo.power")(ctx, x, y)


@register(lax.reduce_precision_p)
def _reduce_precision(ctx: RuleContext, x: Value, *, exponent_bits: int, mantissa_bits: int
                      ) -> Value:
    return ctx.b.emit("stablehlo.reduce_precision", x,
                      format=f"e{exponent_bits}m{mantissa_bits}")


@register(lax.sign_p)
def _sign(ctx: RuleContext, x: Value) -> Value:
    """Unsigned integers have no ``sign`` op: 0 where x == 0, else 1."""
    b = ctx.b
    if x.type.dtype.kind != "u":
        return b.emit("stablehlo.sign", x)
    is_zero = b.compare(x, b.full(0, x.type), "EQ")
    return b.select(is_zero, b.full(0, x.type), b.full(1, x.type))


@register(lax.square_p)
def _square(ctx: RuleContext, x: Value) -> Value:
    if x.type.dtype.kind in "iu":
        return ctx.b.emit("stablehlo.multiply", x, x)
    return ctx.b.emit("chlo.square", x)


@register(lax.exp2_p)
def _exp2(ctx: RuleContext, x: Value) -> Value:
    """2**x = exp(log(2) * x)."""
    b = ctx.b
    log2 = b.full(np.log(2), x.type)
    return b.emit("stablehlo.exponential", b.emit("stablehlo.multiply", log2, x))


@register(lax.logistic_p)
def _logistic(ctx: RuleContext, x: Value) -> Value:
    """1 / (1 + exp(-x))."""
    b = ctx.b
    e = b.emit("stablehlo.exponential", b.emit("stablehlo.negate", x))
    one_plus = b.emit("stablehlo.add", b.full_if_needed(1, x.type), e)
    return b.emit("stablehlo.divide", b.full_if_needed(1, x.type), one_plus)


@register(lax.conj_p)
def _conj(ctx: RuleContext, x: Value, **params: Any) -> Value:
    b = ctx.b
    if x.type.dtype.kind != "c":  # lax.conj of a real array: the same numbers, as complex
        out = TensorType(x.type.shape, ctx.avals_out[0].dtype)
        return b.emit("stablehlo.complex", x, b.full_if_needed(0, x.type), type=out)
    part = TensorType(x.type.shape, ctx.avals_out[0].dtype.type(0).real.dtype)
    real = b.emit("stablehlo.real", x, type=part)
    imag = b.emit("stablehlo.negate", b.emit("stablehlo.imag", x, type=part))
    return b.emit("stablehlo.complex", real, imag, type=x.type)


@register(lax.round_p)
def _round(ctx: RuleContext, x: Value, rounding_method: int = 0) -> Value:
    even = rounding_method == lax.RoundingMethod.TO_NEAREST_EVEN
    return ctx.b.emit("stablehlo.round_nearest_even" if even else "stablehlo.round_nearest_afz",
                      x)


def _minmax(op_name: str, direction: str) -> Callable[..., Value]:
    """max/min; complex numbers compare by real part, then imaginary part."""
    elementwise = _nary(op_name)

    def rule(ctx: RuleContext, x: Value, y: Value) -> Value:
        if x.type.dtype.kind != "c":
            return elementwise(ctx, x, y)
        b = ctx.b
        x, y = (b.broadcast_to(v, ctx.type_out.shape) for v in (x, y))
        part = TensorType(x.type.shape, x.type.dtype.type(0).real.dtype)
        rx, ry = b.emit("stablehlo.real", x, type=part), b.emit("stablehlo.real", y, type=part)
        real_eq, real_cmp = b.compare(rx, ry, "EQ"), b.compare(rx, ry, direction)
        ix, iy = b.emit("stablehlo.imag", x, type=part), b.emit("stablehlo.imag", y, type=part)
        pick_x = b.select(real_eq, b.compare(ix, iy, direction), real_cmp)
        return b.select(pick_x, x, y)

    return rule


lowering_rules[lax.max_p] = _minmax("stablehlo.maximum", "GT")
lowering_rules[lax.min_p] = _minmax("stablehlo.minimum", "LT")


def _comparison(direction: str) -> Callable[..., Value]:
    def rule(ctx: RuleContext, x: Value, y: Value) -> Value:
        shape = tuple(ctx.avals_out[0].shape)
        x, y = ctx.b.broadcast_to(x, shape), ctx.b.broadcast_to(y, shape)
        return ctx.b.compare(x, y, direction)
    return rule


for _prim, _direction in ((lax.eq_p, "EQ"), (lax.ne_p, "NE"), (lax.lt_p, "LT"),
                          (lax.le_p, "LE"), (lax.gt_p, "GT"), (lax.ge_p, "GE")):
    lowering_rules[_prim] = _comparison(_direction)


@register(lax.integer_pow_p)
def _integer_pow(ctx: RuleContext, x: Value, y: int) -> Value:
    """Repeated squaring (x**5 = x * (x*x)*(x*x)); 1, 2, 3 and -1 directly."""
    b = ctx.b
    mul = lambda u, v: b.emit("stablehlo.multiply", u, v)
    if y == 1:
        return x
    if y == 2:
        return mul(x, x)
    if y == 3:
        return mul(mul(x, x), x)
    if y == -1:
        return b.emit("stablehlo.divide", b.full(1, x.type), x)
    if y == 0:
        return b.full_if_needed(1, x.type)
    n, acc = abs(y), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else mul(acc, x)
        n >>= 1
        if n > 0:
            x = mul(x, x)
    if y < 0:
        return b.emit("stablehlo.divide", b.full_if_needed(1, acc.type), acc)
    return acc


@register(lax.convert_element_type_p)
def _convert_element_type(ctx: RuleContext, x: Value, new_dtype: np.dtype,
                          weak_type: bool, **params: Any) -> Value:
    """A convert even when only the weak type changes; complex -> real keeps the real part."""
    if x.type.dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        part = TensorType(x.type.shape, x.type.dtype.type(0).real.dtype)
        x = ctx.b.emit("stablehlo.real", x, type=part)
    return ctx.b.convert(x, new_dtype)


@register(lax.select_n_p)
def _select_n(ctx: RuleContext, which: Value, *cases: Value) -> Value:
    """Two cases: one ``select``; more: a binary tree of selects on ``which < mid``."""
    b = ctx.b
    if which.type.dtype == np.bool_:
        return cases[0] if len(cases) == 1 else b.select(which, cases[1], cases[0])

    def pick(offset: int, cases: Sequence[Value]) -> Value:
        if len(cases) == 1:
            return cases[0]
        mid = len(cases) // 2
        pred = b.compare(which, b.full(offset + mid, which.type), "LT")
        return b.select(pred, pick(offset, cases[:mid]), pick(offset + mid, cases[mid:]))

    return pick(0, cases)


# ---------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------


@register(lax.broadcast_in_dim_p)
def _broadcast_in_dim(ctx: RuleContext, x: Value, shape: tuple[int, ...],
                      broadcast_dimensions: tuple[int, ...], sharding: Any) -> Value:
    return ctx.b.broadcast(x, shape, broadcast_dimensions)


@register(lax.reshape_p)
def _reshape(ctx: RuleContext, x: Value, new_sizes: tuple[int, ...], dimensions: Any,
             sharding: Any) -> Value:
    if dimensions is not None:
        x = _transpose(ctx, x, permutation=dimensions)
    return ctx.b.emit("stablehlo.reshape", x, type=ctx.type_out)


@register(lax.squeeze_p)
def _squeeze(ctx: RuleContext, x: Value, dimensions: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.reshape", x, type=ctx.type_out)


@register(lax.transpose_p)
def _transpose(ctx: RuleContext, x: Value, permutation: tuple[int, ...]) -> Value:
    shape = tuple(x.type.shape[p] for p in permutation)
    return ctx.b.emit("stablehlo.transpose", x, type=TensorType(shape, x.type.dtype),
                      dims=tuple(permutation))


@register(lax.rev_p)
def _rev(ctx: RuleContext, x: Value, dimensions: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.reverse", x, dims=tuple(dimensions))


@register(lax.pad_p)
def _pad(ctx: RuleContext, x: Value, value: Value,
         padding_config: tuple[tuple[int, int, int], ...]) -> Value:
    low, high, interior = (tuple(c[i] for c in padding_config) for i in range(3))
    return ctx.b.emit("stablehlo.pad", x, value, type=ctx.type_out, low=low, high=high,
                      interior=interior)


@register(lax.concatenate_p)
def _concatenate(ctx: RuleContext, *xs: Value, dimension: int) -> Value:
    return ctx.b.emit("stablehlo.concatenate", *xs, type=ctx.type_out, dim=dimension)


@register(lax.iota_p)
def _iota(ctx: RuleContext, *, dtype: np.dtype, shape: tuple[int, ...], dimension: int,
          sharding: Any) -> Value:
    return ctx.b.op("stablehlo.iota", [], [ctx.type_out], {"dim": dimension}).result


@register(lax_shapes.empty2_p)
def _empty2(ctx: RuleContext, *, dtype: np.dtype, memory_space: Any) -> Value:
    """Any value will do: zero, as XLA's lowering of JAX's ``empty2`` gives."""
    return ctx.b.constant(0, dtype)


@register(lax.copy_p, lax.stop_gradient_p)
def _copy(ctx: RuleContext, x: Value) -> Value:
    """Arrays are immutable: a copy is the value itself (and gradients are not a concern
    of the compiled program)."""
    return x


def _slice(b: Builder, x: Value, start: Sequence[int], limit: Sequence[int],
           strides: Sequence[int] | None = None) -> Value:
    strides = tuple(strides) if strides else (1,) * len(start)
    shape = tuple(-(-(hi - lo) // st) for lo, hi, st in zip(start, limit, strides))
    return b.emit("stablehlo.slice", x, type=TensorType(shape, x.type.dtype),
                  start=tuple(start), limit=tuple(limit), strides=strides)


@register(lax.split_p)
def _split(ctx: RuleContext, x: Value, sizes: tuple[int, ...], axis: int) -> list[Value]:
    outs, offset = [], 0
    for size in sizes:
        start, limit = [0] * len(x.type.shape), list(x.type.shape)
        start[axis], limit[axis] = offset, offset + size
        outs.append(_slice(ctx.b, x, start, limit))
        offset += size
    return outs


@register(lax.stack_p)
def _stack(ctx: RuleContext, *xs: Value, axis: int) -> Value:
    """As ``jnp.stack`` lowers: each operand gets a size-1 axis, then one concatenate."""
    expanded = []
    for x in xs:
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        kept = [d for d in range(len(shape)) if d != axis]
        expanded.append(ctx.b.broadcast(x, shape, kept))
    return ctx.b.emit("stablehlo.concatenate", *expanded, type=ctx.type_out, dim=axis)


@register(lax.unstack_p)
def _unstack(ctx: RuleContext, x: Value, axis: int) -> list[Value]:
    outs = []
    for i, aval in enumerate(ctx.avals_out):
        start, limit = [0] * len(x.type.shape), list(x.type.shape)
        start[axis], limit[axis] = i, i + 1
        piece = _slice(ctx.b, x, start, limit)
        outs.append(ctx.b.emit("stablehlo.reshape", piece, type=tensor_type(aval)))
    return outs


@register(lax.tile_p)
def _tile(ctx: RuleContext, x: Value, reps: tuple[int, ...]) -> Value:
    """As ``jnp.tile`` lowers: reshape to (1, n0, 1, n1, ...), broadcast the ones to the
    repetitions, reshape back."""
    b, shape = ctx.b, x.type.shape
    spread = [d for n in shape for d in (1, n)]
    repeated = [d for r, n in zip(reps, shape) for d in (r, n)]
    x = b.emit("stablehlo.reshape", x, type=TensorType(tuple(spread), x.type.dtype))
    x = b.broadcast(x, repeated, range(len(repeated)))
    return b.emit("stablehlo.reshape", x, type=ctx.type_out)


# ---------------------------------------------------------------------------------------
# Slicing, gather and scatter
# ---------------------------------------------------------------------------------------


@register(lax.slice_p)
def _slice_rule(ctx: RuleContext, x: Value, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...], strides: Any) -> Value:
    return _slice(ctx.b, x, start_indices, limit_indices, strides)


@register(lax.dynamic_slice_p)
def _dynamic_slice(ctx: RuleContext, x: Value, *starts: Value,
                   slice_sizes: tuple[int, ...]) -> Value:
    return ctx.b.emit("stablehlo.dynamic_slice", x, *starts, type=ctx.type_out,
                      sizes=tuple(slice_sizes))


@register(lax.dynamic_update_slice_p)
def _dynamic_update_slice(ctx: RuleContext, x: Value, update: Value, *starts: Value) -> Value:
    return ctx.b.emit("stablehlo.dynamic_update_slice", x, update, *starts)


def _struct(name: str, fields: Sequence[tuple[str, Any]]) -> Struct:
    """``#stablehlo.gather<...>``: empty lists and a zero index_vector_dim are omitted."""
    return Struct(name, {k: list(v) if isinstance(v, tuple) else v for k, v in fields
                         if v != () and v != 0})


def _gather(b: Builder, x: Value, indices: Value, dn: Any, slice_sizes: Sequence[int],
            indices_are_sorted: bool, out_type: TensorType) -> Value:
    dims = _struct("#stablehlo.gather", [
        ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map),
        ("index_vector_dim", len(indices.type.shape) - 1)])
    attrs = {"dimension_numbers": dims, "indices_are_sorted": bool(indices_are_sorted),
             "slice_sizes": DenseArray("i64", tuple(slice_sizes))}
    return b.op("stablehlo.gather", [x, indices], [out_type], attrs).result


@register(lax.gather_p)
def _gather_rule(ctx: RuleContext, x: Value, indices: Value, *, dimension_numbers: Any,
                 slice_sizes: tuple[int, ...], unique_indices: bool, indices_are_sorted: bool,
                 mode: GatherScatterMode, fill_value: Any) -> Value:
    """XLA's gather clamps windows into bounds; ``mode='fill'`` masks the windows that did
    not fit and fills them with ``fill_value``."""
    b, dn, out = ctx.b, dimension_numbers, ctx.type_out
    if mode != GatherScatterMode.FILL_OR_DROP:
        if out.size == 0:
            return b.full(0, out)
        return _gather(b, x, indices, dn, slice_sizes, indices_are_sorted, out)
    index_type = indices.type
    batch_rank = len(index_type.shape) - 1
    upper = np.array([x.type.shape[d] - slice_sizes[d] for d in dn.start_index_map], np.int32)
    upper = b.constant(upper.astype(index_type.dtype))
    non_negative = b.compare(indices, b.broadcast_to(b.constant(0, index_type.dtype),
                                                     index_type.shape), "GE")
    upper = b.broadcast(upper, (1,) * batch_rank + upper.type.shape, (batch_rank,))
    in_bounds = b.compare(indices, b.broadcast_to(upper, index_type.shape), "LE")
    mask = _reduce(b, [b.emit("stablehlo.and", non_negative, in_bounds)],
                   [b.constant(True)], "stablehlo.and", (batch_rank,))[0]
    gathered = _gather(b, x, indices, dn, slice_sizes, indices_are_sorted, out)
    batch_dims = [d for d in range(len(out.shape)) if d not in dn.offset_dims]
    if mask.type.shape != out.shape:
        mask = b.broadcast(mask, out.shape, batch_dims)
    return b.select(mask, gathered, b.full_if_needed(fill_value, out))


def _clamp_scatter_indices(b: Builder, x: Value, indices: Value, updates: Value,
                           dn: Any) -> Value:
    """``mode='clip'``: clamp each start index into [0, dim - window]."""
    window, sizes = [], iter(updates.type.shape[d] for d in dn.update_window_dims)
    for d in range(len(x.type.shape)):
        inserted = d in dn.inserted_window_dims or d in dn.operand_batching_dims
        window.append(1 if inserted else next(sizes))
    upper = np.array([x.type.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims],
                     np.int32)
    dtype = indices.type.dtype
    largest = min(np.iinfo(np.int32).max, np.iinfo(dtype).max)
    upper_c = b.constant(upper)
    limit = b.broadcast_to(b.constant(largest, np.int32), upper_c.type.shape)
    upper_v = b.emit("stablehlo.minimum", upper_c, limit)
    if dtype != np.int32:
        upper_v = b.convert(upper_v, dtype)
    upper_v = b.broadcast(upper_v, indices.type.shape, (len(indices.type.shape) - 1,))
    zero = b.broadcast_to(b.constant(0, dtype), indices.type.shape)
    return b.emit("stablehlo.clamp", zero, indices, upper_v)


def _scatter_rule(ctx: RuleContext, x: Value, indices: Value, updates: Value, *,
                  dimension_numbers: Any, indices_are_sorted: bool, unique_indices: bool,
                  mode: GatherScatterMode, update_jaxpr: Any, update_consts: tuple) -> Value:
    """XLA's scatter drops updates whose window does not fit; ``mode='clip'`` clamps the
    indices first. The region combines an old value with an update."""
    b, dn = ctx.b, dimension_numbers
    if mode == GatherScatterMode.CLIP:
        indices = _clamp_scatter_indices(b, x, indices, updates, dn)
    dims = _struct("#stablehlo.scatter", [
        ("update_window_dims", dn.update_window_dims),
        ("inserted_window_dims", dn.inserted_window_dims),
        ("input_batching_dims", dn.operand_batching_dims),
        ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
        ("index_vector_dim", len(indices.type.shape) - 1)])
    scalar = TensorType((), x.type.dtype)

    def combine(inner: Builder, args: list[Value]) -> list[Value]:
        if update_jaxpr is None:
            return [args[1]]
        consts = [inner.constant(np.asarray(c)) for c in update_consts]
        return lower_jaxpr_into(inner, update_jaxpr, consts, args)

    attrs = {"indices_are_sorted": bool(indices_are_sorted), "scatter_dimension_numbers": dims,
             "unique_indices": bool(unique_indices)}
    region = _region(b, [scalar, scalar], combine)
    return b.op("stablehlo.scatter", [x, indices, updates], [x.type], attrs, [region]).result


for _prim in (lax.scatter_p, lax.scatter_add_p, lax.scatter_sub_p, lax.scatter_mul_p,
              lax.scatter_min_p, lax.scatter_max_p):
    lowering_rules[_prim] = _scatter_rule


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------


def _reduce(b: Builder, inputs: Sequence[Value], inits: Sequence[Value], op_name: str | None,
            dims: Sequence[int], body: Callable | None = None) -> list[Value]:
    """``stablehlo.reduce`` over ``dims``; the body is one binary op or ``body``."""
    scalars = [TensorType((), x.type.dtype) for x in inputs]
    if body is None:
        body = lambda inner, args: [inner.emit(op_name, *args)]
    region = _region(b, scalars + scalars, body)
    out_types = [TensorType(tuple(n for d, n in enumerate(x.type.shape) if d not in dims),
                            x.type.dtype) for x in inputs]
    return b.op("stablehlo.reduce", [*inputs, *inits], out_types,
                {"dimensions": tuple(dims)}, [region]).results


def _lowest(dtype: np.dtype) -> Any:
    """The identity of max: -inf, the smallest integer, False."""
    if dtype == np.bool_:
        return False
    return dtypes.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _highest(dtype: np.dtype) -> Any:
    if dtype == np.bool_:
        return True
    return dtypes.iinfo(dtype).max if dtype.kind in "iu" else np.inf


_REDUCTIONS = {
    lax.reduce_sum_p: ("stablehlo.add", lambda dt: 0),
    lax.reduce_prod_p: ("stablehlo.multiply", lambda dt: 1),
    lax.reduce_max_p: ("stablehlo.maximum", _lowest),
    lax.reduce_min_p: ("stablehlo.minimum", _highest),
    lax.reduce_and_p: ("stablehlo.and", lambda dt: True if dt == np.bool_ else -1),
    lax.reduce_or_p: ("stablehlo.or", lambda dt: 0),
    lax.reduce_xor_p: ("stablehlo.xor", lambda dt: 0),
    lax.psum_p: ("stablehlo.add", lambda dt: 0),  # over positions, as vmap leaves it
}


def _reduction(op_name: str, identity: Callable[[np.dtype], Any]) -> Callable[..., Value]:
    def rule(ctx: RuleContext, x: Value, *, axes: tuple[int, ...], **params: Any) -> Value:
        init = ctx.b.constant(np.array(identity(x.type.dtype)).astype(x.type.dtype))
        return _reduce(ctx.b, [x], [init], op_name, axes)[0]
    return rule


for _prim, (_name, _identity) in _REDUCTIONS.items():
    lowering_rules[_prim] = _reduction(_name, _identity)


@register(lax.axis_index_p)
def _axis_index(ctx: RuleContext, *, axis_name: Any) -> Value:
    """vmap batches ``axis_index`` away before anything is compiled: a program that still
    has one names an axis no device mesh provides (JAX's NameError)."""
    raise NameError(f"unbound axis name: {axis_name}")


def _argminmax(direction: str, identity: Callable[[np.dtype], Any]) -> Callable[..., Value]:
    """A private function: reduce (values, iota) pairs, keeping the first extremum (and
    the first NaN)."""

    def rule(ctx: RuleContext, x: Value, *, axes: tuple[int, ...], index_dtype: np.dtype
             ) -> Value:
        (axis,) = axes

        def build(b: Builder, args: list[Value]) -> list[Value]:
            (operand,) = args
            iota = b.op("stablehlo.iota", [], [TensorType(operand.type.shape, index_dtype)],
                        {"dim": axis}).result
            inits = [b.constant(np.array(identity(operand.type.dtype)).astype(
                operand.type.dtype)), b.constant(0, index_dtype)]

            def body(r: Builder, a: list[Value]) -> list[Value]:
                x_val, x_idx, y_val, y_idx = a
                pick_x = r.emit("stablehlo.or", r.compare(x_val, y_val, direction),
                                r.compare(x_val, x_val, "NE"))
                tie = r.emit("stablehlo.and", r.compare(x_val, y_val, "EQ"),
                             r.compare(x_idx, y_idx, "LT"))
                pick_x_idx = r.emit("stablehlo.or", pick_x, tie)
                return [r.select(pick_x, x_val, y_val), r.select(pick_x_idx, x_idx, y_idx)]

            return [_reduce(b, [operand, iota], inits, None, axes, body)[1]]

        name = "argmax" if direction == "GT" else "argmin"
        key = (name, axes, index_dtype, x.type)
        return ctx.b.call(ctx.b.module.function(name, [x.type], build, key), [x])[0]

    return rule


lowering_rules[lax.argmax_p] = _argminmax("GT", _lowest)
lowering_rules[lax.argmin_p] = _argminmax("LT", _highest)


def _cumulative(name: str, op_name: str | None, identity: Callable[[np.dtype], Any],
                broadcast_init: bool = True, body: Callable | None = None
                ) -> Callable[..., Value]:
    """A private function holding a ``reduce_window`` whose window spans the whole axis,
    padded so that output ``i`` reduces elements ``0..i`` (or ``i..n-1`` if reversed).
    The window combines elements with ``op_name``, or with ``body(builder, [a, b])``."""
    if body is None:
        body = lambda r, a: [r.emit(op_name, *a)]

    def rule(ctx: RuleContext, x: Value, *, axis: int, reverse: bool) -> Value:
        def build(b: Builder, args: list[Value]) -> list[Value]:
            (operand,) = args
            shape, rank = operand.type.shape, len(operand.type.shape)
            n = shape[axis]
            if n == 0:
                return [operand]
            scalar = TensorType((), operand.type.dtype)
            init = b.constant(np.array(identity(scalar.dtype)).astype(scalar.dtype))
            if broadcast_init:
                init = b.broadcast(init, (), ())
            padding = np.zeros((rank, 2), np.int64)
            padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
            window = [1] * rank
            window[axis] = n
            ones = DenseArray("i64", (1,) * rank)
            attrs = {"base_dilations": ones,
                     "padding": Dense(padding, f"tensor<{rank}x2xi64>"),
                     "window_dilations": ones,
                     "window_dimensions": DenseArray("i64", tuple(window)),
                     "window_strides": ones}
            region = _region(b, [scalar, scalar], body)
            return b.op("stablehlo.reduce_window", [operand, init], [operand.type], attrs,
                        [region]).results

        key = (name, axis, reverse, x.type)
        return ctx.b.call(ctx.b.module.function(name, [x.type], build, key), [x])[0]

    return rule


lowering_rules[lax.cumsum_p] = _cumulative("cumsum", "stablehlo.add", lambda dt: 0)
lowering_rules[lax.cumprod_p] = _cumulative("cumprod", "stablehlo.multiply", lambda dt: 1,
                                            broadcast_init=False)
lowering_rules[lax.cummax_p] = _cumulative("cummax", "stablehlo.maximum", _lowest)
lowering_rules[lax.cummin_p] = _cumulative("cummin", "stablehlo.minimum", _highest)


def _logaddexp_body(r: Builder, args: list[Value]) -> list[Value]:
    """log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)); a + b where a - b is NaN."""
    a, b = args
    big = r.emit("stablehlo.maximum", a, b)
    delta = r.emit("stablehlo.subtract", a, b)
    is_nan = r.compare(delta, delta, "NE")
    nan_case = r.emit("stablehlo.add", a, b)
    small = r.emit("stablehlo.exponential", r.emit("stablehlo.negate",
                                                   r.emit("stablehlo.abs", delta)))
    total = r.emit("stablehlo.add", big, r.emit("stablehlo.log_plus_one", small))
    return [r.select(is_nan, nan_case, total)]


lowering_rules[lax.cumlogsumexp_p] = _cumulative("cumlogsumexp", None, _lowest,
                                                 broadcast_init=False, body=_logaddexp_body)


# ---------------------------------------------------------------------------------------
# dot_general, sorting
# ---------------------------------------------------------------------------------------


@register(lax.dot_general_p)
def _dot_general(ctx: RuleContext, lhs: Value, rhs: Value, *, dimension_numbers: Any,
                 precision: Any, preferred_element_type: Any, out_sharding: Any) -> Value:
    """Operands of different dtypes are first converted to the result's dtype."""
    b, out = ctx.b, ctx.type_out
    if lhs.type.dtype != rhs.type.dtype:
        lhs, rhs = b.convert(lhs, out.dtype), b.convert(rhs, out.dtype)
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    names = ("DEFAULT", "DEFAULT") if precision is None else tuple(str(p) for p in precision)
    attrs = {"contracting_dims": (tuple(lhs_contract), tuple(rhs_contract)),
             "precision": names}
    if lhs_batch:
        attrs = {"batching_dims": (tuple(lhs_batch), tuple(rhs_batch)), **attrs}
    return b.emit("stablehlo.dot_general", lhs, rhs, type=out, **attrs)


def _sort_keys(b: Builder, args: list[Value], num_keys: int) -> tuple[list[Value], list[Value]]:
    """The comparator's keys: floats with -0.0 made 0.0 and every NaN the same NaN (then
    compared in total order, so NaNs sort last); complex numbers as (real, imag)."""

    def canonical(x: Value) -> Value:
        zero = b.select(b.compare(x, b.constant(0, x.type.dtype), "EQ"),
                        b.constant(0, x.type.dtype), x)
        return b.select(b.compare(x, x, "NE"), b.constant(np.nan, x.type.dtype), zero)

    x_keys, y_keys = [], []
    for x, y in zip(args[:2 * num_keys:2], args[1:2 * num_keys:2]):
        dtype = x.type.dtype
        if dtype.kind == "c":
            part = TensorType((), dtype.type(0).real.dtype)
            for keys, v in ((x_keys, x), (y_keys, y)):
                keys.append(canonical(b.emit("stablehlo.real", v, type=part)))
                keys.append(canonical(b.emit("stablehlo.imag", v, type=part)))
        elif dtypes.issubdtype(dtype, np.floating):
            x_keys.append(canonical(x))
            y_keys.append(canonical(y))
        else:
            x_keys.append(x)
            y_keys.append(y)
    return x_keys, y_keys


def _sort_comparator(b: Builder, args: list[Value], num_keys: int) -> list[Value]:
    """Lexicographic ``x < y`` on the keys, built from the last key to the first."""
    x_keys, y_keys = _sort_keys(b, args, num_keys)
    less = None
    for xk, yk in zip(x_keys[::-1], y_keys[::-1]):
        kind = "TOTALORDER" if dtypes.issubdtype(xk.type.dtype, np.floating) else None
        lt = b.compare(xk, yk, "LT", kind)
        if less is None:
            less = lt
        else:
            less = b.emit("stablehlo.or", lt,
                          b.emit("stablehlo.and", b.compare(xk, yk, "EQ", kind), less))
    return [less]


@register(lax.sort_p)
def _sort(ctx: RuleContext, *operands: Value, dimension: int, is_stable: bool,
          num_keys: int) -> list[Value]:
    b = ctx.b
    scalars = [TensorType((), x.type.dtype) for x in operands for _ in range(2)]
    region = _region(b, scalars, lambda r, args: _sort_comparator(r, args, num_keys))
    attrs = {"dimension": Typed(dimension, "i64"), "is_stable": bool(is_stable)}
    return b.op("stablehlo.sort", operands, [x.type for x in operands], attrs,
                [region]).results


@register(lax.top_k_p)
def _top_k(ctx: RuleContext, x: Value, *, k: int, axis: int) -> list[Value]:
    """``chlo.top_k`` works on the last axis: transpose another axis there and back."""
    b, rank = ctx.b, len(x.type.shape)
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = _transpose(ctx, x, tuple(perm))
    shape = x.type.shape[:-1] + (k,)
    outs = b.op("chlo.top_k", [x], [TensorType(shape, x.type.dtype),
                                    TensorType(shape, np.dtype(np.int32))], {"k": k}).results
    if perm is not None:
        outs = [_transpose(ctx, o, tuple(perm)) for o in outs]
    return outs


# ---------------------------------------------------------------------------------------
# Control flow and nested jit
# ---------------------------------------------------------------------------------------


@register(lax.cond_p)
def _cond(ctx: RuleContext, index: Value, *args: Value, branches: tuple) -> list[Value]:
    """``stablehlo.case``: one region per branch, each computing from the operands."""
    b = ctx.b
    regions = [_region(b, [], lambda r, _, br=branch: lower_closed_jaxpr(r, br, args))
               for branch in branches]
    return b.op("stablehlo.case", [index], [tensor_type(a) for a in ctx.avals_out], {},
                regions).results


@register(lax.while_p)
def _while(ctx: RuleContext, *args: Value, cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr,
           cond_nconsts: int, body_nconsts: int) -> list[Value]:
    """``stablehlo.while`` carries everything, the constants of both jaxprs included.

    A batched predicate (from ``vmap``) holds one boolean per example: the loop runs while
    any is true, and an example whose predicate is false keeps its carry (a ``select``),
    as JAX lowers it."""
    b = ctx.b
    types = [a.type for a in args]

    def predicate(r: Builder, carry: list[Value]) -> Value:
        (pred,) = lower_closed_jaxpr(r, cond_jaxpr, carry[:cond_nconsts]
                                     + carry[cond_nconsts + body_nconsts:])
        return pred

    def cond(r: Builder, carry: list[Value]) -> list[Value]:
        pred = predicate(r, carry)
        if not pred.type.shape:
            return [pred]
        return _reduce(r, [pred], [r.constant(np.bool_(False))], "stablehlo.or",
                       range(len(pred.type.shape)))

    def body(r: Builder, carry: list[Value]) -> list[Value]:
        consts = carry[cond_nconsts:cond_nconsts + body_nconsts]
        old = carry[cond_nconsts + body_nconsts:]
        outs = lower_closed_jaxpr(r, body_jaxpr, consts + old)
        if cond_jaxpr.out_avals[0].shape:
            pred = predicate(r, carry)
            dims = range(len(pred.type.shape))
            outs = [r.select(r.broadcast(pred, new.type.shape, dims), new, x)
                    for new, x in zip(outs, old)]
        return carry[:cond_nconsts + body_nconsts] + outs

    op = b.op("stablehlo.while", args, types, {}, [_region(b, types, cond),
                                                  _region(b, types, body)])
    return op.results[cond_nconsts + body_nconsts:]


def _int() -> np.dtype:
    """The default integer: int32, or int64 with ``jax_enable_x64``."""
    return dtypes.canonicalize_dtype(np.int64)


def _dynamic_index_in_dim(b: Builder, x: TensorType) -> Func:
    """JAX's jitted helper ``x[i]`` along axis 0 (a private function per type)."""

    def build(f: Builder, args: list[Value]) -> list[Value]:
        operand, i = args
        zeros = [f.constant(0, _int()) for _ in x.shape[1:]]
        piece = f.emit("stablehlo.dynamic_slice", operand, i, *zeros,
                       type=TensorType((1, *x.shape[1:]), x.dtype), sizes=(1, *x.shape[1:]))
        return [f.emit("stablehlo.reshape", piece, type=TensorType(x.shape[1:], x.dtype))]

    index = TensorType((), _int())
    return b.module.function("dynamic_index_in_dim", [x, index], build,
                             key=("dynamic_index_in_dim", x))


def _dynamic_update_index_in_dim(b: Builder, ys: TensorType) -> Func:
    """JAX's jitted helper ``ys.at[i].set(y)`` along axis 0."""

    def build(f: Builder, args: list[Value]) -> list[Value]:
        buffer, y, i = args
        rank = len(ys.shape)
        y = f.broadcast(y, (1, *ys.shape[1:]), range(1, rank))
        zeros = [f.constant(0, _int()) for _ in ys.shape[1:]]
        return [f.emit("stablehlo.dynamic_update_slice", buffer, y, i, *zeros)]

    y_type = TensorType(ys.shape[1:], ys.dtype)
    index = TensorType((), _int())
    return b.module.function("dynamic_update_index_in_dim", [ys, y_type, index], build,
                             key=("dynamic_update_index_in_dim", ys))


@register(lax.scan_p)
def _scan(ctx: RuleContext, *args: Value, jaxpr: ClosedJaxpr, length: int, reverse: bool,
          unroll: int, num_consts: int, num_carry: int) -> list[Value]:
    """A ``while`` loop over a counter, as JAX lowers ``scan``: each iteration slices
    ``x = xs[i]``, calls the body, and writes ``y`` into ``ys[i]`` (``unroll`` is
    ignored: the loop is never unrolled)."""
    b = ctx.b
    consts, carry, xs = (list(args[:num_consts]), list(args[num_consts:num_consts + num_carry]),
                         list(args[num_consts + num_carry:]))
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [b.broadcast(b.constant(0, a.dtype), (length, *a.shape), ()) for a in y_avals]
    if length == 0:
        return carry + ys
    index_dtype = _int()
    loop_consts = xs + consts
    types = [v.type for v in loop_consts] + [TensorType((), index_dtype)] \
        + [v.type for v in carry + ys]
    n_fixed = len(loop_consts)

    def cond(r: Builder, state: list[Value]) -> list[Value]:
        return [r.compare(state[n_fixed], r.constant(length, index_dtype), "LT")]

    def body(r: Builder, state: list[Value]) -> list[Value]:
        i = state[n_fixed]
        loop_xs, loop_consts_ = state[:len(xs)], state[len(xs):n_fixed]
        loop_carry = state[n_fixed + 1:n_fixed + 1 + num_carry]
        loop_ys = state[n_fixed + 1 + num_carry:]
        index = i
        if reverse:
            index = r.emit("stablehlo.subtract", r.constant(length, index_dtype), i)
            index = r.emit("stablehlo.subtract", index, r.constant(1, index_dtype))
        x_slices = [r.call(_dynamic_index_in_dim(r, x.type), [x, index])[0] for x in loop_xs]
        body_func = r.module.jaxpr_function("closed_call", jaxpr)
        outs = r.call(body_func, loop_consts_ + loop_carry + x_slices)
        new_ys = [r.call(_dynamic_update_index_in_dim(r, buf.type), [buf, y, index])[0]
                  for buf, y in zip(loop_ys, outs[num_carry:])]
        next_i = r.emit("stablehlo.add", i, r.constant(1, index_dtype))
        return state[:n_fixed] + [next_i] + outs[:num_carry] + new_ys

    init = loop_consts + [b.constant(0, index_dtype)] + carry + ys
    op = b.op("stablehlo.while", init, types, {}, [_region(b, types, cond),
                                                  _region(b, types, body)])
    return op.results[n_fixed + 1:]


def _jit(ctx: RuleContext, *args: Value, jaxpr: ClosedJaxpr, name: str = "jit",
         **params: Any) -> list[Value]:
    """A nested ``jit`` becomes a private function (one per jaxpr) and a call."""
    func = ctx.b.module.jaxpr_function(name, jaxpr)
    return ctx.b.call(func, args)


# Python functions that compiled programs call back (``debug.print``), by index: the
# text can only name them, as JAX's text names its callbacks by index too.
host_callbacks: list[Callable[..., Any]] = []


def _debug_print(ctx: RuleContext, *args: Value, **params: Any) -> list[Value]:
    """A side-effecting custom call to a Python function that prints the values."""
    from minijax.debug import debug_print_p

    host_callbacks.append(lambda *values: debug_print_p.impl(*values, **params))
    attributes = {"has_side_effect": True,
                  "mhlo.backend_config": {"index": Typed(len(host_callbacks) - 1, "ui64")}}
    ctx.b.op("stablehlo.custom_call", args, [], {"call_target_name": "minijax_python_callback",
                                                 "attributes": attributes})
    return []


def _custom_call_jaxpr(ctx: RuleContext, *args: Value, call_jaxpr: Any, **params: Any
                       ) -> list[Value]:
    """A function with a custom derivative computes its ``call_jaxpr``, inline (the
    derivative rules were for the transformations, which are done)."""
    closed = call_jaxpr if isinstance(call_jaxpr, ClosedJaxpr) else ClosedJaxpr(call_jaxpr, [])
    return lower_closed_jaxpr(ctx.b, closed, args)


def _custom_lin(ctx: RuleContext, *args: Value, **params: Any) -> list[Value]:
    """``custom_lin`` stands for the tangent of a ``custom_vjp`` function, which has no JVP
    (it exists to be transposed): compiling one -- forward mode under ``jit`` -- fails
    with the error that evaluating it gives."""
    from minijax.custom_derivatives import custom_lin_p

    return custom_lin_p.eager_rule(*args, **params)


# Primitives defined outside ``lax`` are found by name: ``jit``, ``debug_print``, the
# custom-derivative calls, and ``add_any`` (reverse mode's sum of two cotangents).
_rules_by_name: dict[str, Callable[..., Any]] = {
    "jit": _jit, "pjit": _jit, "debug_print": _debug_print,
    "custom_jvp_call": _custom_call_jaxpr, "custom_vjp_call": _custom_call_jaxpr,
    "custom_lin": _custom_lin, "add_any": _nary("stablehlo.add")}


# ---------------------------------------------------------------------------------------
# Linear algebra: LAPACK custom calls, as JAX emits them for the CPU
# ---------------------------------------------------------------------------------------

_LAPACK_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _layouts(types: Sequence[TensorType], batch: int) -> list[Dense]:
    out = []
    for t in types:
        rank = len(t.shape)
        if rank - batch >= 2:
            order = [rank - 2, rank - 1, *range(rank - 3, -1, -1)]
        else:
            order = list(range(rank - 1, -1, -1))
        out.append(Dense(np.array(order, np.int64), f"tensor<{rank}xindex>"))
    return out


def _sharding_rule(ins: Sequence[TensorType], outs: Sequence[TensorType], batch: int) -> Opaque:
    """Shardy's rule: one factor letter per dimension, shared by the batch dimensions."""
    letters = iter("ijklmnopqrstuvwxyzabcdefgh")
    sizes: dict[str, int] = {}
    batch_letters = []

    def dims(t: TensorType) -> str:
        names = []
        for d, n in enumerate(t.shape):
            if d < batch and len(batch_letters) > d:
                names.append(batch_letters[d])
                continue
            letter = next(letters)
            if d < batch:
                batch_letters.append(letter)
            sizes[letter] = n
            names.append(letter)
        return "[" + ", ".join(names) + "]"

    lhs = ", ".join(dims(t) for t in ins)
    rhs = ", ".join(dims(t) for t in outs)
    factors = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return Opaque(f"#sdy.op_sharding_rule<({lhs})->({rhs}) {{{factors}}}, custom>")


def _lapack_call(b: Builder, target: str, operands: Sequence[Value],
                 out_types: Sequence[TensorType], batch: int, config: dict[str, Any],
                 alias: tuple[list[int], int]) -> list[Value]:
    """``stablehlo.custom_call @lapack_<x>_ffi`` with the attributes JAX gives it."""
    output_index, operand_index = alias
    attributes = {
        "backend_config": "",
        "mhlo.backend_config": {k: Typed(v, "ui8") for k, v in config.items()},
        "mhlo.frontend_attributes": {"num_batch_dims": str(batch)},
        "operand_layouts": _layouts([v.type for v in operands], batch),
        "output_operand_aliases": [Opaque(
            f"#stablehlo.output_operand_alias<output_tuple_indices = {output_index}, "
            f"operand_index = {operand_index}, operand_tuple_indices = []>")],
        "result_layouts": _layouts(out_types, batch),
        "sdy.sharding_rule": _sharding_rule([v.type for v in operands], out_types, batch),
    }
    return b.op("stablehlo.custom_call", operands, out_types,
                {"call_target_name": target, "attributes": attributes}).results


def _status_ok(b: Builder, info: Value, direction: str = "EQ") -> Value:
    """Where LAPACK succeeded: ``info == 0`` (``>= 0`` for getrf)."""
    return b.compare(info, b.full(0, info.type), direction)


def _nan_where_failed(b: Builder, ok: Value, result: Value) -> Value:
    """Results of a failed factorisation are NaN (as in JAX)."""
    batch = len(ok.type.shape)
    extra = len(result.type.shape) - batch
    ok = b.broadcast(ok, ok.type.shape + (1,) * extra, range(batch))
    nan = complex(np.nan, np.nan) if result.type.dtype.kind == "c" else np.nan
    nan = b.full(nan, result.type)
    ok = b.broadcast(ok, result.type.shape, range(len(result.type.shape)))
    return b.select(ok, result, nan)


def _batch_and_info(x: TensorType) -> tuple[int, TensorType]:
    batch = len(x.shape) - 2
    return batch, TensorType(x.shape[:batch], np.dtype(np.int32))


@register(lax_linalg.cholesky_p)
def _cholesky(ctx: RuleContext, x: Value) -> Value:
    b = ctx.b
    batch, info = _batch_and_info(x.type)
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}potrf_ffi"
    factor, status = _lapack_call(b, target, [x], [x.type, info], batch, {"uplo": ord("L")},
                                  ([0], 0))
    return _nan_where_failed(b, _status_ok(b, status), factor)


@register(lax_linalg.eigh_p)
def _eigh(ctx: RuleContext, x: Value, *, lower: bool, sort_eigenvalues: bool,
          subset_by_index: Any, algorithm: Any) -> list[Value]:
    b = ctx.b
    batch, info = _batch_and_info(x.type)
    values = tensor_type(ctx.avals_out[1])
    kind = "heevd" if x.type.dtype.kind == "c" else "syevd"
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}{kind}_ffi"
    vectors, w, status = _lapack_call(
        b, target, [x], [x.type, values, info], batch,
        {"mode": ord("V"), "uplo": ord("L" if lower else "U")}, ([0], 0))
    ok = _status_ok(b, status)
    return [_nan_where_failed(b, ok, result) for result in (vectors, w)]


@register(lax_linalg.triangular_solve_p)
def _triangular_solve(ctx: RuleContext, a: Value, rhs: Value, *, left_side: bool,
                      lower: bool, transpose_a: bool, conjugate_a: bool,
                      unit_diagonal: bool) -> Value:
    b = ctx.b
    batch = len(a.type.shape) - 2
    trans = "C" if transpose_a and conjugate_a else "T" if transpose_a else "N"
    config = {"diag": ord("U" if unit_diagonal else "N"), "side": ord("L" if left_side else "R"),
              "trans_x": ord(trans), "uplo": ord("L" if lower else "U")}
    target = f"lapack_{_LAPACK_PREFIX[a.type.dtype.name]}trsm_ffi"
    if conjugate_a and not transpose_a and a.type.dtype.kind == "c":  # real: nothing to do
        a = _conj(ctx, a)
    return _lapack_call(b, target, [a, rhs], [rhs.type], batch, config, ([], 1))[0]


@register(lax_linalg.qr_p)
def _qr(ctx: RuleContext, x: Value, *, pivoting: bool, full_matrices: bool, use_magma: Any
        ) -> list[Value]:
    """geqrf (R above the diagonal, Householder vectors below), then orgqr builds Q."""
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    prefix = _LAPACK_PREFIX[x.type.dtype.name]
    taus = TensorType((*batch_shape, k), x.type.dtype)
    packed, tau = _lapack_call(b, f"lapack_{prefix}geqrf_ffi", [x], [x.type, taus], batch, {},
                               ([0], 0))
    q_in = packed
    if m < n:
        q_in = _slice(b, packed, (0,) * (batch + 2), (*batch_shape, m, m))
    elif full_matrices:
        q_in = b.emit("stablehlo.pad", packed, b.constant(0, x.type.dtype),
                      type=TensorType((*batch_shape, m, m), x.type.dtype),
                      low=(0,) * (batch + 2), high=(0,) * batch + (0, m - n),
                      interior=(0,) * (batch + 2))
    q = _lapack_call(b, f"lapack_{prefix}orgqr_ffi", [q_in, tau], [q_in.type], batch, {},
                     ([], 0))[0]
    r = packed
    if not full_matrices and m > n:
        r = _slice(b, packed, (0,) * (batch + 2), (*batch_shape, k, n))
    matrix = TensorType(r.type.shape[batch:], _int())
    rows = b.op("stablehlo.iota", [], [matrix], {"dim": 0}).result
    rows = b.emit("stablehlo.add", rows, b.full(-1, rows.type))
    cols = b.op("stablehlo.iota", [], [matrix], {"dim": 1}).result
    below = b.compare(rows, cols, "GE")  # strictly below the diagonal: zero
    if batch:
        below = b.broadcast(below, r.type.shape, (batch, batch + 1))
    r = b.select(below, b.full(0, r.type), r)
    return [q, r]


@register(lax_linalg.svd_p)
def _svd(ctx: RuleContext, x: Value, *, full_matrices: bool, compute_uv: bool,
         subset_by_index: Any, algorithm: Any) -> list[Value]:
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    info = TensorType(tuple(batch_shape), np.dtype(np.int32))
    s_type = TensorType((*batch_shape, k), np.dtype(x.type.dtype.type(0).real.dtype))
    if compute_uv:
        u_cols, vt_rows = (m, n) if full_matrices else (k, k)
        u_type = TensorType((*batch_shape, m, u_cols), x.type.dtype)
        vt_type = TensorType((*batch_shape, vt_rows, n), x.type.dtype)
        mode = ord("A" if full_matrices else "S")
    else:
        u_type = TensorType((*batch_shape, m, m), x.type.dtype)
        vt_type = TensorType((*batch_shape, n, n), x.type.dtype)
        mode = ord("N")
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}gesdd_ffi"
    _, s, u, vt, status = _lapack_call(b, target, [x], [x.type, s_type, u_type, vt_type, info],
                                       batch, {"mode": mode}, ([0], 0))
    ok = _status_ok(b, status)
    return [_nan_where_failed(b, ok, result) for result in ([s, u, vt] if compute_uv else [s])]


@register(lax_linalg.lu_p)
def _lu(ctx: RuleContext, x: Value) -> list[Value]:
    """getrf gives the factors and 1-based pivots; the permutation applies the row swaps
    one by one in a ``while`` loop (a simpler loop than JAX's, with the same result)."""
    b = ctx.b
    *batch_shape, m, n = x.type.shape
    batch, k = len(batch_shape), min(m, n)
    i32 = np.dtype(np.int32)
    pivots_t = TensorType((*batch_shape, k), i32)
    info = TensorType(tuple(batch_shape), i32)
    target = f"lapack_{_LAPACK_PREFIX[x.type.dtype.name]}getrf_ffi"
    factors, pivots, status = _lapack_call(b, target, [x], [x.type, pivots_t, info], batch, {},
                                           ([0], 0))
    pivots = b.emit("stablehlo.subtract", pivots, b.full(1, pivots_t))
    lu = _nan_where_failed(b, _status_ok(b, status, "GE"), factors)
    perm_t = TensorType((*batch_shape, m), i32)
    perm = b.op("stablehlo.iota", [], [perm_t], {"dim": batch}).result
    types = [pivots_t, TensorType((), i32), perm_t]

    def cond(r: Builder, state: list[Value]) -> list[Value]:
        return [r.compare(state[1], r.constant(k, i32), "LT")]

    def body(r: Builder, state: list[Value]) -> list[Value]:
        piv, i, p = state
        zeros = [r.constant(0, i32) for _ in batch_shape]
        col = TensorType((*batch_shape, 1), i32)
        j = r.emit("stablehlo.dynamic_slice", piv, *zeros, i, type=col,
                   sizes=(*batch_shape, 1))
        p_i = r.emit("stablehlo.dynamic_slice", p, *zeros, i, type=col, sizes=(*batch_shape, 1))
        iota = r.op("stablehlo.iota", [], [perm_t], {"dim": batch}).result
        j_b = r.broadcast(j, perm_t.shape, range(batch + 1))
        i_b = r.broadcast(i, perm_t.shape, ())
        p_j_mask = r.compare(iota, j_b, "EQ")
        p_j = _reduce(r, [r.select(p_j_mask, p, r.full(0, perm_t))], [r.constant(0, i32)],
                      "stablehlo.add", (batch,))[0]
        p_j = r.emit("stablehlo.reshape", p_j, type=col)
        swapped = r.select(p_j_mask, r.broadcast(p_i, perm_t.shape, range(batch + 1)), p)
        swapped = r.select(r.compare(iota, i_b, "EQ"),
                           r.broadcast(p_j, perm_t.shape, range(batch + 1)), swapped)
        return [piv, r.emit("stablehlo.add", i, r.constant(1, i32)), swapped]

    if k == 0:
        return [lu, pivots, perm]
    op = b.op("stablehlo.while", [pivots, b.constant(0, i32), perm], types, {},
              [_region(b, types, cond), _region(b, types, body)])
    return [lu, pivots, op.results[2]]


# ---------------------------------------------------------------------------------------
# Cost analysis
# ---------------------------------------------------------------------------------------

_TRANSCENDENTAL = {
    "stablehlo.exponential", "stablehlo.exponential_minus_one", "stablehlo.log",
    "stablehlo.log_plus_one", "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.cbrt",
    "stablehlo.sine", "stablehlo.cosine", "stablehlo.tan", "stablehlo.tanh",
    "stablehlo.power", "stablehlo.atan2", "stablehlo.logistic", "chlo.asin", "chlo.acos",
    "chlo.atan", "chlo.sinh", "chlo.cosh", "chlo.asinh", "chlo.acosh", "chlo.atanh",
}
_NO_FLOPS = {
    "stablehlo.constant", "stablehlo.broadcast_in_dim", "stablehlo.reshape",
    "stablehlo.transpose", "stablehlo.slice", "stablehlo.dynamic_slice",
    "stablehlo.dynamic_update_slice", "stablehlo.concatenate", "stablehlo.pad",
    "stablehlo.reverse", "stablehlo.iota", "stablehlo.gather", "stablehlo.scatter",
    "stablehlo.bitcast_convert", "func.call", "func.return", "stablehlo.return",
    "stablehlo.while", "stablehlo.case", "stablehlo.custom_call", "stablehlo.sort",
    "stablehlo.reduce", "stablehlo.reduce_window", "chlo.top_k", "stablehlo.real",
    "stablehlo.imag",
}


def _bytes(t: TensorType) -> int:
    return t.size * t.dtype.itemsize


def _op_cost(op: Op) -> tuple[int, int, int]:
    """(flops, transcendentals, bytes accessed) of one op, not counting its regions."""
    out = op.results[0].type if op.results else None
    if op.name == "stablehlo.constant" and out.shape and is_splat(op.attrs["value"]):
        return 0, 0, out.dtype.itemsize + _bytes(out)  # a scalar, broadcast
    if op.name in ("stablehlo.constant", "func.return", "stablehlo.return", "func.call",
                   "stablehlo.while", "stablehlo.case", "stablehlo.transpose"):
        return 0, 0, 0
    if op.name == "stablehlo.convert" and op.operands[0].type == out:
        return 0, 0, 0  # XLA drops converts that change nothing
    moved = sum(_bytes(v.type) for v in op.operands) + sum(_bytes(r.type) for r in op.results)
    if op.name in ("stablehlo.slice", "stablehlo.dynamic_slice"):
        moved = 2 * _bytes(out)
    if op.name == "stablehlo.iota" and len(out.shape) > 1:  # a 1-D iota, broadcast
        line = out.shape[op.attrs["dim"]] * out.dtype.itemsize
        moved = 2 * line + _bytes(out)
    if op.name == "stablehlo.dot_general":
        lhs = op.operands[0].type
        contracted = int(np.prod([lhs.shape[d] for d in op.attrs["contracting_dims"][0]],
                                 dtype=np.int64))
        return 2 * out.size * contracted, 0, moved
    if op.name == "stablehlo.reduce":
        inner = len(op.regions[0].ops) - 1
        reduced = op.operands[0].type.size - out.size
        return reduced * inner, 0, moved
    if op.name == "stablehlo.reduce_window":
        window = int(np.prod(op.attrs["window_dimensions"].values, dtype=np.int64))
        return out.size * (window - 1) * (len(op.regions[0].ops) - 1), 0, moved
    if op.name == "stablehlo.sort":
        n = out.shape[op.attrs["dimension"].value] if out.shape else 1
        return out.size * max(int(np.ceil(np.log2(n))), 0) if n > 1 else 0, 0, moved
    if op.name in _TRANSCENDENTAL:
        return 0, out.size, moved
    if op.name in _NO_FLOPS:
        return 0, 0, moved
    return out.size, 0, moved


def _block_cost(block: Block) -> tuple[int, int, int]:
    """(flops, transcendentals, bytes) of a block: a ``while`` adds its condition and
    body once, a ``case`` its most expensive branch; the scalar bodies of reductions,
    sorts and scatters are part of their op's own cost."""
    total = (0, 0, 0)
    for op in block.ops:
        cost = _op_cost(op)
        if op.name == "stablehlo.while":
            for region in op.regions:
                cost = tuple(map(sum, zip(cost, _block_cost(region))))
        elif op.name == "stablehlo.case":
            cost = max((_block_cost(region) for region in op.regions), default=(0, 0, 0))
        total = tuple(map(sum, zip(total, cost)))
    return total




def _merge_constant_broadcasts(block: Block) -> None:
    """As XLA does when it reads StableHLO: a broadcast scalar constant becomes one
    (splat) constant, and equal constants are kept once."""
    seen: dict[Any, Value] = {}
    mapping: dict[Value, Value] = {}
    kept = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        source = op.operands[0].op if op.operands else None
        if (op.name == "stablehlo.broadcast_in_dim" and source is not None
                and source.name == "stablehlo.constant" and not source.result.type.shape):
            value = np.broadcast_to(source.attrs["value"], op.result.type.shape)
            op.name, op.operands, op.attrs = "stablehlo.constant", [], {"value": value}
        if op.name == "stablehlo.constant":
            value = op.attrs["value"]
            key = (value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
            if key in seen:
                mapping[op.result] = seen[key]
                continue
            seen[key] = op.result
        kept.append(op)
    block.ops = kept


def module_cost(module: Module) -> dict[str, float]:
    """Sum :func:`_op_cost` over every op of every function."""
    flops = transcendentals = moved = 0
    for func in module.funcs:
        _merge_constant_broadcasts(func.body)
        f, t, m = _block_cost(func.body)
        flops, transcendentals, moved = flops + f, transcendentals + t, moved + m
        if func.visibility == "public" and len(func.result_types) > 1:
            moved += 8 * len(func.result_types)  # the tuple of results: one pointer each
    cost = {"flops": flops, "transcendentals": transcendentals, "bytes accessed": moved}
    return {k: float(v) for k, v in cost.items() if v}


def cost_analysis(closed_jaxpr: ClosedJaxpr) -> dict[str, float]:
    """Estimated cost of running ``closed_jaxpr``, counted on its lowered StableHLO the
    way XLA's cost analysis counts unoptimised HLO:

    * ``flops``: one per output element of each arithmetic op (comparisons, selects and
      converts included); ``2 * M * N * K`` for a product; ``(in - out) * ops in the
      body`` for a reduction. Data movement (broadcasts, slices, reshapes...) is free.
    * ``transcendentals``: one per element of exp, log, sin, tanh, sqrt, pow... (only
      reported when there are some).
    * ``bytes accessed``: the bytes of every op's operands and results (constants and
      transposes cost nothing; a slice reads only what it returns).

    Equal constants are counted once (XLA merges them; a broadcast constant costs its
    bytes), several results add a tuple of pointers (8 bytes each); a loop body counts
    once whatever the number of iterations, a ``case`` its costliest branch; a window
    reduction ``window - 1`` ops per output, a sort ``log2(n)`` per element. Zero
    counts are left out. XLA rewrites some ops as it reads the text (it splits some
    broadcasts, folds constant index arithmetic), so its numbers can differ a little.
    """
    module, _ = lower_to_module(closed_jaxpr, module_name="cost")
    return module_cost(module)
