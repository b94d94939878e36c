"""``pyree.tree``: the short names of ``pyree.tree_util`` (JAX's ``jax.tree`` module).

Example::

    pyree.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})   # {'a': 2, 'b': (4, 6)}
"""
from .tree_util import (tree_all as all, tree_flatten as flatten, tree_leaves as leaves,
                        tree_map as map, tree_reduce as reduce, tree_structure as structure,
                        tree_unflatten as unflatten)

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "unflatten"]
