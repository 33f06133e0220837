"""Optimisation passes of the mini-XLA: small rewrites of the StableHLO graph IR.

Each pass takes a :class:`~minijax.compiler.stablehlo.Module`, changes it in place and
returns it, so a pipeline is just a loop; printing the module before and after a pass
(``print(module)``) shows what it did. The passes, in the order the NumPy backend runs
them:

* :func:`inline_calls` -- replace calls of private functions by their bodies;
* :func:`common_subexpression_elimination` -- compute each distinct value once;
* :func:`constant_folding` -- compute at compile time what depends only on constants;
* :func:`simplify_select` -- a select between two constants becomes arithmetic;
* :func:`simplify_tie_compares` -- ``max(p, q) == p`` becomes ``p >= q``;
* :func:`fold_transpose_into_dot` -- ``transpose(dot(a, b))`` becomes ``dot(b, a)``;
* :func:`algebraic_simplification` -- ``x * 1`` is ``x``, and other exact identities
  (and XLA's inexact ``log(exp(x))`` is ``x``);
* :func:`simplify_loop_carries` -- loop carries that never change, or copy another, go;
* :func:`unsign_relu_zeros` -- ``max(x, 0.0)`` becomes ``max(x + 0.0, 0.0)``, which NumPy's
  ``maximum`` computes exactly;
* :func:`common_subexpression_elimination` again, for what the rewrites made equal;
* :func:`dead_code_elimination` -- drop what no result depends on;
* :func:`fuse_elementwise` -- group chains of elementwise ops into one ``minijax.fusion``
  op, which the code generator turns into one NumPy expression;
* :func:`rematerialize` -- compute a cheap value again late rather than keep it alive.

The pipeline (:data:`DEFAULT_PIPELINE`) names the passes, and the backend looks each name
up here when it compiles: a pass is a seam, which the learner can replace with their own
(``pieces.install("common_subexpression_elimination", my_cse)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from minijax.compiler.stablehlo import walk_ops
from minijax.compiler.stablehlo_ir import (
    Block,
    Func,
    Module,
    Op,
    TensorType,
    Value,
    compact_reduce_body,
)
from minijax.compiler.stablehlo_ops import OPS
from minijax.mlir_numbers import is_splat


def is_pure(op: Op) -> bool:
    """Whether an op computes its results from its operands and nothing else: it may then
    be removed when unused, merged when identical, and evaluated early on constants."""
    return OPS[op.name].pure and not any(
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
    """What makes two ops compute the same value: name, operands (in any order for a
    commutative op or an ``EQ``/``NE`` compare), attributes, result types, and the
    structure of their regions (a ``reduce`` body, a loop)."""
    if not is_pure(op) or not op.results:
        return None
    operands = tuple(id(v) for v in op.operands)
    if OPS[op.name].commutative or (op.name == "stablehlo.compare"
                                  and op.attrs["direction"] in ("EQ", "NE")):
        operands = tuple(sorted(operands))
    return (op.name, operands, _freeze(op.attrs), tuple(r.type for r in op.results),
            tuple(_region_key(region) for region in op.regions))


def _region_key(block: Block) -> tuple:
    """The structure of a region as a hashable tuple: its own values are numbered in
    order (arguments, then results), values from outside stay themselves."""
    numbers: dict[Value, int] = {}

    def number(v: Value) -> Any:
        return ("own", numbers[v]) if v in numbers else ("outer", id(v))

    def visit(b: Block) -> tuple:
        for a in b.args:
            numbers[a] = len(numbers)
        ops = []
        for op in b.ops:
            regions = tuple(visit(r) for r in op.regions)
            ops.append((op.name, tuple(number(v) for v in op.operands), _freeze(op.attrs),
                        tuple(r.type for r in op.results), regions))
            for r in op.results:
                numbers[r] = len(numbers)
        return tuple(a.type for a in b.args), tuple(ops)

    return visit(block)


def common_subexpression_elimination(module: Module) -> Module:
    """Replace an op by an earlier identical one (same op, operands and attributes;
    operands in any order where the order does not matter; identical regions).

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
            OPS[op.name].elementwise or op.name == "stablehlo.broadcast_in_dim"):
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
    return OPS[op.name].elementwise and len(op.results) == 1


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


# ---------------------------------------------------------------------------------------
# Local rewrites: select between constants, transposes of products, algebraic identities
# ---------------------------------------------------------------------------------------

