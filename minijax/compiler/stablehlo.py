"""Reading StableHLO text back into the graph IR: what the backends do first.

Lowering prints a :class:`~minijax.compiler.stablehlo_ir.Module` as text (JAX's
``as_text()`` format), and that text is all a backend receives: the mini-XLA
(``numpy_backend``) starts by :func:`parse_module`, real XLA (``xla_backend``) reads its
signature from it. The parser covers the subset of StableHLO that minijax and JAX emit:
a tokenizer, then recursive descent, one small function per op whose text has its own
syntax (the rest use MLIR's generic form or the op table's pretty syntaxes,
``stablehlo_ops.OPS``). It checks what it reads (undefined values, types that do not
match), so that a hand-edited program fails here, with the offending place, rather than
in generated code.

:func:`walk_ops` visits every op of a block, nested regions included: the passes and the
code generator walk programs with it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax.compiler.stablehlo_ir import (
    ELEMENT_DTYPES,
    Block,
    Dense,
    DenseArray,
    Func,
    Module,
    Op,
    Opaque,
    Struct,
    Symbol,
    TensorType,
    Typed,
    Value,
)
from minijax.compiler.stablehlo_ops import OPS, PRETTY_SYNTAXES


def walk_ops(block: Block) -> Iterator[Op]:
    """Every op of ``block``, including those in nested regions (outer ops first)."""
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk_ops(region)


@functools.lru_cache(maxsize=4096)
def parse_type(text: str) -> TensorType:
    """``tensor<2x3xf32>`` -> ``TensorType((2, 3), float32)``."""
    body = text[len("tensor<"):-1]
    *dims, element = re.split(r"x(?=\d|[a-z])", body) if body[:1].isdigit() else [body]
    return TensorType(tuple(int(d) for d in dims), ELEMENT_DTYPES[element])


# ---------------------------------------------------------------------------------------
# Tokens, then recursive descent
# ---------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
  (?P<ws>\s+)
| (?P<type>tensor<(?:[^<>]|<[^<>]*>)*>)
| (?P<value>%[\w$.]+(?:\#\d+)?)
| (?P<symbol>@(?:[A-Za-z_][\w$.]*|"(?:[^"\\]|\\.)*"))
| (?P<label>\^\w+)
| (?P<string>"(?:[^"\\]|\\.)*")
| (?P<arrow>->)
| (?P<number>[-+]?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))
| (?P<ident>[#!]?[A-Za-z_][\w.$]*)
| (?P<punct>[(){}\[\]<>,:=])
| (?P<error>.)
""", re.VERBOSE | re.DOTALL)


class Token(NamedTuple):
    kind: str
    text: str
    pos: int


def tokenize(text: str) -> list[Token]:
    """The text as tokens (whitespace dropped), ending with an ``eof`` token."""
    tokens = [Token(m.lastgroup, m.group(), m.start()) for m in _TOKEN.finditer(text)
              if m.lastgroup != "ws"]
    for token in tokens:
        if token.kind == "error":
            raise SyntaxError(f"unexpected character {token.text!r} at offset {token.pos}")
    tokens.append(Token("eof", "", len(text)))
    return tokens


def _unescape(quoted: str) -> str:
    """The contents of ``"..."`` with MLIR's escapes (``\\"``, ``\\\\``, ``\\CE``)."""
    out, raw, i = bytearray(), quoted[1:-1], 0
    while i < len(raw):
        if raw[i] == "\\":
            nxt = raw[i + 1:i + 3]
            if re.fullmatch(r"[0-9A-Fa-f]{2}", nxt):
                out.append(int(nxt, 16))
                i += 3
                continue
            out += raw[i + 1].encode()
            i += 2
            continue
        out += raw[i].encode()
        i += 1
    return out.decode()


