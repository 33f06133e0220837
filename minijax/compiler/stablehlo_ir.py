"""StableHLO in memory, and printed: the small graph IR that lowering builds.

``lowering.py`` builds a :class:`Module` and prints it exactly as JAX prints
``jax.jit(f).lower(...).as_text()``; the backends receive only that *text*, and read it
back into the same IR with ``stablehlo.parse_module`` (the reader is the backends'
business, so it lives with them). One IR, one printer, one parser, so
``print_module(parse_module(text)) == text`` for everything minijax emits (a test checks
that on JAX's own output too).

The IR is MLIR's structure, cut down to what StableHLO programs need:

* a :class:`Module` holds :class:`Func` s (``main`` and private helpers, called by name);
* a :class:`Block` holds an argument list and a list of :class:`Op` s, the last of which
  returns; nested blocks (``regions``) hold the branches of ``case``, the ``cond`` and
  ``do`` of ``while`` and the bodies of ``reduce``, ``sort`` and ``scatter``;
* an :class:`Op` has a name (``stablehlo.add``), operands and results (:class:`Value` s,
  each with a :class:`TensorType`), attributes (plain Python values) and regions.

Which op names exist, and how the text spells each, is a column of the op table
(``stablehlo_ops.OPS``); the printer reads it.

Values have no names of their own. The printer names them the way MLIR does: results
count ``%0, %1, ...``, constants are ``%cst`` (floats) or ``%c`` (integers), clashes get
``_0, _1, ...`` suffixes, and a nested region continues the counters of the block
around it (so sibling regions reuse names; see :func:`value_names`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from minijax.compiler.stablehlo_ops import OPS
from minijax.mlir_numbers import format_dense

# ---------------------------------------------------------------------------------------
# Types: tensor<2x3xf32>
# ---------------------------------------------------------------------------------------

_ELEMENT_NAMES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
}
ELEMENT_DTYPES = {name: np.dtype(ml_dtypes.bfloat16 if dt == "bfloat16" else dt)
                   for dt, name in _ELEMENT_NAMES.items()}


_NAMES_BY_DTYPE = {dt: name for name, dt in ELEMENT_DTYPES.items()}


def element_name(dtype: np.dtype) -> str:
    """``float32`` -> ``f32``, ``bool`` -> ``i1``: MLIR's spelling of an element type."""
    return _NAMES_BY_DTYPE[dtype]


