"""Tests for minijax.tree_util: conformance with jax.tree_util, plus properties.

The conformance tests run the same tree through both libraries and compare what a user
can observe: leaves, printed treedefs, counts, rebuilt trees, and which errors are raised.
"""

import collections
import functools
import operator
import typing

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minijax import tree_util as mtu

# --- types defined here and registered as pytree nodes in both libraries --------------

P = collections.namedtuple("P", ["x", "y"])
Q = collections.namedtuple("Q", ["x", "y"])


class Typed(typing.NamedTuple):
    a: int
    b: typing.Any = None


class Point:
    """Registered with register_pytree_node; its name is aux data."""

    def __init__(self, x, y, name="p"):
        self.x, self.y, self.name = x, y, name

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y, self.name) == (
            other.x,
            other.y,
            other.name,
        )

    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r}, {self.name!r})"


def flatten_point(p):
    return (p.x, p.y), p.name


def unflatten_point(name, children):
    return Point(*children, name)


class Pair:
    """Registered with register_pytree_node_class; carries unhashable aux data (a list)."""

    def __init__(self, a, b, tags=()):
        self.a, self.b, self.tags = a, b, list(tags)

    def tree_flatten(self):
        return [self.a, self.b], self.tags

    @classmethod
    def tree_unflatten(cls, tags, children):
        return cls(*children, tags)

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b, self.tags) == (
            other.a,
            other.b,
            other.tags,
        )

    def __repr__(self):
        return f"Pair({self.a!r}, {self.b!r}, {self.tags!r})"


mtu.register_pytree_node(Point, flatten_point, unflatten_point)
mtu.register_pytree_node_class(Pair)


@pytest.fixture(scope="module")
def jtu():
    """jax.tree_util, with the test classes registered there too."""
    jax = pytest.importorskip("jax")
    jax.tree_util.register_pytree_node(Point, flatten_point, unflatten_point)
    jax.tree_util.register_pytree_node_class(Pair)
    return jax.tree_util


ARRAY = np.arange(3.0, dtype=np.float32)

TREES = {
    "int leaf": 1,
    "string leaf": "str",
    "array leaf": ARRAY,
    "None": None,
    "empty tuple": (),
    "empty list": [],
    "empty dict": {},
    "1-tuple": (1,),
    "nested list": [1, [2, 3]],
    "dict sorted": {"b": 1, "a": 2},
    "mixed": (1, {"a": 2, "b": [3, 4]}),
    "None inside": (None, 1, [None, {"a": None}]),
    "only None": [None, (None,)],
    "empty inside": ((), [], {}, [[]]),
    "nested empty dicts": {"a": {}, "b": {"c": [[]]}},
    "insertion order c,a,b": [{"c": 1, "a": 2, "b": 3}],
    "numeric keys": {-1: "x", 2.5: "y", 1: "z"},
    "tuple keys": {(1, 2): 1, (0, 3): 2},
    "single None key": {None: 1},
    "namedtuple": P(1, 2),
    "namedtuple with None": P(None, [1]),
    "typing.NamedTuple": Typed(1, (2, 3)),
    "OrderedDict": collections.OrderedDict([("b", 1), ("a", 2)]),
    "defaultdict": collections.defaultdict(list, {"b": 1, "a": 2}),
    "registered node": Point(1, (2, 3), "hi"),
    "registered with None": Point(None, [1], "x"),
    "node class": Pair(1, {"z": 2, "y": [3]}, ["t"]),
    "all kinds": [Pair(P(1, 2), None), collections.OrderedDict(z=Point(1, ARRAY, "n"))],
    "dict of namedtuple": {"a": P(x={"k": 1}, y=(2,))},
    "deep": [[[[1.5]]], {"q": (True, 2j)}],
}
TREE_IDS = list(TREES)


def tree_param(test):
    return pytest.mark.parametrize("tree", [TREES[k] for k in TREE_IDS], ids=TREE_IDS)(test)


# --- conformance: the same tree through both libraries ---------------------------------


