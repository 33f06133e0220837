"""Pytrees: nested Python containers whose leaves are the values a transformation sees.

A function such as ``loss(params, batch)`` takes dicts of lists of arrays, not flat
arrays. Every transformation (``jit``, ``grad``, ``vmap``) therefore starts by
*flattening* its arguments into a list of leaves plus a :class:`PyTreeDef` that records
the containers around them, works on the flat list, and finally *unflattens* results
back into containers of the same shape::

    >>> leaves, treedef = tree_flatten((1, {'b': [2, 3], 'a': 4}))
    >>> leaves
    [1, 4, 2, 3]
    >>> treedef
    PyTreeDef((*, {'a': *, 'b': [*, *]}))

Which Python types are containers ("nodes") is decided by a registry that maps a type
to a pair of functions: ``flatten(node) -> (children, aux_data)`` and
``unflatten(aux_data, children) -> node``. The auxiliary data is whatever, besides the
children, is needed to rebuild the node (a dict's keys, say); it is part of the
structure, so two trees with different aux data have different treedefs. Tuples,
lists, dicts, ``None``, ``OrderedDict`` and ``defaultdict`` are registered below;
namedtuples are recognised by their ``_fields``; users add their own types with
:func:`register_pytree_node`. Anything else -- numbers, arrays, strings -- is a leaf.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, NamedTuple


class _NodeKind(NamedTuple):
    """How to take a node type apart and put it back together; ``keys(node, aux_data,
    num_children)``, if given, names each child for key paths (else they are numbered)."""

    flatten: Callable[[Any], tuple[Iterable[Any], Any]]
    unflatten: Callable[[Any, tuple[Any, ...]], Any]
    keys: Callable[[Any, Any, int], list[Any]] | None = None


# Dispatch on the exact type: a dict subclass is a leaf unless it is registered itself.
_registry: dict[type, _NodeKind] = {}


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Any]],
    unflatten_func: Callable[[Any, tuple[Any, ...]], Any],
) -> None:
    """Make ``nodetype`` a pytree node.

    ``flatten_func(node)`` returns ``(children, aux_data)``; ``unflatten_func(aux_data,
    children)`` rebuilds the node, receiving the children as a tuple. Aux data should be
    hashable and comparable with ``==``: treedefs are compared (for instance by ``jit``'s
    cache) by comparing it.
    """
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = _NodeKind(flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register ``cls`` using its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod. Returns ``cls`` unchanged."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


@functools.cache
def _namedtuple_kind(cls: type) -> _NodeKind:
    """Namedtuples are nodes without registration: every class needs its own unflatten
    (to call the right constructor), so build it once per class."""
    return _NodeKind(lambda node: (node, None), lambda _, children: cls(*children),
                     lambda _, __, ___: [GetAttrKey(field) for field in cls._fields])


def _node_kind(tree: Any) -> _NodeKind | None:
    """The kind of node ``tree`` is, or None if it is a leaf."""
    kind = _registry.get(type(tree))
    if kind is None and isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return _namedtuple_kind(type(tree))
    return kind


class PyTreeDef:
    """The structure of a pytree: every node's type and aux data, with ``*`` for leaves.

    A treedef is a tree itself: each node holds the treedefs of its children. A leaf
    has node type None; the value ``None`` is a node (of type ``NoneType``) with no
    children, so it contributes no leaves. Treedefs are immutable, hashable and compared
    with ``==`` (same node types, equal aux data, equal children), which is what lets
    ``jit`` use them as cache keys.
    """

    __slots__ = ("_type", "_data", "_children", "_kind", "num_leaves", "num_nodes", "_hash")

    def __init__(self, node_type, node_data, children, kind, num_leaves, num_nodes):
        self._type = node_type
        self._data = node_data
        self._children = children
        self._kind = kind
        self.num_leaves = num_leaves
        self.num_nodes = num_nodes
        self._hash: int | None = None  # computed when first asked (``jit`` asks every call)

    def children(self) -> list[PyTreeDef]:
        """The treedefs of this node's children (empty for a leaf)."""
        return list(self._children)

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root node, or None for a leaf."""
        return None if self._type is None else (self._type, self._data)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Rebuild a tree of this structure around ``leaves``, consumed in order."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            few_or_many = "few" if len(leaves) < self.num_leaves else "many"
            raise ValueError(
                f"Too {few_or_many} leaves for PyTreeDef; "
                f"expected {self.num_leaves}, got {len(leaves)}."
            )
        return self._build(iter(leaves))

    def _build(self, leaves: Iterator[Any]) -> Any:
        if self._type is None:
            return next(leaves)
        children = tuple([child._build(leaves) for child in self._children])
        return self._kind.unflatten(self._data, children)

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Flatten ``tree`` only as deep as this treedef goes.

        Where this treedef has a leaf, the whole corresponding subtree of ``tree`` becomes
        one entry of the result. This is how an argument such as ``vmap``'s ``in_axes``,
        given as a *prefix* of the arguments' structure, is matched against the arguments.
        Raises ValueError if ``tree`` does not have this structure above those leaves.
        """
        leaves: list[Any] = []
        self._match(tree, leaves)
        return leaves

    def _match(self, tree: Any, leaves: list[Any]) -> None:
        if self._type is None:
            leaves.append(tree)
            return
        for child_def, child in zip(self._children, self._children_of(tree), strict=True):
            child_def._match(child, leaves)

    def _children_of(self, tree: Any) -> list[Any]:
        """The children of ``tree``, after checking that its root node is like ours."""
        if type(tree) is not self._type:
            raise ValueError(_wrong_type_message(self._type, tree))
        children, data = self._kind.flatten(tree)
        children = list(children)
        if data != self._data:
            raise ValueError(_wrong_data_message(self._type, self._data, data, tree))
        if len(children) != len(self._children):
            raise ValueError(
                _wrong_arity_message(self._type, len(self._children), len(children), tree)
            )
        return children

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The treedef of this structure with every leaf replaced by ``inner``."""
        if self._type is None:
            return inner
        children = tuple([child.compose(inner) for child in self._children])
        return _node_def(self._type, self._data, children, self._kind)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self is other or (
            self._type is other._type
            and self._data == other._data
            and self._children == other._children
        )

    def __hash__(self) -> int:
        # Aux data is left out because users may pick unhashable aux data (a list, say).
        # Equal treedefs still hash equally, which is all a dict needs.
        if self._hash is None:
            self._hash = hash((self._type, self._children))
        return self._hash

    def __repr__(self) -> str:
        return f"PyTreeDef({self._show()})"

    def _show(self) -> str:
        """This node as JAX prints it: containers as Python literals, leaves as ``*``."""
        if self._type is None:
            return "*"
        shown = [child._show() for child in self._children]
        if self._type is type(None):
            return "None"
        if self._type is tuple:
            return "(" + ", ".join(shown) + ("," if len(shown) == 1 else "") + ")"
        if self._type is list:
            return "[" + ", ".join(shown) + "]"
        if self._type is dict:
            items = [f"{key!r}: {child}" for key, child in zip(self._data, shown, strict=True)]
            return "{" + ", ".join(items) + "}"
        if self._kind is _namedtuple_kind(self._type):
            label = f"namedtuple[{self._type.__name__}]"
        else:
            label = f"{self._type.__name__}[{self._data}]"
        return f"CustomNode({label}, [{', '.join(shown)}])"


_BUILTIN_NAMES = {tuple: "tuple", list: "list", dict: "dict", type(None): "None"}


def _wrong_type_message(node_type: type, tree: Any) -> str:
    if node_type in _BUILTIN_NAMES:
        return f"Expected {_BUILTIN_NAMES[node_type]}, got {tree!r}."
    return f"Custom node type mismatch: expected type: {node_type}, value: {tree!r}."


def _wrong_data_message(node_type: type, expected: Any, got: Any, tree: Any) -> str:
    if node_type is dict:
        return f"Dict key mismatch; expected keys: {expected}; present keys: {got}."
    return f"Mismatch custom node data: {expected!r} != {got!r}; value: {tree!r}."


def _wrong_arity_message(node_type: type, expected: int, got: int, tree: Any) -> str:
    noun = _BUILTIN_NAMES.get(node_type)
    if noun is None:
        return f"Custom type arity mismatch: {got} != {expected}; value: {tree!r}."
    return f"{noun.capitalize()} arity mismatch: {got} != {expected}; {noun}: {tree!r}."


_LEAF = PyTreeDef(None, None, (), None, 1, 1)  # every leaf shares this one treedef


def _node_def(node_type, node_data, children, kind) -> PyTreeDef:
    num_leaves = num_nodes = 0
    for child in children:
        num_leaves += child.num_leaves
        num_nodes += child.num_nodes
    return PyTreeDef(node_type, node_data, children, kind, num_leaves, num_nodes + 1)


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """Split ``tree`` into ``(leaves, treedef)``, leaves in left-to-right order.

    ``is_leaf(subtree)``, if given, is asked about every subtree before it is opened
    (the root first); returning True keeps that subtree whole, as one leaf.
    """
    leaves: list[Any] = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def _flatten(tree: Any, is_leaf, leaves: list[Any]) -> PyTreeDef:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    kind = _node_kind(tree)
    if kind is None:
        leaves.append(tree)
        return _LEAF
    children, data = kind.flatten(tree)
    child_defs = tuple([_flatten(child, is_leaf, leaves) for child in children])
    return _node_def(type(tree), data, child_defs, kind)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild the tree described by ``treedef`` around ``leaves``."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, in the order :func:`tree_flatten` gives them."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Apply ``f`` leafwise: ``f(leaf, *corresponding leaves of rest)``.

    ``tree`` decides the structure of the result. Each tree in ``rest`` must have that
    structure, except that where ``tree`` has a leaf it may have a whole subtree, which
    ``f`` receives as it is (``tree`` is a *prefix* of each of ``rest``).
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to_or_explain(treedef, other, "tree_map tree") for other in rest]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others, strict=True))


def _flatten_up_to_or_explain(treedef: PyTreeDef, tree: Any, name: str) -> list[Any]:
    """``treedef.flatten_up_to(tree)``, but a mismatch is reported with its key path."""
    try:
        return treedef.flatten_up_to(tree)
    except ValueError:
        found = _find_mismatch(treedef, tree)
        if found is None:  # the ValueError did not come from a structure mismatch
            raise
        path, reason = found
        raise ValueError(
            f"pytree structure error at key path\n    {name}{path}\n{reason}"
        ) from None


def _find_mismatch(treedef: PyTreeDef, tree: Any) -> tuple[str, str] | None:
    """The key path (like ``[1]['a']``) to the first node where ``tree`` differs from
    ``treedef``, and why. The happy path never comes here, so it can afford to re-walk."""
    if treedef._type is None:
        return None
    try:
        children = treedef._children_of(tree)
    except ValueError as e:
        return "", str(e)
    for key, child_def, child in zip(
        _child_keys(treedef), treedef._children, children, strict=True
    ):
        found = _find_mismatch(child_def, child)
        if found is not None:
            return key + found[0], found[1]
    return None


# Key paths -----------------------------------------------------------------------------
# A key path is a tuple of entries, one per node on the way from the root to a leaf, each
# saying how the child is reached: ``DictKey('w')`` is ``['w']``, ``SequenceKey(0)`` is
# ``[0]``, ``GetAttrKey('x')`` is ``.x`` (namedtuples, dataclasses), and nodes registered
# without keys number their children: ``FlattenedIndexKey(0)``.


class _KeyEntryBase:
    """Printed as Python would spell the step: ``_TEMPLATE`` filled with the one field."""

    _TEMPLATE: ClassVar[str]

    def __str__(self) -> str:
        return self._TEMPLATE.format(*dataclasses.astuple(self))


@dataclasses.dataclass(frozen=True)
class DictKey(_KeyEntryBase):
    key: Any
    _TEMPLATE: ClassVar[str] = "[{!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey(_KeyEntryBase):
    idx: int
    _TEMPLATE: ClassVar[str] = "[{}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey(_KeyEntryBase):
    name: str
    _TEMPLATE: ClassVar[str] = ".{}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey(_KeyEntryBase):
    key: int
    _TEMPLATE: ClassVar[str] = "[<flat index {}>]"


KeyEntry = DictKey | SequenceKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple[KeyEntry, ...]


def _simple_key(entry: Any) -> str:
    for attribute in ("key", "idx", "name"):
        if hasattr(entry, attribute):
            return str(getattr(entry, attribute))
    return str(entry)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``"['a'][0].x"``, or with ``simple=True`` just the keys joined
    by ``separator`` (``"a/0/x"`` for ``separator="/"``)."""
    if simple:
        return separator.join(_simple_key(k) for k in keys)
    return separator.join(str(k) for k in keys)