class Parser:
    """Recursive descent over the token list; ``scopes`` map names to values, innermost
    last (a nested region sees the values of the blocks around it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.scopes: list[dict[str, Value]] = []

    # -- token helpers ------------------------------------------------------------------

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[self.i + offset]

    def next(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, text: str) -> bool:
        return self.peek().text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        token = self.next()
        if token.text != text:
            raise self.error(f"expected {text!r}, got {token.text!r}", token)
        return token

    def expect_kind(self, kind: str) -> Token:
        token = self.next()
        if token.kind != kind:
            raise self.error(f"expected a {kind}, got {token.text!r}", token)
        return token

    def error(self, message: str, token: Token | None = None) -> SyntaxError:
        token = token or self.peek()
        line = self.text.count("\n", 0, token.pos) + 1
        return SyntaxError(f"line {line}: {message}")

    def comma_list(self, item: Callable[[], Any], close: str) -> list[Any]:
        """``item, item, ...`` up to (and consuming) ``close``."""
        items = []
        if self.accept(close):
            return items
        while True:
            items.append(item())
            if self.accept(close):
                return items
            self.expect(",")

    # -- values and types ---------------------------------------------------------------

    def define(self, name: str, value: Value) -> None:
        self.scopes[-1][name] = value

    def use(self) -> Value:
        token = self.expect_kind("value")
        for scope in reversed(self.scopes):
            if token.text[1:] in scope:
                return scope[token.text[1:]]
        raise self.error(f"use of undefined value {token.text}", token)

    def type(self) -> TensorType:
        token = self.expect_kind("type")
        try:
            return parse_type(token.text)
        except KeyError:
            raise self.error(f"unsupported type {token.text}", token) from None

    def type_list(self) -> list[TensorType]:
        """``T`` or ``(T, U)``."""
        if self.accept("("):
            return self.comma_list(self.type, ")")
        return [self.type()]

    def functional_type(self) -> tuple[list[TensorType], list[TensorType]]:
        self.expect("(")
        ins = self.comma_list(self.type, ")")
        self.expect("->")
        return ins, self.type_list()

    def ints(self) -> tuple[int, ...]:
        self.expect("[")
        return tuple(self.comma_list(lambda: int(self.expect_kind("number").text), "]"))

    def symbol(self) -> str:
        text = self.expect_kind("symbol").text[1:]
        return _unescape(text) if text.startswith('"') else text

    # -- attributes ---------------------------------------------------------------------

    def attr(self) -> Any:
        """One attribute value of a generic op or a custom call (see ``format_attr``)."""
        token = self.peek()
        if token.text in ("true", "false"):
            self.next()
            return token.text == "true"
        if token.kind == "number":
            self.next()
            text = token.text
            value = int(text, 16) if text.startswith("0x") else \
                int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
            if self.accept(":"):
                return Typed(value, self.next().text)
            return value
        if token.kind == "string":
            self.next()
            return _unescape(token.text)
        if token.kind == "symbol":
            return Symbol(self.symbol())
        if token.text == "[":
            self.next()
            return self.comma_list(self.attr, "]")
        if token.text == "{":
            return self.attr_dict()
        if token.text == "dense":
            self.next()
            self.expect("<")
            values = [] if self.at(">") else self._dense_items()
            self.expect(">")
            self.expect(":")
            type_text = self._raw_type()
            shape = tuple(int(d) for d in re.findall(r"(\d+)x", type_text))
            return Dense(np.broadcast_to(np.array(values, np.int64), shape).copy(), type_text)
        if token.text == "array":
            self.next()
            self.expect("<")
            element = self.next().text
            values = ()
            if self.accept(":"):
                values = tuple(self.comma_list(lambda: int(self.next().text), ">"))
            else:
                self.expect(">")
            return DenseArray(element, values)
        if token.kind == "ident" and token.text in ("#stablehlo.gather", "#stablehlo.scatter"):
            self.next()
            self.expect("<")
            fields = {}
            for key, value in self.comma_list(self._field, ">"):
                fields[key] = value
            return Struct(token.text, fields)
        if token.kind == "ident" and token.text.startswith("#"):
            return Opaque(self._raw_balanced())
        raise self.error(f"unexpected attribute {token.text!r}")

    def _field(self) -> tuple[str, Any]:
        key = self.next().text
        self.expect("=")
        return key, self.attr()

    def attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        return dict(self.comma_list(self._field, "}"))

    def _dense_items(self) -> Any:
        if self.accept("["):
            return self.comma_list(self._dense_items, "]")
        return int(self.next().text)

    def _raw_type(self) -> str:
        return self.expect_kind("type").text

    def _raw_balanced(self) -> str:
        """``#name<...>`` as source text (``->`` does not close the brackets)."""
        start = self.next().pos
        self.expect("<")
        depth = 1
        while depth:
            token = self.next()
            depth += {"<": 1, ">": -1}.get(token.text, 0)
        return self.text[start:self.peek(-1).pos + 1]

    def keyword_value(self) -> Any:
        """``[1, 2]``, ``[0] x [1]``, ``[DEFAULT, DEFAULT]``, ``3`` or a word (``e5m10``)."""
        if self.peek().kind == "ident":
            return self.next().text
        if self.at("["):
            if self.peek(1).kind == "ident":
                self.next()
                return tuple(self.comma_list(lambda: self.next().text, "]"))
            first = self.ints()
            if self.peek().text == "x":
                self.next()
                return first, self.ints()
            return first
        return int(self.expect_kind("number").text)

    # -- dense literals -----------------------------------------------------------------

    def dense(self, type: TensorType) -> np.ndarray:
        """``dense<...>`` for a value of ``type``: splat, nested lists or hex bytes."""
        self.expect("dense")
        self.expect("<")
        if self.accept(">"):
            return np.zeros(type.shape, type.dtype)
        if self.peek().kind == "string":
            raw = bytes.fromhex(_unescape(self.next().text)[2:])
            self.expect(">")
            return np.frombuffer(raw, type.dtype).reshape(type.shape).copy()
        items = self._elements(type.dtype)
        self.expect(">")
        value = np.array(items, dtype=type.dtype)
        return np.full(type.shape, value, type.dtype) if value.ndim == 0 else value

    def _elements(self, dtype: np.dtype) -> Any:
        if self.accept("["):
            return self.comma_list(lambda: self._elements(dtype), "]")
        if dtype.kind == "c":
            self.expect("(")
            real = self._scalar(np.dtype(dtype.type(0).real.dtype))
            self.expect(",")
            imag = self._scalar(np.dtype(dtype.type(0).real.dtype))
            self.expect(")")
            return complex(real, imag)
        return self._scalar(dtype)

    def _scalar(self, dtype: np.dtype) -> Any:
        token = self.next()
        if token.text in ("true", "false"):
            return token.text == "true"
        if token.text.startswith("0x") and dtype.kind in "fcV":
            bits = np.array(int(token.text, 16), f"u{dtype.itemsize}")
            return bits.view(dtype)[()]
        if dtype.kind in "iu":
            return int(token.text)
        return float(token.text)

    # -- structure ----------------------------------------------------------------------

    def module(self) -> Module:
        self.expect("module")
        module = Module(self.symbol())
        self.expect("attributes")
        self.attr_dict()
        self.expect("{")
        while not self.accept("}"):
            module.funcs.append(self.func())
        return module

    def func(self) -> Func:
        self.expect("func.func")
        visibility = self.next().text
        name = self.symbol()
        self.expect("(")
        self.scopes.append({})
        arg_names, arg_types = [], []

        def arg() -> None:
            arg_names.append(self.expect_kind("value").text[1:])
            self.expect(":")
            arg_types.append(self.type())

        self.comma_list(arg, ")")
        result_types, infos = [], []
        if self.accept("->"):
            parenthesised = self.accept("(")

            def result() -> None:
                result_types.append(self.type())
                info = None
                if parenthesised and self.at("{"):
                    info = self.attr_dict()["jax.result_info"]
                infos.append(info)

            if parenthesised:
                self.comma_list(result, ")")
            else:
                result()
        func = Func(name, arg_types, result_types, visibility, infos)
        for n, value in zip(arg_names, func.body.args):
            self.define(n, value)
        self.expect("{")
        self.ops_until("}", func.body)
        self.scopes.pop()
        return func

    def region(self, arg_types_known: Sequence[tuple[str, TensorType]] = ()) -> Block:
        """``{ [^bb0(%a: T, ...):] ops }``; the braces are consumed."""
        self.expect("{")
        self.scopes.append({})
        args = list(arg_types_known)
        if self.peek().kind == "label":
            self.next()
            self.expect("(")

            def arg() -> tuple[str, TensorType]:
                n = self.expect_kind("value").text[1:]
                self.expect(":")
                return n, self.type()

            args = self.comma_list(arg, ")")
            self.expect(":")
        block = Block([t for _, t in args])
        for (n, _), value in zip(args, block.args):
            self.define(n, value)
        self.ops_until("}", block)
        self.scopes.pop()
        return block

    def ops_until(self, close: str, block: Block) -> None:
        while not self.accept(close):
            block.ops.append(self.operation())

    def operation(self) -> Op:
        names: list[str] = []
        if self.peek().kind == "value":
            names = self._result_names()
        token = self.next()
        if token.kind == "string":
            op = self.generic_op(_unescape(token.text))
        else:
            name = {"call": "func.call", "return": "func.return"}.get(token.text, token.text)
            parse = _PARSERS.get(name)
            if parse is None:
                if name not in OPS or OPS[name].syntax not in PRETTY_SYNTAXES:
                    raise self.error(f"unknown operation {token.text}", token)
                op = self.pretty_op(name)
            else:
                op = parse(self, name)
        if len(names) != len(op.results):
            raise self.error(f"{op.name} defines {len(op.results)} results, not {len(names)}")
        for n, result in zip(names, op.results):
            self.define(n, result)
        return op

    def _result_names(self) -> list[str]:
        first = self.expect_kind("value").text[1:]
        if self.accept(":"):
            count = int(self.expect_kind("number").text)
            self.expect("=")
            return [f"{first}#{i}" for i in range(count)]
        names = [first]
        while self.accept(","):
            names.append(self.expect_kind("value").text[1:])
        self.expect("=")
        return names

    def pretty_op(self, name: str) -> Op:
        operands, attrs = [], {}
        while not self.at(":"):
            if operands or attrs:
                self.expect(",")
            if self.peek().kind == "value":
                operands.append(self.use())
            else:
                key = self.next().text
                self.expect("=")
                attrs[key] = self.keyword_value()
        self.expect(":")
        if OPS[name].syntax == "chlo":
            ins = [self.type()]
            while self.accept(","):
                ins.append(self.type())
            self.expect("->")
            outs = [self.type()]
        elif self.at("("):
            ins, outs = self.functional_type()
        else:
            (out,) = outs = [self.type()]
            ins = [out] * len(operands)
            if name == "stablehlo.complex":
                part = np.dtype(np.float64 if out.dtype == np.complex128 else np.float32)
                ins = [TensorType(out.shape, part)] * 2
        _check_types(self, operands, ins)
        return Op(name, operands, outs, attrs)

    def generic_op(self, name: str) -> Op:
        self.expect("(")
        operands = self.comma_list(self.use, ")")
        attrs = {}
        if self.accept("<"):
            attrs = self.attr_dict()
            self.expect(">")
        regions = []
        if self.accept("("):
            regions = self.comma_list(self.region, ")")
        self.expect(":")
        ins, outs = self.functional_type()
        _check_types(self, operands, ins)
        return Op(name, operands, outs, attrs, regions)