@tree_param
def test_flatten_matches_jax(jtu, tree):
    leaves, treedef = mtu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    assert len(leaves) == len(jax_leaves)
    assert all(a is b for a, b in zip(leaves, jax_leaves, strict=True))
    assert repr(treedef) == repr(jax_treedef)
    assert str(treedef) == str(jax_treedef)
    assert treedef.num_leaves == jax_treedef.num_leaves
    assert treedef.num_nodes == jax_treedef.num_nodes
    assert [repr(c) for c in treedef.children()] == [repr(c) for c in jax_treedef.children()]
    assert treedef.node_data() == jax_treedef.node_data()


@tree_param
def test_leaves_and_structure_match_jax(jtu, tree):
    assert all(a is b for a, b in zip(mtu.tree_leaves(tree), jtu.tree_leaves(tree), strict=True))
    assert repr(mtu.tree_structure(tree)) == repr(jtu.tree_structure(tree))


@tree_param
def test_round_trip_matches_jax(jtu, tree):
    leaves, treedef = mtu.tree_flatten(tree)
    rebuilt = mtu.tree_unflatten(treedef, leaves)
    expected = jtu.tree_unflatten(jtu.tree_structure(tree), leaves)
    assert type(rebuilt) is type(expected)
    assert repr(rebuilt) == repr(expected)  # the same, down to the (sorted) dict order
    assert repr(treedef.unflatten(leaves)) == repr(rebuilt)


@tree_param
def test_tree_map_matches_jax(jtu, tree):
    def tag(x):
        return ("leaf", str(x))

    assert repr(mtu.tree_map(tag, tree)) == repr(jtu.tree_map(tag, tree))


@tree_param
def test_treedef_equal_to_itself_and_hash_stable(tree):
    a, b = mtu.tree_structure(tree), mtu.tree_structure(tree)
    assert a == b and not a != b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


@tree_param
def test_flatten_up_to_own_structure(tree):
    treedef = mtu.tree_structure(tree)
    assert all(
        a is b for a, b in zip(treedef.flatten_up_to(tree), mtu.tree_leaves(tree), strict=True)
    )


# --- structure mismatches and prefixes -------------------------------------------------

MISMATCHES = {
    "tuple length": ((1, 2), (3, 4, 5)),
    "tuple vs list": ((1, 2), [3, 4]),
    "list length": ([1, [2]], [1, []]),
    "dict keys": ({"a": 1}, {"b": 1}),
    "dict extra key": ({"a": 1}, {"a": 1, "b": 2}),
    "None vs leaf": ((1, None), (3, 4)),
    "node vs leaf": ([1, (2, 3)], [1, 2]),
    "None vs int": (None, 1),
    "dict vs None": ({"a": 1}, None),
    "namedtuple types": (P(1, 2), Q(1, 2)),
    "namedtuple vs tuple": (P(1, 2), (1, 2)),
    "OrderedDict order": (
        collections.OrderedDict(a=1, b=2),
        collections.OrderedDict(b=1, a=2),
    ),
    "OrderedDict vs dict": (collections.OrderedDict(a=1), {"a": 1}),
    "dict vs defaultdict": ({"a": 1}, collections.defaultdict(int, a=1)),
    "custom aux": (Point(1, 2, "a"), Point(1, 2, "b")),
    "inside custom": (Point(1, (2, 1), "a"), Point(1, (2, 3, 4), "a")),
    "deep": ([{"q": P(1, (2,))}], [{"q": P(1, (2, 3))}]),
}


@pytest.mark.parametrize("prefix, full", MISMATCHES.values(), ids=list(MISMATCHES))
def test_mismatch_raises_value_error_like_jax(jtu, prefix, full):
    for lib in (jtu, mtu):
        with pytest.raises(ValueError):
            lib.tree_map(lambda x, y: x, prefix, full)
        with pytest.raises(ValueError):
            lib.tree_structure(prefix).flatten_up_to(full)


