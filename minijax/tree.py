"""``minijax.tree``: the short names JAX gives the pytree functions (``jax.tree.map``...).

Each is the matching ``tree_util.tree_*`` function; see :mod:`minijax.tree_util`. Some
names shadow builtins (``map``, ``all``), as they do in JAX.
"""

from minijax import tree_util

all = tree_util.tree_all  # noqa: A001
flatten = tree_util.tree_flatten
flatten_with_path = tree_util.tree_flatten_with_path
leaves = tree_util.tree_leaves
leaves_with_path = tree_util.tree_leaves_with_path
map = tree_util.tree_map  # noqa: A001
map_with_path = tree_util.tree_map_with_path
reduce = tree_util.tree_reduce
structure = tree_util.tree_structure
transpose = tree_util.tree_transpose
unflatten = tree_util.tree_unflatten

__all__ = ["all", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "structure", "transpose", "unflatten"]