def _flatten_with_path(tree: Any, is_leaf, takes_path: bool, path: tuple,
                       out: list[tuple[KeyPath, Any]]) -> None:
    if is_leaf is not None and (is_leaf(path, tree) if takes_path else is_leaf(tree)):
        out.append((path, tree))
        return
    kind = _node_kind(tree)
    if kind is None:
        out.append((path, tree))
        return
    children, data = kind.flatten(tree)
    children = list(children)
    for key, child in zip(_key_entries(kind, tree, data, len(children)), children,
                          strict=True):
        _flatten_with_path(child, is_leaf, takes_path, (*path, key), out)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes with its key path."""
    pairs: list[tuple[KeyPath, Any]] = []
    _flatten_with_path(tree, is_leaf, is_leaf_takes_path, (), pairs)
    if is_leaf_takes_path:  # the treedef must stop where the paths stopped
        stopped = {id(leaf) for _, leaf in pairs}
        return pairs, tree_structure(tree, lambda x: id(x) in stopped)
    return pairs, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """The ``(key path, leaf)`` pairs of ``tree``."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like :func:`tree_map`, but ``f(path, leaf, *others)`` also receives the key path."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [_flatten_up_to_or_explain(treedef, other, "tree_map_with_path tree")
              for other in rest]
    return treedef.unflatten(f(path, leaf, *xs)
                             for (path, leaf), *xs in zip(pairs, *others, strict=True))


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable[[Any], Any],
                              unflatten_func: Callable[[Any, tuple[Any, ...]], Any],
                              flatten_func: Callable[[Any], Any] | None = None) -> None:
    """Register a node whose ``flatten_with_keys(node)`` returns ``([(key, child), ...],
    aux_data)``, so that key paths name its children."""
    def flatten(node: Any) -> tuple[list[Any], Any]:
        pairs, data = flatten_with_keys(node)
        return [child for _, child in pairs], data

    def keys(node: Any, data: Any, num_children: int) -> list[Any]:
        if node is None:  # asked from a treedef (an error message): no instance to ask
            return [FlattenedIndexKey(i) for i in range(num_children)]
        return [key for key, _ in flatten_with_keys(node)[0]]

    register_pytree_node(nodetype, flatten_func or flatten, unflatten_func)
    _registry[nodetype] = _registry[nodetype]._replace(keys=keys)


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type:
    """Register a dataclass: ``data_fields`` are children (leaves or subtrees),
    ``meta_fields`` static aux data; by default every field is data unless marked
    ``field(metadata=dict(static=True))``. Returns the class, so it works as a decorator."""
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when {nodetype} is not a dataclass")
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten(node: Any) -> tuple[list[Any], tuple[Any, ...]]:
        return ([getattr(node, name) for name in data_fields],
                tuple(getattr(node, name) for name in meta_fields))

    def unflatten(meta: tuple[Any, ...], children: tuple[Any, ...]) -> Any:
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, children)))

    register_pytree_node(nodetype, flatten, unflatten)
    _registry[nodetype] = _registry[nodetype]._replace(
        keys=lambda _, __, ___: [GetAttrKey(name) for name in data_fields])
    return nodetype