# A rewrite rule looks at one op and returns None (no change) or the value that replaces
# the op's result, with the new ops that compute it (in order; they take the op's place).
Rule = Callable[[Op, dict[Value, int]], "tuple[list[Op], Value] | None"]


def rewrite(module: Module, rule: Rule) -> Module:
    """Apply ``rule`` to every op of every block, in order, nested regions first; users of
    a replaced result read the replacement. ``rule`` also sees how often each value is
    used (counted before the pass)."""
    for func in module.funcs:
        _rewrite_block(func.body, rule, use_counts(func.body), {})
    return module


def _rewrite_block(block: Block, rule: Rule, uses: dict[Value, int],
                   mapping: dict[Value, Value]) -> None:
    ops: list[Op] = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            _rewrite_block(region, rule, uses, mapping)
        found = rule(op, uses) if len(op.results) == 1 else None
        if found is None:
            ops.append(op)
            continue
        new_ops, value = found
        ops += new_ops
        mapping[op.result] = value
        uses[value] = uses.get(value, 0) + uses.get(op.result, 0)
    block.ops = ops


def splat_value(v: Value) -> np.ndarray | None:
    """The one element of a constant whose elements are all equal (a 0-d array)."""
    value = _constant_value(v)
    if value is None or not is_splat(value):
        return None
    return value.reshape(-1)[0].reshape(())


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def constant_op(value: Any, type: TensorType) -> Op:
    """A ``stablehlo.constant`` of ``type`` whose elements all equal ``value``."""
    scalar = np.asarray(value, type.dtype)
    return Op("stablehlo.constant", [], [type], {"value": np.broadcast_to(scalar, type.shape)})


def _arith(name: str, x: Value, c: np.ndarray) -> list[Op]:
    """``x <name> c`` for a scalar ``c``, as a splat constant and the op."""
    const = constant_op(c, x.type)
    return [const, Op(name, [x, const.result], [x.type])]


def _select_forms(a: np.ndarray, b: np.ndarray) -> list[tuple[Any, Any]]:
    """``select(p, a, b)`` as ``convert(p) * scale + offset`` (None: no multiply or no
    add), cheapest first; only the forms that give ``a`` and ``b`` bit for bit."""
    with np.errstate(all="ignore"):
        one, zero = np.ones((), a.dtype), np.zeros((), a.dtype)
        forms = [(None, None), (a, None), (None, b), (a - b, b)]
        exact = []
        for scale, offset in forms:
            ends = []
            for p in (one, zero):
                y = p if scale is None else p * scale
                ends.append(y if offset is None else y + offset)
            if _same_bits(ends[0], a) and _same_bits(ends[1], b):
                exact.append((scale, offset))
    return exact


def _select_of_constants(op: Op, uses: dict[Value, int]) -> tuple[list[Op], Value] | None:
    if op.name != "stablehlo.select":
        return None
    pred, on_true, on_false = op.operands
    a, b, out = splat_value(on_true), splat_value(on_false), op.result.type
    if a is None or b is None or pred.type.shape != out.shape or out.dtype.kind not in "biuf":
        return None
    if out.dtype.kind == "b":
        if bool(a) == bool(b):
            return None
        if bool(a):
            return [], pred
        negation = Op("stablehlo.not", [pred], [out])
        return [negation], negation.result
    forms = _select_forms(a, b)
    if not forms:
        return None
    scale, offset = forms[0]
    ops = [Op("stablehlo.convert", [pred], [out])]
    if scale is not None:
        ops += _arith("stablehlo.multiply", ops[-1].result, scale)
    if offset is not None:
        ops += _arith("stablehlo.add", ops[-1].result, offset)
    return ops, ops[-1].result


def simplify_select(module: Module) -> Module:
    """``select(p, a, b)`` between two constants becomes arithmetic on ``p``: ``convert(p)``
    for 1 and 0, ``convert(p) * a`` for a and 0, ``convert(p) * (a - b) + b`` in general.

    Why: the gradient of ``relu`` or ``max`` selects 1 or 0 by a mask, and NumPy's
    ``where`` on an unpredictable mask costs several nanoseconds an element (a branch per
    element), while a conversion and a multiply stream through memory. A form is used only
    if it gives both constants bit for bit (``0.1 - 0.3 + 0.3`` is not ``0.1``). Boolean
    selects between ``True`` and ``False`` become ``p`` or ``not p``.
    """
    return rewrite(module, _select_of_constants)