class TensorType(NamedTuple):
    """The type of a value: a shape and a dtype (``tensor<2x3xf32>``)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return _type_text(self)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@functools.lru_cache(maxsize=4096)
def _type_text(t: TensorType) -> str:
    dims = "".join(f"{d}x" for d in t.shape)
    return f"tensor<{dims}{element_name(t.dtype)}>"


# ---------------------------------------------------------------------------------------
# The IR
# ---------------------------------------------------------------------------------------


class Value:
    """An SSA value: the result of an op (``op``, ``index``) or a block argument (op None)."""

    __slots__ = ("type", "op", "index")

    def __init__(self, type: TensorType, op: Op | None = None, index: int = 0) -> None:
        self.type = type
        self.op = op
        self.index = index

    def __repr__(self) -> str:
        where = f"{self.op.name}#{self.index}" if self.op else "arg"
        return f"Value({self.type}, {where})"


class Op:
    """One operation: ``results = name(operands) {attrs} (regions)``."""

    __slots__ = ("name", "operands", "results", "attrs", "regions")

    def __init__(self, name: str, operands: Sequence[Value], result_types: Sequence[TensorType],
                 attrs: dict[str, Any] | None = None, regions: Sequence[Block] = ()) -> None:
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = attrs or {}
        self.regions = list(regions)

    @property
    def result(self) -> Value:
        (result,) = self.results
        return result

    def __repr__(self) -> str:
        return f"Op({self.name}, {len(self.operands)} operands, {len(self.results)} results)"


class Block:
    """Arguments and a list of ops; the last op returns (``return`` / ``stablehlo.return``)."""

    __slots__ = ("args", "ops")

    def __init__(self, arg_types: Sequence[TensorType] = (), ops: Sequence[Op] = ()) -> None:
        self.args = [Value(t) for t in arg_types]
        self.ops = list(ops)

    @property
    def terminator(self) -> Op:
        return self.ops[-1]


class Func:
    """``func.func public @main(%arg0: ...) -> (...) { ... }``."""

    __slots__ = ("name", "visibility", "body", "result_types", "result_infos")

    def __init__(self, name: str, arg_types: Sequence[TensorType],
                 result_types: Sequence[TensorType], visibility: str = "private",
                 result_infos: Sequence[str | None] | None = None) -> None:
        self.name = name
        self.visibility = visibility
        self.body = Block(arg_types)
        self.result_types = list(result_types)
        self.result_infos = list(result_infos or [None] * len(result_types))

    @property
    def arg_types(self) -> list[TensorType]:
        return [a.type for a in self.body.args]


class Module:
    """``module @jit_f attributes {...} { func.func ... }``; ``funcs[0]`` is usually main."""

    __slots__ = ("name", "funcs")
    ATTRIBUTES = "{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}"

    def __init__(self, name: str, funcs: Sequence[Func] = ()) -> None:
        self.name = name
        self.funcs = list(funcs)

    def func(self, name: str) -> Func:
        return next(f for f in self.funcs if f.name == name)

    def __str__(self) -> str:
        return print_module(self)


# ---------------------------------------------------------------------------------------
# Attributes that only generic-form ops carry (gather, scatter, sort, custom_call...)
# ---------------------------------------------------------------------------------------


class Typed(NamedTuple):
    """A number with its MLIR type: ``0 : i64``, ``76 : ui8``."""

    value: int | float
    type: str


class Symbol(NamedTuple):
    """A reference to a function by name: ``@lapack_spotrf_ffi``."""

    name: str


class DenseArray(NamedTuple):
    """``array<i64: 1, 2>``."""

    element: str
    values: tuple[int, ...]


class Struct(NamedTuple):
    """A dialect attribute with named fields: ``#stablehlo.gather<offset_dims = [1], ...>``."""

    name: str
    fields: dict[str, Any]

    def get(self, key: str, default: Any = ()) -> Any:
        return self.fields.get(key, default)


class Dense(NamedTuple):
    """``dense<[0, 1]> : tensor<2xindex>`` in an attribute dictionary (the type as text,
    since ``index`` is no NumPy dtype; the values as an int64 array)."""

    values: np.ndarray
    type: str


class Opaque(NamedTuple):
    """An attribute kept as text: ``#sdy.op_sharding_rule<...>``."""

    text: str


# ---------------------------------------------------------------------------------------
# Names: MLIR's algorithm for %0, %cst_1, %arg2, %iterArg_3
# ---------------------------------------------------------------------------------------


class _Counters:
    __slots__ = ("value", "arg", "conflict")

    def __init__(self) -> None:
        self.value = self.arg = self.conflict = 0

    def copy(self) -> _Counters:
        other = _Counters()
        other.value, other.arg, other.conflict = self.value, self.arg, self.conflict
        return other


def _asm_result_names(op: Op) -> list[str] | None:
    """Ops that suggest names for their results (MLIR's ``getAsmResultNames``)."""
    if op.name == "stablehlo.constant":
        return ["c" if op.result.type.dtype.kind in "biu" else "cst"]
    if op.name == "chlo.top_k":
        return ["values", "indices"]
    return None