def _check_types(parser: Parser, operands: Sequence[Value], types: Sequence[TensorType]) -> None:
    if [v.type for v in operands] != list(types):
        raise parser.error(f"operand types {[str(v.type) for v in operands]} do not match the "
                           f"signature {[str(t) for t in types]}")


def _parse_return(p: Parser, name: str) -> Op:
    operands = []
    if p.peek().kind == "value":
        operands = [p.use()]
        while p.accept(","):
            operands.append(p.use())
        p.expect(":")
        _check_types(p, operands, _type_sequence(p, len(operands)))
    return Op(name, operands, [])


def _type_sequence(p: Parser, count: int) -> list[TensorType]:
    types = [p.type()]
    for _ in range(count - 1):
        p.expect(",")
        types.append(p.type())
    return types


def _parse_call(p: Parser, name: str) -> Op:
    callee = p.symbol()
    p.expect("(")
    operands = p.comma_list(p.use, ")")
    p.expect(":")
    ins, outs = p.functional_type()
    _check_types(p, operands, ins)
    return Op("func.call", operands, outs, {"callee": callee})


def _parse_constant(p: Parser, name: str) -> Op:
    start = p.i
    while p.peek().text != ":":  # the value's type comes after it: read that first
        p.next()
    p.next()
    type = p.type()
    end, p.i = p.i, start
    value = p.dense(type)
    p.i = end
    return Op(name, [], [type], {"value": value})