def _dot_transpose(op: Op, uses: dict[Value, int]) -> tuple[list[Op], Value] | None:
    if op.name != "stablehlo.transpose":
        return None
    (x,) = op.operands
    dot = x.op
    if dot is None or dot.name != "stablehlo.dot_general" or uses.get(x, 0) != 1:
        return None
    lhs, rhs = dot.operands
    (cl, cr) = dot.attrs["contracting_dims"]
    (bl, br) = dot.attrs.get("batching_dims", ((), ()))
    nb = len(bl)
    nl = len(lhs.type.shape) - nb - len(cl)
    nr = len(rhs.type.shape) - nb - len(cr)
    swapped = (*range(nb), *range(nb + nl, nb + nl + nr), *range(nb, nb + nl))
    if tuple(op.attrs["dims"]) != swapped:
        return None
    attrs = dict(dot.attrs, contracting_dims=(tuple(cr), tuple(cl)))
    if "batching_dims" in dot.attrs:
        attrs["batching_dims"] = (tuple(br), tuple(bl))
    if "precision" in dot.attrs:
        attrs["precision"] = tuple(reversed(dot.attrs["precision"]))
    new = Op("stablehlo.dot_general", [rhs, lhs], [op.result.type], attrs)
    return [new], new.result


def fold_transpose_into_dot(module: Module) -> Module:
    """``transpose(dot_general(a, b))`` that swaps the two operands' free dimensions
    becomes ``dot_general(b, a)``: (A B)^T = B^T A^T, and the product comes out already
    in the order its users want.

    Why: the transpose rule of a matrix product makes ``dot(g^T, x)^T`` for a weight's
    gradient; NumPy's transpose is a free view, but the view is column-major, and every
    later use of it (the SGD update, the next product) then walks memory with a stride.
    Only a product used by nothing else is rewritten (otherwise it would run twice).
    """
    return rewrite(module, _dot_transpose)


def _same_value(a: Value, b: Value) -> bool:
    """``a`` is ``b``, or both are splat constants of one type with the same bits."""
    if a is b:
        return True
    x, y = splat_value(a), splat_value(b)
    return x is not None and y is not None and a.type == b.type and _same_bits(x, y)


def _tie_compare(op: Op, uses: dict[Value, int]) -> tuple[list[Op], Value] | None:
    if op.name != "stablehlo.compare" or op.attrs["direction"] != "EQ" or \
            op.attrs["compare_type"] == "TOTALORDER":
        return None
    for a, extreme in (op.operands, op.operands[::-1]):
        m = extreme.op
        if m is None or m.name not in ("stablehlo.maximum", "stablehlo.minimum"):
            continue
        for p, q in (m.operands, m.operands[::-1]):
            if _same_value(a, p) and p.type == q.type == a.type:
                direction = "GE" if m.name == "stablehlo.maximum" else "LE"
                new = Op("stablehlo.compare", [p, q], [op.result.type],
                         dict(op.attrs, direction=direction))
                return [new], new.result
    return None


def simplify_tie_compares(module: Module) -> Module:
    """``max(p, q) == p`` becomes ``p >= q`` (and ``min(p, q) == p`` becomes ``p <= q``):
    the same answer for every pair, NaNs and zeros of either sign included (a NaN makes
    both false; the maximum of two zeros equals either).

    Why: the gradient of ``max`` (ReLU's) asks where each operand is the result, and so
    keeps the result alive until the backward pass only to compare it. Compared with
    the operands instead, the result can die after its last real use (and be
    rematerialized), as a hand-written backward pass keeps one array, not two.
    """
    return rewrite(module, _tie_compare)


def _unsigned_zero_max(op: Op, uses: dict[Value, int]) -> tuple[list[Op], Value] | None:
    if op.name != "stablehlo.maximum" or op.result.type.dtype.kind != "f":
        return None
    for x, c in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        zero = splat_value(c)
        if zero is not None and zero == 0 and not np.signbit(zero) and x.type == op.result.type:
            ops = _arith("stablehlo.add", x, zero)
            ops.append(Op("stablehlo.maximum", [ops[-1].result, c], [op.result.type]))
            return ops, ops[-1].result
    return None


def unsign_relu_zeros(module: Module) -> Module:
    """ReLU's ``max(x, +0.0)`` becomes ``max(x + 0.0, +0.0)``: the same bits (adding +0.0
    turns -0.0 into +0.0, the maximum's answer for it, and changes no other ``x``).

    Why: XLA orders -0.0 below +0.0 and NumPy's ``maximum`` does not, so the NumPy backend
    computes a float maximum with a kernel that fixes ties between zeros, four passes
    over memory more than ``np.maximum``. Once ``x`` cannot be -0.0, no tie can differ,
    and the code generator writes the plain ufunc (fused with the addition: one buffer).
    """
    return rewrite(module, _unsigned_zero_max)


