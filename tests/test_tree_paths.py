"""``minijax.tree`` and key paths (``tree_flatten_with_path``, ``keystr``, the key entry
classes, ``register_dataclass``, ``register_pytree_with_keys``) against JAX 0.10.2."""

from __future__ import annotations

import collections
import dataclasses

import pytest

import minijax
from minijax import tree_util

jax = pytest.importorskip("jax")

Point = collections.namedtuple("Point", "x y")


def sample_tree():
    return {"b": [1, (2, None)], "a": Point(3, 4),
            "c": collections.OrderedDict(z=5, y=6),
            "d": collections.defaultdict(list, {"q": 7})}


def as_text(pairs):
    """Key paths compared through their printed form and their repr (class and fields)."""
    return [(jax.tree_util.keystr(path) if path and type(path[0]).__module__.startswith("jax")
             else tree_util.keystr(path), repr(path), leaf) for path, leaf in pairs]


def test_flatten_with_path_matches_jax():
    ours, ours_def = tree_util.tree_flatten_with_path(sample_tree())
    theirs, theirs_def = jax.tree_util.tree_flatten_with_path(sample_tree())
    assert as_text(ours) == as_text(theirs)
    assert str(ours_def) == str(theirs_def)
    assert as_text(minijax.tree.leaves_with_path(sample_tree())) == as_text(theirs)


def test_keystr_and_key_classes():
    path = (tree_util.DictKey("a"), tree_util.SequenceKey(0), tree_util.GetAttrKey("x"))
    theirs = (jax.tree_util.DictKey("a"), jax.tree_util.SequenceKey(0),
              jax.tree_util.GetAttrKey("x"))
    assert tree_util.keystr(path) == jax.tree_util.keystr(theirs) == "['a'][0].x"
    for simple, separator in [(True, "/"), (True, ""), (False, " ")]:
        assert (tree_util.keystr(path, simple=simple, separator=separator)
                == jax.tree_util.keystr(theirs, simple=simple, separator=separator))
    assert repr(path) == repr(theirs)
    assert repr(tree_util.FlattenedIndexKey(2)) == repr(jax.tree_util.FlattenedIndexKey(2))
    assert tree_util.DictKey("a") == tree_util.DictKey("a") != tree_util.DictKey("b")
    assert len({tree_util.SequenceKey(1), tree_util.SequenceKey(1)}) == 1


def test_map_with_path():
    def label(path, leaf, keystr):
        return (keystr(path), leaf)
    ours = tree_util.tree_map_with_path(lambda p, x: label(p, x, tree_util.keystr),
                                        sample_tree())
    theirs = jax.tree_util.tree_map_with_path(
        lambda p, x: label(p, x, jax.tree_util.keystr), sample_tree())
    assert ours == theirs
    doubled = minijax.tree.map_with_path(lambda p, x, y: x + y, [1, 2], [10, 20])
    assert doubled == jax.tree.map_with_path(lambda p, x, y: x + y, [1, 2], [10, 20])


def test_is_leaf_with_path():
    tree = {"a": [1, 2], "b": [3]}
    for takes_path, is_leaf in [(False, lambda x: isinstance(x, list) and len(x) == 1),
                                (True, lambda p, x: len(p) == 1 and p[0].key == "a")]:
        ours, ours_def = tree_util.tree_flatten_with_path(tree, is_leaf, takes_path)
        theirs, theirs_def = jax.tree_util.tree_flatten_with_path(tree, is_leaf, takes_path)
        assert as_text(ours) == as_text(theirs) and str(ours_def) == str(theirs_def)


def test_custom_nodes():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    for module in (tree_util, jax.tree_util):
        module.register_pytree_node(Box, lambda n: ((n.a, n.b), None),
                                    lambda _, ch: Box(*ch))
    ours = tree_util.tree_flatten_with_path(Box(1, [2]))[0]
    theirs = jax.tree_util.tree_flatten_with_path(Box(1, [2]))[0]
    assert as_text(ours) == as_text(theirs)

    class Named:
        def __init__(self, w):
            self.w = w

    tree_util.register_pytree_with_keys(
        Named, lambda n: (((tree_util.GetAttrKey("w"), n.w),), None),
        lambda _, ch: Named(*ch))
    jax.tree_util.register_pytree_with_keys(
        Named, lambda n: (((jax.tree_util.GetAttrKey("w"), n.w),), None),
        lambda _, ch: Named(*ch))
    ours = tree_util.tree_flatten_with_path([Named(5)])
    theirs = jax.tree_util.tree_flatten_with_path([Named(5)])
    assert as_text(ours[0]) == as_text(theirs[0])
    assert tree_util.tree_unflatten(ours[1], [6])[0].w == 6


def test_register_dataclass():
    @dataclasses.dataclass
    class Layer:
        w: float
        name: str
        b: float = 0.0

    @dataclasses.dataclass
    class Plain:
        u: int
        v: int

    for module in (tree_util, jax.tree_util):
        assert module.register_dataclass(Layer, data_fields=["w", "b"],
                                         meta_fields=["name"]) is Layer
        module.register_dataclass(Plain)
    layer = Layer(1.0, "dense", 2.0)
    ours, ours_def = tree_util.tree_flatten_with_path(layer)
    theirs, theirs_def = jax.tree_util.tree_flatten_with_path(layer)
    assert as_text(ours) == as_text(theirs)
    assert str(ours_def).replace("tests.test_tree_paths.", "") == str(theirs_def).replace(
        "tests.test_tree_paths.", "")
    assert tree_util.tree_unflatten(ours_def, [3.0, 4.0]) == Layer(3.0, "dense", 4.0)
    assert minijax.tree.leaves(Plain(1, 2)) == jax.tree.leaves(Plain(1, 2)) == [1, 2]
    grad = minijax.grad(lambda p: p.w * p.b)(Layer(3.0, "x", 2.0))
    assert (float(grad.w), float(grad.b), grad.name) == (2.0, 3.0, "x")


def test_tree_module_matches_jax():
    tree = {"a": [1, 2], "b": (3, {"c": 4})}
    assert minijax.tree.leaves(tree) == jax.tree.leaves(tree)
    assert str(minijax.tree.structure(tree)) == str(jax.tree.structure(tree))
    assert minijax.tree.map(lambda x: x * 2, tree) == jax.tree.map(lambda x: x * 2, tree)
    assert minijax.tree.map(lambda x, y: x + y, tree, tree) == jax.tree.map(
        lambda x, y: x + y, tree, tree)
    assert minijax.tree.reduce(lambda a, b: a + b, tree, 10) == 20
    assert minijax.tree.all([True, (1, 2)]) and not minijax.tree.all([True, 0])
    leaves, treedef = minijax.tree.flatten(tree)
    assert minijax.tree.unflatten(treedef, leaves) == tree
    pairs = [(1, "a"), (2, "b")]
    outer, inner = minijax.tree.structure([0, 0]), minijax.tree.structure((0, 0))
    assert minijax.tree.transpose(outer, inner, pairs) == jax.tree.transpose(
        jax.tree.structure([0, 0]), jax.tree.structure((0, 0)), pairs)
    names = {"all", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
             "map_with_path", "reduce", "structure", "transpose", "unflatten"}
    assert names <= set(dir(jax.tree)) and names <= set(dir(minijax.tree))