def _parse_compare(p: Parser, name: str) -> Op:
    direction = p.expect_kind("ident").text
    p.expect(",")
    a = p.use()
    p.expect(",")
    b = p.use()
    compare_type = None
    if p.accept(","):
        compare_type = p.expect_kind("ident").text
    p.expect(":")
    ins, outs = p.functional_type()
    _check_types(p, [a, b], ins)
    return Op(name, [a, b], outs, {"direction": direction, "compare_type": compare_type})


def _parse_select(p: Parser, name: str) -> Op:
    operands = [p.use()]
    for _ in range(2):
        p.expect(",")
        operands.append(p.use())
    p.expect(":")
    pred_type = p.type()
    result = p.type() if p.accept(",") else pred_type
    _check_types(p, operands, [pred_type, result, result])
    return Op(name, operands, [result])


def _parse_slice(p: Parser, name: str) -> Op:
    x = p.use()
    p.expect("[")
    starts, limits, strides = [], [], []

    def box() -> None:
        numbers = [int(p.expect_kind("number").text)]
        while p.accept(":"):
            numbers.append(int(p.expect_kind("number").text))
        starts.append(numbers[0])
        limits.append(numbers[1])
        strides.append(numbers[2] if len(numbers) > 2 else 1)

    p.comma_list(box, "]")
    p.expect(":")
    ins, outs = p.functional_type()
    _check_types(p, [x], ins)
    attrs = {"start": tuple(starts), "limit": tuple(limits), "strides": tuple(strides)}
    return Op(name, [x], outs, attrs)