def _is(v: Value, value: float) -> bool:
    """Whether ``v`` is a constant whose elements all have the bits of ``value``."""
    c = splat_value(v)
    return c is not None and c.dtype.kind in "iuf" and _same_bits(c, np.asarray(value, c.dtype))


def _identity(op: Op) -> Value | None:
    """The operand an op returns unchanged, if it is one: ``x * 1``, ``x / 1``, ``x - 0``,
    ``x + (-0.0)`` (``x + 0.0`` is not ``x`` for ``x = -0.0``; for integers it is), a
    conversion, reshape, transpose or broadcast to the operand's own type and order."""
    name, out, ops = op.name, op.result.type, op.operands
    if name in ("stablehlo.multiply", "stablehlo.add"):
        neutral = 1 if name == "stablehlo.multiply" else (0 if out.dtype.kind in "iu" else -0.0)
        for x, c in ((ops[0], ops[1]), (ops[1], ops[0])):
            if x.type == out and _is(c, neutral):
                return x
    if name in ("stablehlo.divide", "stablehlo.subtract") and ops[0].type == out and _is(
            ops[1], 1 if name == "stablehlo.divide" else 0):
        return ops[0]
    if name == "stablehlo.negate" and ops[0].op is not None and \
            ops[0].op.name == "stablehlo.negate":
        return ops[0].op.operands[0]
    unchanged = {"stablehlo.convert": True, "stablehlo.reshape": True,
                 "stablehlo.transpose": list(op.attrs.get("dims", ())) == sorted(
                     op.attrs.get("dims", ())),
                 "stablehlo.broadcast_in_dim": list(op.attrs.get("dims", ())) == list(
                     range(len(out.shape)))}
    if unchanged.get(name) and ops[0].type == out:
        return ops[0]
    return None


def _trivial_reduce(op: Op) -> tuple[list[Op], Value] | None:
    """A ``reduce`` over dimensions of size 1 (or none), whose init is the identity of
    its operation, only drops those dimensions: a reshape."""
    if op.name != "stablehlo.reduce" or len(op.operands) != 2:
        return None
    x, init = op.operands
    if any(x.type.shape[d] != 1 for d in op.attrs["dimensions"]):
        return None
    applies, identity = compact_reduce_body(op), splat_value(init)
    expected = OPS[applies].identity if applies else None
    if expected is None or identity is None:
        return None
    if expected in ("lowest", "highest"):
        if x.type.dtype.kind != "f":
            return None
        expected = -np.inf if expected == "lowest" else np.inf
    elif x.type.dtype.kind == "b":
        expected = bool(expected)
    if not _same_bits(identity, np.asarray(expected).astype(x.type.dtype)):
        return None
    return _reshape(x, op.result.type)


def _reshape(x: Value, type: TensorType) -> tuple[list[Op], Value]:
    """``x`` reshaped to ``type``: nothing if it has that shape already, and a reshape of
    what a reshape (or a broadcast that only adds 1s) was given rather than of its result."""
    producer = x.op
    if producer is not None and (producer.name == "stablehlo.reshape" or _adds_ones(producer)):
        x = producer.operands[0]
    if x.type == type:
        return [], x
    new = Op("stablehlo.reshape", [x], [type])
    return [new], new.result


def _adds_ones(op: Op) -> bool:
    """A ``broadcast_in_dim`` that inserts dimensions of size 1 only: a reshape."""
    return (op.name == "stablehlo.broadcast_in_dim"
            and op.operands[0].type.size == op.result.type.size
            and list(op.attrs["dims"]) == sorted(op.attrs["dims"]))


def _log_of_exp(op: Op) -> Value | None:
    """``log(exp(x))`` is ``x``: not an exact identity (``exp`` overflows to inf above ~88
    in float32, so the two ops give inf where this gives ``x``), but XLA's algebraic
    simplifier makes the rewrite, so JAX's ``jit`` gives ``x``. Real floats only, as XLA
    on the CPU: for complex numbers log(exp(z)) wraps the imaginary part, and bfloat16 is
    computed through float32 conversions that hide the pattern from XLA."""
    if op.name != "stablehlo.log" or op.operands[0].op is None:
        return None
    inner = op.operands[0].op
    dtype = op.result.type.dtype
    if inner.name == "stablehlo.exponential" and dtype.kind == "f":  # (bfloat16 is "V")
        return inner.operands[0]
    return None