def value_names(func: Func) -> dict[Value, str]:
    """The name every value of ``func`` prints with (without the ``%``).

    As in MLIR: a block is numbered completely before the regions nested in it, each
    nested region starts from the counters where its parent block ended and may not
    reuse its ancestors' names, but sibling regions are numbered independently.
    """
    names: dict[Value, str] = {}

    def unique(base: str, used: set[str], counters: _Counters) -> str:
        name = base
        while name in used:
            name = f"{base}_{counters.conflict}"
            counters.conflict += 1
        used.add(name)
        return name

    def number(block: Block, counters: _Counters, used: set[str], arg_base: str | None) -> None:
        for arg in block.args:
            if arg_base is not None:
                names[arg] = unique(arg_base, used, counters)
            else:
                names[arg] = unique(f"arg{counters.arg}", used, counters)
                counters.arg += 1
        for op in block.ops:
            suggested = _asm_result_names(op)
            if suggested:
                for result, base in zip(op.results, suggested):
                    names[result] = unique(base, used, counters)
            elif len(op.results) == 1:
                names[op.result] = str(counters.value)
                counters.value += 1
            elif op.results:
                for result in op.results:
                    names[result] = f"{counters.value}#{result.index}"
                counters.value += 1
        for op in block.ops:
            base = "iterArg" if op.name == "stablehlo.while" else None
            for region in op.regions:
                number(region, counters.copy(), set(used), base)

    number(func.body, _Counters(), set(), None)
    return names


# ---------------------------------------------------------------------------------------
# The printer
# ---------------------------------------------------------------------------------------

_BARE_SYMBOL = re.compile(r"[A-Za-z_][\w$.]*\Z")


def format_symbol(name: str) -> str:
    """``@main``, or ``@"<lambda>"`` when the name is not a bare identifier."""
    if _BARE_SYMBOL.match(name):
        return "@" + name
    escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else
                      "".join(f"\\{b:02X}" for b in c.encode()) for c in name)
    return f'@"{escaped}"'


def format_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_attr(value: Any) -> str:
    """Attributes of generic-form ops, as MLIR prints them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Typed):
        return f"{value.value} : {value.type}"
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, Symbol):
        return format_symbol(value.name)
    if isinstance(value, DenseArray):
        return f"array<{value.element}" + (
            ": " + ", ".join(map(str, value.values)) if value.values else "") + ">"
    if isinstance(value, Struct):
        return f"{value.name}<" + ", ".join(
            f"{k} = {format_attr(v)}" for k, v in value.fields.items()) + ">"
    if isinstance(value, Dense):
        return f"{format_dense(value.values)} : {value.type}"
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {format_attr(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(format_attr, value)) + "]"
    return str(value)


def _ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def format_keyword(value: Any) -> str:
    """Keyword attributes of pretty-printed ops: ``[1, 2]``, ``[0] x [1]``, ``[A, B]``."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, tuple) for v in value):
        return f"{_ints(value[0])} x {_ints(value[1])}"
    if isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(value) + "]"
    if isinstance(value, tuple):
        return _ints(value)
    return str(value)


def functional_type(ins: Sequence[TensorType], outs: Sequence[TensorType]) -> str:
    """``(A, B) -> R`` (several results in parentheses)."""
    results = str(outs[0]) if len(outs) == 1 else "(" + ", ".join(map(str, outs)) + ")"
    return "(" + ", ".join(map(str, ins)) + ") -> " + results


def compact_reduce_body(op: Op) -> str | None:
    """The op name if a ``reduce`` body is one commutative binary op of its two block
    arguments: StableHLO then prints ``applies stablehlo.add`` instead of the body."""
    body = op.regions[0]
    if len(op.operands) != 2 or len(body.ops) != 2:
        return None
    inner, ret = body.ops
    scalar = TensorType((), op.operands[0].type.dtype)
    if (OPS[inner.name].commutative and inner.operands == body.args and not inner.attrs
            and inner.operands[0].type == scalar and ret.operands == inner.results):
        return inner.name
    return None