def _parse_top_k(p: Parser, name: str) -> Op:
    p.expect("(")
    x = p.use()
    p.expect(",")
    p.expect("k")
    p.expect("=")
    k = int(p.expect_kind("number").text)
    p.expect(")")
    p.expect(":")
    _check_types(p, [x], [p.type()])
    p.expect("->")
    return Op(name, [x], p.type_list(), {"k": k})


def _parse_custom_call(p: Parser, name: str) -> Op:
    target = p.symbol()
    p.expect("(")
    operands = p.comma_list(p.use, ")")
    attributes = p.attr_dict() if p.at("{") else {}
    p.expect(":")
    ins, outs = p.functional_type()
    _check_types(p, operands, ins)
    return Op(name, operands, outs, {"call_target_name": target, "attributes": attributes})


def _parse_reduce(p: Parser, name: str) -> Op:
    inputs, inits = [], []
    while True:
        p.expect("(")
        inputs.append(p.use())
        p.expect("init")
        p.expect(":")
        inits.append(p.use())
        p.expect(")")
        if not p.accept(","):
            break
    applies = p.next().text if p.accept("applies") else None
    p.expect("across")
    p.expect("dimensions")
    p.expect("=")
    dims = p.ints()
    p.expect(":")
    ins, outs = p.functional_type()
    operands = inputs + inits
    _check_types(p, operands, ins)
    if applies:
        scalar = TensorType((), inputs[0].type.dtype)
        body = Block([scalar, scalar])
        inner = Op(applies, body.args, [scalar])
        body.ops = [inner, Op("stablehlo.return", inner.results, [])]
    else:
        p.expect("reducer")
        pairs = []
        while p.at("("):
            p.next()
            pair = []
            for _ in range(2):
                n = p.expect_kind("value").text[1:]
                p.expect(":")
                pair.append((n, p.type()))
                p.accept(",")
            p.expect(")")
            pairs.append(pair)
        args = [a for a, _ in pairs] + [b for _, b in pairs]
        body = p.region(args)
    return Op(name, operands, outs, {"dimensions": dims}, [body])


def _parse_while(p: Parser, name: str) -> Op:
    p.expect("(")
    arg_names, operands = [], []

    def init() -> None:
        arg_names.append(p.expect_kind("value").text[1:])
        p.expect("=")
        operands.append(p.use())

    p.comma_list(init, ")")
    p.expect(":")
    types = _type_sequence(p, len(operands))
    _check_types(p, operands, types)
    args = list(zip(arg_names, types))
    p.expect("cond")
    cond = p.region(args)
    p.expect("do")
    body = p.region(args)
    return Op(name, operands, types, {}, [cond, body])


_PARSERS: dict[str, Callable[[Parser, str], Op]] = {
    "func.return": _parse_return,
    "stablehlo.return": _parse_return,
    "func.call": _parse_call,
    "stablehlo.constant": _parse_constant,
    "stablehlo.compare": _parse_compare,
    "stablehlo.select": _parse_select,
    "stablehlo.slice": _parse_slice,
    "stablehlo.reduce": _parse_reduce,
    "stablehlo.while": _parse_while,
    "stablehlo.custom_call": _parse_custom_call,
    "chlo.top_k": _parse_top_k,
}


def parse_module(text: str) -> Module:
    """Read StableHLO text (the subset minijax and JAX emit) into a :class:`Module`."""
    parser = Parser(text)
    module = parser.module()
    if parser.peek().kind != "eof":
        raise parser.error("text after the end of the module")
    return module
