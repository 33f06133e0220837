"""Lowering: a jaxpr becomes a StableHLO module, printed exactly as JAX prints it.

``lower_jaxpr`` walks the equations of a (closed) jaxpr and asks the *lowering rule*
of each primitive to emit StableHLO ops into the function being built. The rules are
registered in one table, :data:`lowering_rules`, keyed by primitive, by the modules
that define the primitives (this one defines none): ``rule(ctx, *operands,
**params)`` receives the operands as :class:`~minijax.compiler.stablehlo_ir.Value` s and
returns the results. ``ctx.b`` is a :class:`Builder` that appends ops; ``ctx.avals_in``
and ``ctx.avals_out`` are the equation's abstract values.

Each rule makes the same op choices as JAX's, so the text matches
``jax.jit(f).lower(*args).as_text()`` op for op: a Python scalar in an equation becomes
a ``stablehlo.constant`` followed by a ``broadcast_in_dim``; ``argmax`` and ``cumsum``
become private functions; ``scan`` becomes a ``while`` loop that calls its body.

Before lowering, dead code is removed from the jaxpr by ``partial_eval.dce_jaxpr``, as
JAX does (so unused results of a ``cond``, a ``scan`` or a nested ``jit`` disappear, and
so do unused arguments).

``cost_analysis`` counts flops and bytes on the lowered module (see its docstring).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax import dtypes
from minijax.compiler.stablehlo_ir import (
    Block,
    Func,
    Module,
    Op,
    TensorType,
    Value,
    print_module,
)
from minijax.compiler.stablehlo_ops import DATA, NONE, OPS, TRANSCENDENTAL
from minijax.core import Primitive, ShapedArray, physical_aval
from minijax.interpreters.partial_eval import dce_jaxpr
from minijax.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from minijax.mlir_numbers import is_splat
from minijax.tracing import trace_to_jaxpr

# ---------------------------------------------------------------------------------------
# Building ops
# ---------------------------------------------------------------------------------------


def tensor_type(aval: ShapedArray) -> TensorType:
    """The StableHLO type of ``aval``'s stored value (a key: its uint32 words)."""
    aval = physical_aval(aval)
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


# Rules for equations that carry extended dtypes (typed keys), tried before
# ``lowering_rules``: a key's lowering works on its stored words (see ``minijax.prng``).
extended_lowering_rules: dict[Primitive, Callable[..., Any]] = {}


def lower_fun(fun: Callable[..., Any], multiple_results: bool = False
              ) -> Callable[..., Any]:
    """A lowering rule made of ``fun``, ``lax`` code on the operands' stored values:
    ``fun`` is traced to a jaxpr and that jaxpr is lowered in place of the equation."""
    def rule(ctx: RuleContext, *operands: Value, **params: Any) -> Any:
        def flat(*xs: Any) -> list[Any]:
            outs = fun(*xs, **params)
            return list(outs) if multiple_results else [outs]
        closed = trace_to_jaxpr(flat, [physical_aval(a) for a in ctx.avals_in])
        outs = lower_closed_jaxpr(ctx.b, closed, operands)
        return outs if multiple_results else outs[0]
    return rule


def _rule_for(eqn: Any) -> Callable[..., Any] | None:
    rule = extended_lowering_rules.get(eqn.primitive)
    if rule is not None and any(dtypes.is_extended(v.aval.dtype)
                                for v in (*eqn.invars, *eqn.outvars)):
        return rule
    return lowering_rules.get(eqn.primitive)


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
        if type(atom) is Literal:  # a float0 one has no value: JAX stores it as false
            value = False if atom.aval.dtype == dtypes.float0 else np.asarray(atom.value)
            return b.constant(value, physical_aval(atom.aval).dtype)
        return env[atom]

    for eqn in jaxpr.eqns:
        rule = _rule_for(eqn)
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
    closed, used_inputs = dce_jaxpr(closed, True, instantiate=keep_unused)
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
    return dce_jaxpr(closed_jaxpr, True)[1]


# Python functions that compiled programs call back (``debug.print``), by index: the
# text can only name them, as JAX's text names its callbacks by index too.
host_callbacks: list[Callable[..., Any]] = []


# ---------------------------------------------------------------------------------------
# Cost analysis
# ---------------------------------------------------------------------------------------


def _bytes(t: TensorType) -> int:
    return t.size * t.dtype.itemsize


def _op_cost(op: Op) -> tuple[int, int, int]:
    """(flops, transcendentals, bytes accessed) of one op, not counting its regions."""
    out = op.results[0].type if op.results else None
    if op.name == "stablehlo.constant" and out.shape and is_splat(op.attrs["value"]):
        return 0, 0, out.dtype.itemsize + _bytes(out)  # a scalar, broadcast
    cost = OPS[op.name].cost
    if cost == NONE:
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
    if cost == TRANSCENDENTAL:
        return 0, out.size, moved
    if cost == DATA:
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