def _algebraic(op: Op, uses: dict[Value, int]) -> tuple[list[Op], Value] | None:
    same = _identity(op)
    if same is None:
        same = _log_of_exp(op)
    if same is not None:
        return [], same
    if op.name == "stablehlo.reshape" or (_adds_ones(op) and op.result.type.size > 0):
        inner = op.operands[0].op
        if inner is not None and (inner.name == "stablehlo.reshape" or _adds_ones(inner)):
            return _reshape(op.operands[0], op.result.type)
        return None
    return _trivial_reduce(op)


def algebraic_simplification(module: Module) -> Module:
    """Identities that hold bit for bit: ``x * 1``, ``x / 1``, ``x - 0`` and
    ``x + (-0.0)`` are ``x``; ``-(-x)`` is ``x``; a reshape of a reshape is one reshape; a
    conversion, reshape, transpose or broadcast that changes nothing is dropped; a
    reduction over dimensions of size 1 is a reshape (as XLA's simplifier has it, so a
    sum of one ``-0.0`` is ``-0.0`` in JAX, and in minijax's kernel too).
    One rewrite is not exact but is XLA's, so results match JAX's: ``log(exp(x))`` is
    ``x`` (see :func:`_log_of_exp`).

    Why: transformations write such things (a gradient scaled by 1.0, ``keepdims``
    reductions reshaped back and summed again), and each costs a pass over memory and a
    buffer. Run again after the others, a rewrite can expose the next one: a reshape to
    ``(8, 1)``, a sum over the 1, is a reshape of a reshape, which is nothing at all.
    """
    return rewrite(module, _algebraic)


def _same_in_body(a: Value, b: Value, equal: tuple[Value, Value], seen: dict) -> bool:
    """Whether ``a`` and ``b`` (values of a loop body) are equal in every iteration, given
    that the two block arguments in ``equal`` are."""
    if a is b or {a, b} == set(equal):
        return True
    key = (a, b)
    if key not in seen:
        x, y = a.op, b.op
        seen[key] = (x is not None and y is not None and x.name == y.name and not x.regions
                     and not y.regions and is_pure(x) and a.index == b.index
                     and a.type == b.type and len(x.operands) == len(y.operands)
                     and _freeze(x.attrs) == _freeze(y.attrs)
                     and all(_same_in_body(u, v, equal, seen)
                             for u, v in zip(x.operands, y.operands)))
    return seen[key]


def _redundant_carry(op: Op) -> tuple[int, Value | None] | None:
    """A carry of a ``while`` that need not be one: (k, None) if the body passes it on
    unchanged (it is its initial value throughout), (k, j) if it always equals carry j."""
    cond, body = op.regions
    returned = body.terminator.operands
    for k, arg in enumerate(body.args):
        if returned[k] is arg:
            return k, op.operands[k]
        for j in range(k):
            if op.operands[j] is op.operands[k] and _same_in_body(
                    returned[j], returned[k], (body.args[j], body.args[k]), {}):
                return k, j
    return None


def _drop_carry(func: Func, op: Op, k: int, value: Value, inner: tuple[Value, Value]) -> None:
    """Remove carry ``k``: inside, its arguments read ``inner`` (cond's, body's); outside,
    its result reads ``value``."""
    cond, body = op.regions
    _replace_uses(cond, {cond.args[k]: inner[0]})
    _replace_uses(body, {body.args[k]: inner[1]})
    _replace_uses(func.body, {op.results[k]: value})
    for values in (op.operands, op.results, cond.args, body.args, body.terminator.operands):
        del values[k]
    for i, r in enumerate(op.results):
        r.index = i


def simplify_loop_carries(module: Module) -> Module:
    """Drop the carries of ``while`` loops that are not really carried: one the body
    returns unchanged becomes its initial value, read directly; one that starts like
    another and is updated like it (``scan``'s partial evaluation saves the same residual
    twice) becomes that other one. (XLA's while-loop simplifier does the same.)

    Why: every carry is a name packed and unpacked at each iteration, and a carried buffer
    written twice costs memory and a copy per iteration; once two carries are one, CSE
    merges the slices the next loop reads from them.
    """
    for func in module.funcs:
        for op in [o for o in walk_ops(func.body) if o.name == "stablehlo.while"]:
            while len(op.operands) > 1 and (found := _redundant_carry(op)) is not None:
                k, other = found
                cond, body = op.regions
                if isinstance(other, Value):
                    _drop_carry(func, op, k, other, (other, other))
                else:
                    _drop_carry(func, op, k, op.results[other],
                                (cond.args[other], body.args[other]))
    return module