def _child_keys(treedef: PyTreeDef) -> list[str]:
    """How each child is reached from its parent, spelled as Python would index it."""
    return [str(key) for key in _key_entries(treedef._kind, None, treedef._data,
                                             len(treedef._children))]


def _key_entries(kind: _NodeKind, node: Any, data: Any, num_children: int) -> list[Any]:
    if kind.keys is not None:
        return list(kind.keys(node, data, num_children))
    return [FlattenedIndexKey(i) for i in range(num_children)]


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf of ``tree`` is truthy (True for a tree with no leaves)."""
    return all(tree_leaves(tree, is_leaf))


_NO_INITIALIZER = object()


def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """``functools.reduce`` over the leaves of ``tree``."""
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, tree_leaves(tree, is_leaf))
    return functools.reduce(function, tree_leaves(tree, is_leaf), initializer)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose):
    """Turn an outer tree of inner trees into an inner tree of outer trees.

    For example a list of ``(a, b)`` pairs becomes a pair of lists. This is how
    ``jacobian`` of a function with tree inputs and outputs arranges its result.
    ``inner_treedef=None`` means: take it from the first inner tree.
    """
    leaves, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    rows = [leaves[i * inner_size : (i + 1) * inner_size] for i in range(outer_size)]
    columns = [outer_treedef.unflatten(column) for column in zip(*rows, strict=True)]
    return inner_treedef.unflatten(columns)


class _HashableCallableShim:
    """Hides a ``functools.partial`` inside a :class:`Partial`.

    ``functools.partial(partial(f, a), b)`` merges into ``partial(f, a, b)``, which
    would turn the inner partial's ``a`` into a leaf of the outer Partial. Wrapping
    keeps the inner function opaque, and delegating ``==`` and ``hash`` to it keeps
    treedefs built from the same inner function equal.
    """

    def __init__(self, fun: Callable[..., Any]):
        self.fun = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _HashableCallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __hash__(self) -> int:
        return hash(self.fun)

    def __repr__(self) -> str:
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its bound arguments are the children,
    and the function is aux data. Transformations can therefore take and return
    functions with bound arrays, e.g. ``jit(lambda f, x: f(x))(Partial(jnp.add, y), x)``
    traces ``y`` like any other argument, while ``jnp.add`` stays static.
    """

    def __new__(cls, func: Callable[..., Any], *args: Any, **kw: Any) -> Partial:
        if isinstance(func, functools.partial):
            func = _HashableCallableShim(func)
        return super().__new__(cls, func, *args, **kw)