@pytest.mark.parametrize(
    "prefix, full, path",
    [
        ((1, 2), (3, 4, 5), "tree_map tree\n"),
        ((1, None), (3, 4), "tree_map tree[1]\n"),
        ([{"a": (1, 2)}], [{"a": (1, 2, 3)}], "tree_map tree[0]['a']\n"),
        ({"q": P(1, (2, 1))}, {"q": P(1, (2, 3, 4))}, "tree_map tree['q'].y\n"),
        (Point(1, (2, 1)), Point(1, [2, 1]), "tree_map tree[<flat index 1>]\n"),
    ],
)
def test_mismatch_message_names_key_path(prefix, full, path):
    with pytest.raises(ValueError, match="pytree structure error") as info:
        mtu.tree_map(lambda x, y: x, prefix, full)
    assert path in str(info.value)


@pytest.mark.parametrize(
    "treedef_of, tree, message",
    [
        ((1, 2), [1, 2], "Expected tuple, got [1, 2]."),
        ((1, 2), (1, 2, 3), "Tuple arity mismatch: 3 != 2; tuple: (1, 2, 3)."),
        ([1, 2], [3], "List arity mismatch: 1 != 2; list: [3]."),
        ({"a": 1, "b": 2}, {"a": 1}, "Dict key mismatch; expected keys: ['a', 'b']; "),
        (None, 3, "Expected None, got 3."),
        (Point(1, 2, "a"), Point(1, 2, "b"), "Mismatch custom node data: 'a' != 'b'; "),
        (Point(1, 2), (1, 2), "Custom node type mismatch: expected type: "),
    ],
)
def test_flatten_up_to_messages_start_like_jax(jtu, treedef_of, tree, message):
    for lib in (jtu, mtu):
        with pytest.raises(ValueError) as info:
            lib.tree_structure(treedef_of).flatten_up_to(tree)
        assert str(info.value).startswith(message)


PREFIXES = {
    "leaf over subtree": ((1, 2), (3, [4, 5])),
    "leaf over None": ((1, 2), (3, None)),
    "None over None": ((None, 1), (None, 2)),
    "dict leaves over subtrees": ({"a": 1, "b": 2}, {"b": (1, 2), "a": {"c": 3}}),
    "whole-tree leaf": (1, {"a": [1, 2]}),
    "custom node": (Point(1, 2, "a"), Point((1, 2), [3], "a")),
    "namedtuple": (P(1, 2), P([1], {"k": 2})),
}


@pytest.mark.parametrize("prefix, full", PREFIXES.values(), ids=list(PREFIXES))
def test_prefix_trees_match_jax(jtu, prefix, full):
    def pair(x, y):
        return (x, y)

    assert repr(mtu.tree_map(pair, prefix, full)) == repr(jtu.tree_map(pair, prefix, full))
    ours = mtu.tree_structure(prefix).flatten_up_to(full)
    assert ours == jtu.tree_structure(prefix).flatten_up_to(full)


def test_tree_map_several_trees():
    assert mtu.tree_map(lambda x, y, z: x + y + z, (1, [2]), (10, [20]), (100, [200])) == (
        111,
        [222],
    )


# --- unflatten ------------------------------------------------------------------------


@pytest.mark.parametrize("count, start", [(1, "Too few leaves"), (3, "Too many leaves")])
def test_unflatten_wrong_number_of_leaves(jtu, count, start):
    for lib in (jtu, mtu):
        treedef = lib.tree_structure((1, 2))
        with pytest.raises(ValueError, match=f"^{start} for PyTreeDef; expected 2"):
            lib.tree_unflatten(treedef, list(range(count)))


def test_unflatten_accepts_any_iterable():
    treedef = mtu.tree_structure({"b": 1, "a": [2, None]})
    assert treedef.unflatten(x for x in "xy") == {"a": ["x", None], "b": "y"}