# ---------------------------------------------------------------------------------------
# Rematerialization
# ---------------------------------------------------------------------------------------

# How many elementwise ops a recomputation may repeat.
MAX_REMAT_OPS = 3


def rematerialize(module: Module) -> Module:
    """Compute a cheap elementwise value again for its last use, when the values it is
    computed from are kept alive until then anyway, and the gap is long: so that the
    first copy dies after its earlier uses.

    Why: a training step keeps each layer's pre-activation ``z`` and its activation
    ``h = max(z, 0)`` from the forward pass to the backward pass: two arrays per layer,
    where a hand-written step keeps one. Since the backward pass needs ``z`` (for the
    gradient of the activation), ``h`` can be recomputed from it, at the cost of one
    elementwise pass, and the peak memory drops by one array per layer. XLA
    rematerializes too, under memory pressure. The pass runs after fusion, which has
    moved each elementwise tree to its consumer (the derivative of ReLU, computed from
    ``z``, to the backward pass), so that ``z`` is seen alive as long as it really is,
    and a fusion is recomputed whole. Only values of the functions' own bodies
    (not of loop bodies) are rematerialized; the gap is long if some op in it makes an
    array as large as the value (keeping the value would add to that op's memory).
    """
    for func in module.funcs:
        while _remat_one(func.body):
            pass
    return module


def _remat_one(block: Block) -> bool:
    """Rematerialize one value of ``block`` (True) or find none (False)."""
    users: dict[Value, list[int]] = {}
    for i, op in enumerate(block.ops):
        for inner in [op, *(o for region in op.regions for o in walk_ops(region))]:
            for v in inner.operands:
                users.setdefault(v, []).append(i)
    for op in block.ops:
        if len(op.results) != 1 or not _elementwise_like(op):
            continue
        uses = users.get(op.result, [])
        if len(uses) < 2 or op.result in block.terminator.operands:
            continue
        last, previous = uses[-1], uses[-2]
        user = block.ops[last]
        if last == previous or op.result not in user.operands or not any(
                r.type.size >= op.result.type.size
                for o in block.ops[previous + 1:last] for r in o.results):
            continue
        copies = _recompute(op.result, lambda v, last=last: v.op is None
                            or max(users.get(v, [0])) >= last)
        if copies is None:
            continue
        block.ops[last:last] = copies
        user.operands = [copies[-1].result if v is op.result else v for v in user.operands]
        return True
    return False


def _elementwise_like(op: Op) -> bool:
    """An elementwise op, or a fusion of them."""
    return op.name == "minijax.fusion" or (OPS[op.name].elementwise and not op.regions)


def _recompute(v: Value, alive: Callable[[Value], bool]) -> list[Op] | None:
    """Copies of the elementwise ops that compute ``v`` from constants and ``alive``
    values (in order, ``v``'s last), or None if that takes more than MAX_REMAT_OPS."""
    copies: list[Op] = []
    mapping: dict[Value, Value] = {}

    def visit(u: Value) -> bool:
        op = u.op
        if u in mapping or (u is not v and alive(u)) or op.name == "stablehlo.constant":
            return True
        if len(copies) >= MAX_REMAT_OPS or not _elementwise_like(op) or not is_pure(op) \
                or not all(visit(w) for w in op.operands):
            return False
        copy = Op(op.name, [mapping.get(w, w) for w in op.operands],
                  [r.type for r in op.results], dict(op.attrs),
                  [clone_block(region, {}) for region in op.regions])
        mapping[u] = copy.results[u.index]
        copies.append(copy)
        return True

    return copies if visit(v) else None


DEFAULT_PIPELINE: tuple[str, ...] = ("inline_calls", "common_subexpression_elimination",
                                     "constant_folding", "simplify_select",
                                     "simplify_tie_compares",
                                     "fold_transpose_into_dot", "algebraic_simplification",
                                     "simplify_loop_carries", "unsign_relu_zeros",
                                     "common_subexpression_elimination",
                                     "dead_code_elimination", "fuse_elementwise",
                                     "rematerialize")
