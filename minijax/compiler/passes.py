"""Optimisation passes of the mini-XLA: small rewrites of the StableHLO graph IR.

Each pass takes a :class:`~minijax.compiler.stablehlo.Module`, changes it in place and
returns it, so a pipeline is just a loop; printing the module before and after a pass
(``print(module)``) shows what it did. The passes, in the order the NumPy backend runs
them:

* :func:`inline_calls` -- replace calls of private functions by their bodies;
* :func:`common_subexpression_elimination` -- compute each distinct value once;
* :func:`constant_folding` -- compute at compile time what depends only on constants;
* :func:`dead_code_elimination` -- drop what no result depends on;
* :func:`fuse_elementwise` -- group chains of elementwise ops into one ``minijax.fusion``
  op, which the code generator turns into one NumPy expression.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from minijax.compiler.stablehlo import (
    Block,
    Func,
    Module,
    Op,
    TensorType,
    Value,
    is_splat,
    walk_ops,
)

# Ops that compute their results from their operands and nothing else: they may be
# removed when unused, merged when identical, and evaluated early on constants.
_IMPURE = {"stablehlo.custom_call", "func.return", "stablehlo.return"}

# Elementwise ops: each output element depends on the elements at the same position.
ELEMENTWISE = {
    "stablehlo.abs", "stablehlo.add", "stablehlo.and", "stablehlo.atan2",
    "stablehlo.bitcast_convert", "stablehlo.cbrt", "stablehlo.ceil", "stablehlo.clamp",
    "stablehlo.compare", "stablehlo.complex", "stablehlo.convert", "stablehlo.cosine",
    "stablehlo.divide", "stablehlo.exponential", "stablehlo.exponential_minus_one",
    "stablehlo.floor", "stablehlo.imag", "stablehlo.is_finite", "stablehlo.log",
    "stablehlo.log_plus_one", "stablehlo.logistic", "stablehlo.maximum", "stablehlo.minimum",
    "stablehlo.multiply", "stablehlo.negate", "stablehlo.not", "stablehlo.or",
    "stablehlo.popcnt", "stablehlo.power", "stablehlo.real", "stablehlo.remainder",
    "stablehlo.round_nearest_afz", "stablehlo.round_nearest_even", "stablehlo.rsqrt",
    "stablehlo.select", "stablehlo.shift_left", "stablehlo.shift_right_arithmetic",
    "stablehlo.shift_right_logical", "stablehlo.sign", "stablehlo.sine", "stablehlo.sqrt",
    "stablehlo.subtract", "stablehlo.tan", "stablehlo.tanh", "stablehlo.xor", "chlo.acos",
    "chlo.acosh", "chlo.asin", "chlo.asinh", "chlo.atan", "chlo.atanh", "chlo.cosh",
    "chlo.next_after", "chlo.sinh", "chlo.square", "chlo.erf", "chlo.erfc", "chlo.erf_inv",
    "chlo.lgamma", "chlo.digamma", "stablehlo.count_leading_zeros",
    "stablehlo.reduce_precision",
}


def is_pure(op: Op) -> bool:
    return op.name not in _IMPURE and not any(
        not is_pure(inner) for region in op.regions for inner in walk_ops(region)
        if inner.name not in ("func.return", "stablehlo.return"))


def blocks(module: Module) -> Iterator[Block]:
    """Every block of every function, outer blocks before the blocks nested in them."""
    def visit(block: Block) -> Iterator[Block]:
        yield block
        for op in block.ops:
            for region in op.regions:
                yield from visit(region)

    for func in module.funcs:
        yield from visit(func.body)


def use_counts(block: Block) -> dict[Value, int]:
    """How many times each value is used as an operand, nested regions included."""
    counts: dict[Value, int] = {}
    for op in walk_ops(block):
        for v in op.operands:
            counts[v] = counts.get(v, 0) + 1
    return counts


def _replace_uses(block: Block, mapping: dict[Value, Value]) -> None:
    for op in walk_ops(block):
        op.operands = [mapping.get(v, v) for v in op.operands]


# ---------------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------------


def inline_calls(module: Module) -> Module:
    """Replace every ``func.call`` by a copy of the called function's body.

    Why: a call is a wall for the other passes (no fusion or CSE across it), and in the
    generated code it costs a Python function call each time; a ``scan`` calls three
    helpers per iteration. XLA inlines too. The functions themselves are left for
    dead-code elimination to remove.
    """
    funcs = {f.name: f for f in module.funcs}
    for func in module.funcs:
        _inline_block(func.body, funcs)
    return module


def _inline_block(block: Block, funcs: dict[str, Func]) -> None:
    ops: list[Op] = []
    mapping: dict[Value, Value] = {}
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            _replace_uses(region, mapping)
            _inline_block(region, funcs)
        if op.name != "func.call":
            ops.append(op)
            continue
        callee = funcs[op.attrs["callee"]]
        body = clone_block(callee.body, dict(zip(callee.body.args, op.operands)))
        _inline_block(body, funcs)
        ops += body.ops[:-1]
        mapping.update(zip(op.results, body.terminator.operands))
    block.ops = ops


def clone_block(block: Block, mapping: dict[Value, Value]) -> Block:
    """A copy of ``block`` whose ops read ``mapping[v]`` instead of ``v`` (the block's
    arguments are copied unless mapped)."""
    mapping = dict(mapping)
    copy = Block([a.type for a in block.args])
    for old, new in zip(block.args, copy.args):
        mapping.setdefault(old, new)
    for op in block.ops:
        new_op = Op(op.name, [mapping.get(v, v) for v in op.operands],
                    [r.type for r in op.results], dict(op.attrs),
                    [clone_block(region, mapping) for region in op.regions])
        mapping.update(zip(op.results, new_op.results))
        copy.ops.append(new_op)
    return copy


# ---------------------------------------------------------------------------------------
# Dead-code elimination
# ---------------------------------------------------------------------------------------


def dead_code_elimination(module: Module) -> Module:
    """Remove ops whose results are never used, and private functions never called.

    Why: lowering emits helpers that later passes make redundant (a constant folded
    into another, a duplicate merged away by CSE); computing them would waste time.
    Ops with side effects are kept whatever happens.
    """
    for func in module.funcs:
        _dce_block(func.body)
    called = {op.attrs["callee"] for func in module.funcs for op in walk_ops(func.body)
              if op.name == "func.call"}
    module.funcs = [f for f in module.funcs if f.visibility == "public" or f.name in called]
    return module


def _dce_block(block: Block) -> set[Value]:
    """DCE one block (and the regions in it); returns every value its ops still use."""
    used: set[Value] = set()
    kept = []
    for op in reversed(block.ops):
        if op is block.ops[-1] or not is_pure(op) or any(r in used for r in op.results):
            for region in op.regions:
                used |= _dce_block(region)
            used.update(op.operands)
            kept.append(op)
    block.ops = kept[::-1]
    return used


# ---------------------------------------------------------------------------------------
# Common-subexpression elimination
# ---------------------------------------------------------------------------------------


def _freeze(value: Any) -> Any:
    """A hashable stand-in for an attribute value (arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(_freeze(v) for v in value)
    return value


def _cse_key(op: Op) -> Any:
    if op.regions or not is_pure(op) or not op.results:
        return None
    return (op.name, tuple(id(v) for v in op.operands), _freeze(op.attrs),
            tuple(r.type for r in op.results))


def common_subexpression_elimination(module: Module) -> Module:
    """Replace an op by an earlier identical one (same op, operands and attributes).

    Why: lowering makes a new ``stablehlo.constant`` at every use of a Python scalar,
    and traced programs often compute the same broadcast or product twice. An op in a
    nested region may reuse a value computed outside it, but not one from a sibling
    region (a value of one ``case`` branch does not exist in the other).
    """
    for func in module.funcs:
        _cse_block(func.body, {}, {})
    return module


def _cse_block(block: Block, known: dict[Any, list[Value]], mapping: dict[Value, Value]
               ) -> None:
    known = dict(known)
    kept = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            _cse_block(region, known, mapping)
        key = _cse_key(op)
        if key is not None and key in known:
            mapping.update(zip(op.results, known[key]))
            continue
        if key is not None:
            known[key] = op.results
        kept.append(op)
    block.ops = kept


# ---------------------------------------------------------------------------------------
# Constant folding
# ---------------------------------------------------------------------------------------

# Folding never makes a constant larger than this many elements (unless all its elements
# are equal: a splat is stored as one value).
MAX_FOLDED_SIZE = 1024


def _constant_value(v: Value) -> np.ndarray | None:
    return v.op.attrs["value"] if v.op is not None and v.op.name == "stablehlo.constant" \
        else None




def constant_folding(module: Module,
                     evaluate: Callable[[Op, Sequence[np.ndarray]], np.ndarray]) -> Module:
    """Replace each op whose operands are all constants by the constant it computes.

    Why: ``x * 2.0`` lowers to a constant, a ``broadcast_in_dim`` of it, and the
    product; the broadcast depends on nothing but the constant, so it can be computed
    once, at compile time, instead of at every call. ``evaluate(op, values)`` computes
    one op (the backend's own semantics). A result is kept only if it is small, or a
    *splat* (all elements equal, like that broadcast of 2.0): the code generator then
    writes it as a scalar and lets NumPy broadcast it.
    """
    for block in blocks(module):
        for op in block.ops:
            _fold(op, evaluate)
    return module


def _fold(op: Op, evaluate: Callable) -> None:
    if (op.regions or not is_pure(op) or len(op.results) != 1 or op.name in (
            "stablehlo.constant", "func.call")):
        return
    values = [_constant_value(v) for v in op.operands]
    if any(v is None for v in values):
        return
    out: TensorType = op.result.type
    if values and all(is_splat(v) for v in values) and (
            op.name in ELEMENTWISE or op.name == "stablehlo.broadcast_in_dim"):
        scalars = [v.reshape(-1)[0].reshape(()) for v in values]
        if op.name == "stablehlo.broadcast_in_dim":
            result = scalars[0]
        else:  # compute one element and let it stand for all of them
            scalar_op = Op(op.name, [Value(TensorType((), v.dtype)) for v in values],
                           [TensorType((), out.dtype)], op.attrs)
            result = np.asarray(evaluate(scalar_op, scalars))
        value = np.broadcast_to(result.astype(out.dtype, copy=False), out.shape)
    elif out.size <= MAX_FOLDED_SIZE:
        value = np.asarray(evaluate(op, values))
    else:
        return
    op.name, op.operands, op.attrs = "stablehlo.constant", [], {"value": value}


# ---------------------------------------------------------------------------------------
# Elementwise fusion
# ---------------------------------------------------------------------------------------


def _fusible(op: Op) -> bool:
    """Elementwise ops, and broadcasts that NumPy's broadcasting can do by itself
    (operand dimensions in increasing order)."""
    if op.name == "stablehlo.broadcast_in_dim":
        return list(op.attrs["dims"]) == sorted(op.attrs["dims"])
    return op.name in ELEMENTWISE and len(op.results) == 1


def fuse_elementwise(module: Module) -> Module:
    """Group each tree of elementwise ops into one ``minijax.fusion`` op.

    Why: NumPy runs one operation at a time, and every intermediate result of a chain
    like ``tanh(x * w + b)`` is a new array. Inside a fusion the code generator writes
    the whole tree as one expression and lets each operation write into the buffer of
    the one before (``out=``), so the chain allocates once. An op joins the tree of its
    consumer if that consumer is its only user; a value used twice is computed once,
    outside, and enters the fusion as an operand.
    """
    for func in module.funcs:
        uses = use_counts(func.body)
        for block in list(_control_flow_blocks(func.body)):
            _fuse_block(block, uses)
    return module


def _control_flow_blocks(block: Block) -> Iterator[Block]:
    """A function body and the regions of its ``case`` and ``while`` ops. The bodies of
    ``reduce``, ``sort`` and ``scatter`` work on scalars: nothing to gain there, and the
    backend recognises them by their ops."""
    yield block
    for op in block.ops:
        if op.name in ("stablehlo.case", "stablehlo.while"):
            for region in op.regions:
                yield from _control_flow_blocks(region)


def _fuse_block(block: Block, uses: dict[Value, int]) -> None:
    position = {op: i for i, op in enumerate(block.ops)}
    absorbed: set[Op] = set()
    fusions: dict[Op, Op] = {}
    for root in reversed(block.ops):
        if root in absorbed or not _fusible(root) or root.name == "stablehlo.broadcast_in_dim":
            continue
        members = _grow(root, position, uses, absorbed)
        if len(members) > 1:
            absorbed.update(members)
            fusions[root] = _make_fusion(root, sorted(members, key=position.__getitem__))
    block.ops = [fusions.get(op, op) for op in block.ops if op not in absorbed or op in fusions]


# A fusion becomes one nested expression, and Python's parser refuses to nest deeper
# than about 200 parentheses: deeper trees are cut into several fusions.
MAX_FUSION_DEPTH = 16


def _grow(root: Op, position: dict[Op, int], uses: dict[Value, int], absorbed: set[Op],
          depth: int = 1) -> list[Op]:
    """The root and, recursively, every fusible producer whose only user is in the tree."""
    members = [root]
    for operand in root.operands:
        producer = operand.op
        if (depth < MAX_FUSION_DEPTH and producer is not None and producer in position
                and producer not in absorbed and _fusible(producer)
                and uses.get(operand, 0) == 1):
            members += _grow(producer, position, uses, absorbed, depth + 1)
    return members


def _make_fusion(root: Op, members: list[Op]) -> Op:
    """Move ``members`` into the region of a new fusion op; values from outside become
    its operands (and the region's block arguments)."""
    inside = {r for op in members for r in op.results}
    inputs: list[Value] = []
    for op in members:
        for v in op.operands:
            if v not in inside and v not in inputs:
                inputs.append(v)
    body = Block([v.type for v in inputs])
    mapping = dict(zip(inputs, body.args))
    for op in members:
        op.operands = [mapping.get(v, v) for v in op.operands]
    # The fusion takes the root's place: outside users keep reading the same value, now
    # produced by the fusion; inside, the root produces a new value that the region returns.
    result = root.result
    inner = Value(result.type, root, 0)
    root.results = [inner]
    fusion = Op("minijax.fusion", inputs, [])
    result.op, result.index = fusion, 0
    fusion.results = [result]
    body.ops = members + [Op("stablehlo.return", [inner], [])]
    fusion.regions = [body]
    return fusion


DEFAULT_PIPELINE: tuple[str, ...] = ("inline_calls", "common_subexpression_elimination",
                                     "constant_folding", "dead_code_elimination",
                                     "fuse_elementwise")