def test_unflatten_gives_children_as_a_tuple(jtu):
    seen = []

    class Spy:
        def __init__(self, *xs):
            self.xs = xs

    for lib in (jtu, mtu):
        lib.register_pytree_node(
            Spy,
            lambda s: (list(s.xs), "aux"),
            lambda aux, children: seen.append((aux, type(children), children)) or Spy(),
        )
        lib.tree_unflatten(lib.tree_structure(Spy(1, [2])), [3, 4])
    assert seen[0] == seen[1] == ("aux", tuple, (3, [4]))


def test_flatten_calls_user_flatten_once_per_node():
    calls = []

    class Counted:
        pass

    mtu.register_pytree_node(
        Counted, lambda c: calls.append(c) or ((), None), lambda aux, ch: Counted()
    )
    tree = [Counted(), {"k": Counted()}]
    mtu.tree_flatten(tree)
    assert calls == [tree[0], tree[1]["k"]]


# --- registration ----------------------------------------------------------------------


def test_register_twice_raises_like_jax(jtu):
    class Twice:
        pass

    messages = []
    for lib in (jtu, mtu):
        lib.register_pytree_node(Twice, lambda t: ((), None), lambda aux, ch: Twice())
        with pytest.raises(ValueError) as info:
            lib.register_pytree_node(Twice, lambda t: ((), None), lambda aux, ch: Twice())
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "Duplicate custom PyTreeDef type registration" in messages[1]


@pytest.mark.parametrize("builtin", [tuple, list, dict, type(None), collections.OrderedDict])
def test_builtins_cannot_be_registered_again(builtin):
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        mtu.register_pytree_node(builtin, lambda t: ((), None), lambda aux, ch: None)


def test_register_pytree_node_class_returns_class():
    @mtu.register_pytree_node_class
    class Box:
        def __init__(self, v):
            self.v = v

        def tree_flatten(self):
            return (self.v,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    assert isinstance(Box, type)
    assert mtu.tree_map(lambda v: v * 2, Box(21)).v == 42


def test_subclasses_of_containers_are_leaves(jtu):
    class MyTuple(tuple):
        pass

    class MyDict(dict):
        pass

    for tree in (MyTuple((1, 2)), MyDict(a=1), [MyTuple(())]):
        assert repr(mtu.tree_structure(tree)) == repr(jtu.tree_structure(tree))


# --- dict keys -------------------------------------------------------------------------


def test_dict_structure_ignores_insertion_order():
    a, b = mtu.tree_structure({"a": 1, "b": 2}), mtu.tree_structure({"b": 1, "a": 2})
    assert a == b and hash(a) == hash(b)


def test_ordered_dict_structure_keeps_insertion_order():
    a = mtu.tree_structure(collections.OrderedDict(a=1, b=2))
    b = mtu.tree_structure(collections.OrderedDict(b=1, a=2))
    assert a != b


@pytest.mark.parametrize(
    "tree",
    [{1: "x", "a": 2}, {None: 1, "a": 2}, [{(1,): 1, "z": 2}]],
    ids=["int and str", "None and str", "nested"],
)
def test_unsortable_dict_keys_raise_like_jax(jtu, tree):
    messages = []
    for lib in (jtu, mtu):
        with pytest.raises(ValueError) as info:
            lib.tree_flatten(tree)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_unsortable_keys_are_fine_alone_or_ordered(jtu):
    for tree in ({object: 1}, collections.OrderedDict({1: "x", "a": 2})):
        assert repr(mtu.tree_structure(tree)) == repr(jtu.tree_structure(tree))


def test_unsortable_defaultdict_keys_raise_type_error_like_jax(jtu):
    tree = collections.defaultdict(int, {1: "x", "a": 2})
    for lib in (jtu, mtu):
        with pytest.raises(TypeError):
            lib.tree_flatten(tree)


# --- treedef equality ------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [
        ((1, 2), [1, 2]),
        ((1, 2), (1, None)),
        ((1,), (1, 2)),
        (P(1, 2), Q(1, 2)),
        (Point(1, 2, "a"), Point(1, 2, "b")),
        ({"a": 1}, {"b": 1}),
    ],
)
def test_different_structures_are_unequal_like_jax(jtu, a, b):
    assert mtu.tree_structure(a) != mtu.tree_structure(b)
    assert jtu.tree_structure(a) != jtu.tree_structure(b)


