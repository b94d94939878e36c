"""``pyree.tree``: the short names of ``pyree.tree_util`` (JAX's ``jax.tree`` module).

Example::

    pyree.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})   # {'a': 2, 'b': (4, 6)}
"""
from .tree_util import (tree_all as all, tree_broadcast as broadcast, tree_flatten as flatten,
                        tree_flatten_with_path as flatten_with_path, tree_leaves as leaves,
                        tree_leaves_with_path as leaves_with_path, tree_map as map,
                        tree_map_with_path as map_with_path, tree_reduce as reduce,
                        tree_reduce_associative as reduce_associative,
                        tree_structure as structure, tree_transpose as transpose,
                        tree_unflatten as unflatten)

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "structure", "transpose",
           "unflatten"]