class Printer:
    """Prints ops with the names of :func:`value_names`, indenting nested regions."""

    def __init__(self, names: dict[Value, str]) -> None:
        self.names = names
        self.lines: list[str] = []

    def ref(self, value: Value) -> str:
        return "%" + self.names[value]

    def refs(self, values: Sequence[Value]) -> str:
        return ", ".join(map(self.ref, values))

    def block(self, block: Block, indent: int, in_func: bool) -> None:
        for op in block.ops:
            self.op(op, indent, in_func)

    def op(self, op: Op, indent: int, in_func: bool = False) -> None:
        pad = " " * indent
        lhs = self._results(op)
        text = self._body(op, indent, in_func)
        self.lines.append(f"{pad}{lhs}{text}")

    def _results(self, op: Op) -> str:
        if not op.results:
            return ""
        if _asm_result_names(op) or len(op.results) == 1:
            return self.refs(op.results) + " = "
        return f"%{self.names[op.results[0]].split('#')[0]}:{len(op.results)} = "

    def _body(self, op: Op, indent: int, in_func: bool) -> str:
        name = op.name
        if name in ("func.return", "stablehlo.return"):
            shown = "return" if in_func else name
            if not op.operands:
                return shown
            types = ", ".join(str(v.type) for v in op.operands)
            return f"{shown} {self.refs(op.operands)} : {types}"
        if name == "func.call":
            shown = "call" if in_func else name
            sig = functional_type([v.type for v in op.operands], [r.type for r in op.results])
            return f"{shown} {format_symbol(op.attrs['callee'])}({self.refs(op.operands)}) : {sig}"
        syntax = OPS[name].syntax
        if syntax == "generic":
            return self._generic(op, indent)
        if syntax == "custom":
            return getattr(self, "_" + name.replace(".", "_"))(op, indent)
        return self._pretty(op)

    def _pretty(self, op: Op) -> str:
        info = OPS[op.name]
        parts = [self.ref(v) for v in op.operands]
        parts += [f"{k} = {format_keyword(op.attrs[k])}" for k in info.keywords if k in op.attrs]
        ins, outs = [v.type for v in op.operands], [r.type for r in op.results]
        if info.syntax == "same" and all(t == outs[0] for t in ins + outs):
            sig = str(outs[0])
        elif info.syntax == "result":
            sig = str(outs[0])
        elif info.syntax == "chlo":
            sig = ", ".join(map(str, ins)) + " -> " + str(outs[0])
        else:
            sig = functional_type(ins, outs)
        args = " " + ", ".join(parts) if parts else ""
        return f"{op.name}{args} : {sig}"

    def _stablehlo_constant(self, op: Op, indent: int) -> str:
        return f"stablehlo.constant {format_dense(op.attrs['value'])} : {op.result.type}"

    def _stablehlo_compare(self, op: Op, indent: int) -> str:
        a, b = op.operands
        sig = functional_type([a.type, b.type], [op.result.type])
        return (f"stablehlo.compare {op.attrs['direction']}, {self.ref(a)}, {self.ref(b)}, "
                f"{op.attrs['compare_type']} : {sig}")

    def _stablehlo_select(self, op: Op, indent: int) -> str:
        return f"stablehlo.select {self.refs(op.operands)} : {op.operands[0].type}, " \
               f"{op.result.type}"

    def _stablehlo_slice(self, op: Op, indent: int) -> str:
        boxes = []
        for start, limit, stride in zip(op.attrs["start"], op.attrs["limit"], op.attrs["strides"]):
            boxes.append(f"{start}:{limit}" + (f":{stride}" if stride != 1 else ""))
        (x,) = op.operands
        sig = functional_type([x.type], [op.result.type])
        return f"stablehlo.slice {self.ref(x)} [{', '.join(boxes)}] : {sig}"

    def _chlo_top_k(self, op: Op, indent: int) -> str:
        (x,) = op.operands
        outs = ", ".join(str(r.type) for r in op.results)
        return f"chlo.top_k({self.ref(x)}, k = {op.attrs['k']}) : {x.type} -> ({outs})"

    def _stablehlo_custom_call(self, op: Op, indent: int) -> str:
        sig = functional_type([v.type for v in op.operands], [r.type for r in op.results])
        return (f"stablehlo.custom_call {format_symbol(op.attrs['call_target_name'])}"
                f"({self.refs(op.operands)}) {format_attr(op.attrs['attributes'])} : {sig}")

    def _stablehlo_reduce(self, op: Op, indent: int) -> str:
        half = len(op.operands) // 2
        inputs, inits = op.operands[:half], op.operands[half:]
        head = ", ".join(f"({self.ref(x)} init: {self.ref(i)})" for x, i in zip(inputs, inits))
        sig = functional_type([v.type for v in op.operands], [r.type for r in op.results])
        dims = _ints(op.attrs["dimensions"])
        applies = compact_reduce_body(op)
        if applies:
            return f"stablehlo.reduce{head} applies {applies} across dimensions = {dims} : {sig}"
        body = op.regions[0]
        pairs = " ".join(f"({self.ref(a)}: {a.type}, {self.ref(b)}: {b.type})"
                         for a, b in zip(body.args[:half], body.args[half:]))
        text = f"stablehlo.reduce{head} across dimensions = {dims} : {sig}\n"
        text += " " * indent + f" reducer{pairs}  {{\n" + self._region_lines(body, indent)
        return text + " " * indent + "}"

    def _stablehlo_while(self, op: Op, indent: int) -> str:
        cond, body = op.regions
        inits = ", ".join(f"{self.ref(a)} = {self.ref(v)}" for a, v in zip(cond.args, op.operands))
        types = ", ".join(str(v.type) for v in op.operands)
        pad = " " * indent
        return (f"stablehlo.while({inits}) : {types}\n{pad}cond {{\n"
                + self._region_lines(cond, indent) + f"{pad}}} do {{\n"
                + self._region_lines(body, indent) + f"{pad}}}")

    def _generic(self, op: Op, indent: int) -> str:
        text = f'"{op.name}"({self.refs(op.operands)})'
        if op.attrs:
            text += " <{" + ", ".join(f"{k} = {format_attr(v)}" for k, v in op.attrs.items()) \
                + "}>"
        if op.regions:
            pad = " " * indent
            regions = []
            for region in op.regions:
                lines = ""
                if region.args:
                    args = ", ".join(f"{self.ref(a)}: {a.type}" for a in region.args)
                    lines = f"{pad}^bb0({args}):\n"
                regions.append("{\n" + lines + self._region_lines(region, indent) + pad + "}")
            text += " (" + ", ".join(regions) + ")"
        sig = functional_type([v.type for v in op.operands], [r.type for r in op.results])
        return f"{text} : {sig}"

    def _region_lines(self, block: Block, indent: int) -> str:
        inner = Printer(self.names)
        inner.block(block, indent + 2, in_func=False)
        return "".join(line + "\n" for line in inner.lines)


def print_func(func: Func, indent: int = 2) -> str:
    names = value_names(func)
    printer = Printer(names)
    args = ", ".join(f"%{names[a]}: {a.type}" for a in func.body.args)
    results = ""
    if func.result_types:
        shown = [str(t) + (f" {{jax.result_info = {format_string(info)}}}" if info else "")
                 for t, info in zip(func.result_types, func.result_infos)]
        single = len(shown) == 1 and func.result_infos[0] is None
        results = " -> " + (shown[0] if single else "(" + ", ".join(shown) + ")")
    pad = " " * indent
    printer.lines.append(f"{pad}func.func {func.visibility} {format_symbol(func.name)}({args})"
                         f"{results} {{")
    printer.block(func.body, indent + 2, in_func=True)
    printer.lines.append(pad + "}")
    return "\n".join(printer.lines)


def print_module(module: Module) -> str:
    """The module as text, exactly in JAX's ``as_text()`` format."""
    funcs = "\n".join(print_func(f) for f in module.funcs)
    return (f"module {format_symbol(module.name)} attributes {Module.ATTRIBUTES} {{\n"
            f"{funcs}\n}}\n")