def test_treedef_equality_details():
    assert mtu.tree_structure(1) == mtu.tree_structure("different leaf")
    assert mtu.tree_structure(Pair(1, 2, ["t"])) == mtu.tree_structure(Pair(3, 4, ["t"]))
    hash(mtu.tree_structure(Pair(1, 2, ["unhashable aux"])))
    assert mtu.tree_structure((1, 2)) != 5


# --- is_leaf ---------------------------------------------------------------------------


def test_is_leaf_sees_the_same_subtrees_as_jax(jtu):
    tree = (1, None, [2, {"a": 3}], (), P(4, 5))
    seen = {}
    for lib in (jtu, mtu):
        seen[lib] = []
        lib.tree_flatten(tree, is_leaf=lambda x, s=seen[lib]: s.append(x) and False)
    assert seen[jtu] == seen[mtu]


@pytest.mark.parametrize(
    "is_leaf",
    [
        lambda x: isinstance(x, list),
        lambda x: x is None,
        lambda x: True,
        lambda x: isinstance(x, P),
    ],
    ids=["lists", "None", "everything", "namedtuples"],
)
def test_is_leaf_matches_jax(jtu, is_leaf):
    tree = (1, None, [2, {"a": 3}], P([4], None))
    ours = mtu.tree_flatten(tree, is_leaf=is_leaf)
    theirs = jtu.tree_flatten(tree, is_leaf=is_leaf)
    assert ours[0] == theirs[0]
    assert repr(ours[1]) == repr(theirs[1])
    assert repr(mtu.tree_structure(tree, is_leaf)) == repr(theirs[1])
    assert mtu.tree_leaves(tree, is_leaf) == theirs[0]
    func = lambda x: ("mapped", x)
    assert mtu.tree_map(func, tree, is_leaf=is_leaf) == jtu.tree_map(func, tree, is_leaf=is_leaf)


# --- reductions, transpose, compose ----------------------------------------------------


@pytest.mark.parametrize("tree", [[True, (1, None)], [True, (0, None)], [], {"a": "x"}])
def test_tree_all_matches_jax(jtu, tree):
    assert mtu.tree_all(tree) == jtu.tree_all(tree)


def test_tree_all_with_is_leaf(jtu):
    tree = [None, ()]
    is_none = lambda x: x is None
    assert mtu.tree_all(tree, is_leaf=is_none) == jtu.tree_all(tree, is_leaf=is_none) is False


def test_tree_reduce_matches_jax(jtu):
    tree = [1, (2, {"a": 3})]
    for args in [(), (10,)]:
        assert mtu.tree_reduce(operator.add, tree, *args) == jtu.tree_reduce(
            operator.add, tree, *args
        )
    assert mtu.tree_reduce(operator.add, tree, initializer=10) == 16
    assert mtu.tree_reduce(operator.add, [], None) is None
    for lib in (jtu, mtu):
        with pytest.raises(TypeError):
            lib.tree_reduce(operator.add, [])


def test_tree_transpose_matches_jax(jtu):
    tree = [(1, {"a": 2}), (3, {"a": 4})]
    for inner in [(0, {"a": 0}), None]:
        ours = mtu.tree_transpose(
            mtu.tree_structure([0, 0]), inner and mtu.tree_structure(inner), tree
        )
        theirs = jtu.tree_transpose(
            jtu.tree_structure([0, 0]), inner and jtu.tree_structure(inner), tree
        )
        assert ours == theirs == ([1, 3], {"a": [2, 4]})