def _sorted_keys(d: dict) -> list[Any]:
    """A dict's keys in sorted order, so that the structure of ``{'a': 1, 'b': 2}`` does
    not depend on insertion order."""
    try:
        return sorted(d)
    except TypeError as e:
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") from e


def _flatten_dict(d: dict) -> tuple[list[Any], list[Any]]:
    keys = _sorted_keys(d)
    return [d[key] for key in keys], keys


def _flatten_defaultdict(d: collections.defaultdict):
    # Plain sorted(): JAX lets an unsortable defaultdict raise the TypeError itself.
    keys = tuple(sorted(d))
    return [d[key] for key in keys], (d.default_factory, keys)


def _register_builtin(nodetype: type, flatten, unflatten, keys=None) -> None:
    register_pytree_node(nodetype, flatten, unflatten)
    _registry[nodetype] = _registry[nodetype]._replace(keys=keys)


def _sequence_keys(_: Any, __: Any, num_children: int) -> list[SequenceKey]:
    return [SequenceKey(i) for i in range(num_children)]


def _dict_keys(_: Any, keys: Iterable[Any], __: int = 0) -> list[DictKey]:
    return [DictKey(key) for key in keys]


_register_builtin(tuple, lambda t: (t, None), lambda _, children: children, _sequence_keys)
_register_builtin(list, lambda l: (l, None), lambda _, children: list(children),
                  _sequence_keys)