def test_tree_transpose_mismatch_like_jax(jtu):
    tree = [(1, {"a": 2}), (3, {"a": 4, "b": 5})]
    messages = []
    for lib in (jtu, mtu):
        with pytest.raises(TypeError) as info:
            lib.tree_transpose(lib.tree_structure([0, 0]), lib.tree_structure((0, {"a": 0})), tree)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_compose_matches_jax(jtu):
    outer, inner = [0, None, (0,)], (0, {"a": 0})
    ours = mtu.tree_structure(outer).compose(mtu.tree_structure(inner))
    theirs = jtu.tree_structure(outer).compose(jtu.tree_structure(inner))
    assert repr(ours) == repr(theirs)
    assert ours.num_leaves == theirs.num_leaves and ours.num_nodes == theirs.num_nodes


# --- Partial ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, kwargs",
    [((1.0,), {}), ((), {}), ((1.0,), {"b": 2, "a": 3})],
    ids=["positional", "nothing bound", "keywords"],
)
def test_partial_is_a_pytree_like_jax(jtu, args, kwargs):
    ours = mtu.tree_flatten(mtu.Partial(operator.add, *args, **kwargs))
    theirs = jtu.tree_flatten(jtu.Partial(operator.add, *args, **kwargs))
    assert ours[0] == theirs[0]
    assert repr(ours[1]) == repr(theirs[1])


def test_partial_behaves_like_functools_partial(jtu):
    p = mtu.Partial(operator.add, 1.0)
    assert isinstance(p, functools.partial)
    assert p(2.0) == 3.0
    assert repr(p) == repr(jtu.Partial(operator.add, 1.0))
    tripled = mtu.tree_map(lambda x: x * 3, p)
    assert type(tripled) is mtu.Partial and tripled(2.0) == 5.0


def test_nested_partial_keeps_inner_function_opaque(jtu):
    inner = functools.partial(operator.add, 1)
    ours = mtu.Partial(inner, 2)
    theirs = jtu.Partial(inner, 2)
    assert repr(ours) == repr(theirs)
    assert mtu.tree_leaves(ours) == jtu.tree_leaves(theirs) == [2]
    assert repr(mtu.tree_structure(ours)) == repr(jtu.tree_structure(theirs))
    assert ours() == 3
    assert mtu.tree_structure(ours) == mtu.tree_structure(mtu.Partial(inner, 5))
    nested = mtu.Partial(mtu.Partial(operator.add, 1), 2)
    assert repr(nested) == repr(jtu.Partial(jtu.Partial(operator.add, 1), 2))


# --- properties on random trees --------------------------------------------------------

leaf_values = st.one_of(st.integers(), st.text(max_size=3), st.booleans())
dict_keys = st.text(alphabet="abcdef", min_size=1, max_size=2)


def _containers(children):
    return st.one_of(
        st.none(),
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(dict_keys, children, max_size=4),
        st.dictionaries(dict_keys, children, max_size=4).map(collections.OrderedDict),
        st.builds(P, children, children),
        st.builds(Point, children, children, dict_keys),
        st.builds(Pair, children, children, st.lists(dict_keys, max_size=2)),
    )


trees = st.recursive(leaf_values, _containers, max_leaves=20)


@given(trees)
def test_round_trip_property(tree):
    leaves, treedef = mtu.tree_flatten(tree)
    assert mtu.tree_unflatten(treedef, leaves) == tree
    assert mtu.tree_structure(mtu.tree_unflatten(treedef, leaves)) == treedef


@given(trees)
def test_identity_map_property(tree):
    assert mtu.tree_map(lambda x: x, tree) == tree


@given(trees)
def test_counts_property(tree):
    leaves, treedef = mtu.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    assert treedef.num_nodes == 1 + sum(c.num_nodes for c in treedef.children())


@settings(max_examples=50)
@given(trees)
def test_random_trees_match_jax(jtu, tree):
    leaves, treedef = mtu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    assert leaves == jax_leaves
    assert repr(treedef) == repr(jax_treedef)
    assert (treedef.num_leaves, treedef.num_nodes) == (
        jax_treedef.num_leaves,
        jax_treedef.num_nodes,
    )