_register_builtin(dict, _flatten_dict,
                  lambda keys, children: dict(zip(keys, children, strict=True)), _dict_keys)
register_pytree_node(type(None), lambda _: ((), None), lambda _, __: None)
_register_builtin(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d)),
    lambda keys, children: collections.OrderedDict(zip(keys, children, strict=True)),
    _dict_keys,
)
_register_builtin(
    collections.defaultdict,
    _flatten_defaultdict,
    lambda data, children: collections.defaultdict(data[0], zip(data[1], children, strict=True)),
    lambda _, data, __: _dict_keys(_, data[1]),
)
register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)


# ---------------------------------------------------------------------------------------
# Where two trees differ, and how error messages name a leaf
# ---------------------------------------------------------------------------------------


def leaf_paths(treedef: PyTreeDef) -> list[str]:
    """The key path of every leaf of ``treedef``, like ``[0]['w']`` (``""`` for a bare leaf)."""
    if treedef.node_data() is None:
        return [""]
    keys = _child_keys(treedef)
    return [key + path for key, child in zip(keys, treedef.children(), strict=True)
            for path in leaf_paths(child)]

def structure_differences(tree1: PyTreeDef, tree2: PyTreeDef, leaf: str,
                          path: str = "") -> list[tuple[str, str, str, str]]:
    """Where two tree structures differ: ``(path, thing1, thing2, explanation)`` for each
    place, ``thing`` describing the node there (``leaf`` is how a leaf is described)."""
    node1, node2 = tree1.node_data(), tree2.node_data()
    if node1 is None and node2 is None:
        return []
    type1 = leaf if node1 is None else str(node1[0])
    type2 = leaf if node2 is None else str(node2[0])
    if node1 is None or node2 is None or node1[0] is not node2[0]:
        return [(path, type1, type2, "their Python types differ")]
    kind, children1, children2 = node1[0], tree1.children(), tree2.children()
    if kind in (list, tuple) and len(children1) != len(children2):
        return [(path, f"{kind.__name__} of length {len(children1)}",
                 f"{kind.__name__} of length {len(children2)}", "the lengths do not match")]
    if len(children1) != len(children2):
        def count(n: int) -> str:
            return f"with {n} child{'ren' if n > 1 else ''}"
        why = "the numbers of children do not match"
        if kind is dict:
            extra = " ".join(sorted(map(repr, set(node1[1]) ^ set(node2[1]))))
            why += f", with the symmetric difference of key sets: {{{extra}}}"
        return [(path, f"{type1} {count(len(children1))}", f"{type2} {count(len(children2))}",
                 why)]
    data1, data2 = node1[1], node2[1]
    if data1 != data2:
        show1, show2 = (tuple(data1), tuple(data2)) if kind is dict else (data1, data2)
        return [(path, f"{type1} with pytree metadata {show1}",
                 f"{type2} with pytree metadata {show2}",
                 "the pytree node metadata does not match")]
    differences = []
    for key, child1, child2 in zip(_child_keys(tree1), children1, children2):
        differences += structure_differences(child1, child2, leaf, path + key)
    return differences
