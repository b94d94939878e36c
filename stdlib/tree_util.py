"""Pytrees: nested containers whose leaves are arrays, with JAX's ``jax.tree_util`` semantics.

Tuples, lists, dicts (children in sorted key order), ``None`` (a node without children),
namedtuples, ``OrderedDict`` and ``defaultdict`` are nodes; so is every type registered with
``register_pytree_node``. Everything else is a leaf::

    leaves, treedef = tree_flatten((1, {"b": 2, "a": None}))
    leaves                           # [1, 2]
    treedef                          # PyTreeDef((*, {'a': None, 'b': *}))
    tree_unflatten(treedef, [3, 4])  # (3, {'a': None, 'b': 4})

``jit`` flattens its arguments on every call, so the hot paths below check the built-in
container types with a single dict lookup before anything else.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from typing import Any, Callable, Iterable, Iterator, TypeVar

__all__ = [
    "leaf_paths",
    "PyTreeDef", "Partial", "all_leaves", "register_dataclass", "register_pytree_node",
    "register_pytree_node_class", "tree_all", "tree_flatten", "tree_leaves", "tree_map",
    "tree_reduce", "tree_structure", "tree_unflatten", "treedef_children", "treedef_is_leaf",
    "treedef_tuple",
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "SequenceKey",
    "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node", "keystr",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static",
    "tree_broadcast", "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
    "tree_reduce_associative", "tree_transpose",
]

_T = TypeVar("_T")
_NoneType = type(None)
_OrderedDict = collections.OrderedDict
_defaultdict = collections.defaultdict

# How a Python type is flattened; every type seen is cached in _KIND (leaf types included) so
# classifying a value costs one dict lookup.
_LEAF, _TUPLE, _LIST, _DICT, _NONE, _NAMEDTUPLE, _ORDERED, _DEFAULT, _CUSTOM = range(9)
_KIND: dict[type, int] = {
    tuple: _TUPLE, list: _LIST, dict: _DICT, _NoneType: _NONE,
    _OrderedDict: _ORDERED, _defaultdict: _DEFAULT,
}
_BUILTIN_NODE_TYPES = frozenset(_KIND)
# Registered types: type -> (flatten(x) -> (children, aux), unflatten(aux, children) -> x).
_CUSTOM_NODES: dict[type, tuple[Callable, Callable]] = {}
# Registered types that name their children: type -> flatten_with_keys(x) ->
# (((key, child), ...), aux). Others' children are named by FlattenedIndexKey.
_KEYED_NODES: dict[type, Callable] = {}
_MAX_CACHED_TYPES = 4096  # bound on cached leaf types (classes made on the fly must not leak)


def _classify(t: type) -> int:
    kind = _NAMEDTUPLE if issubclass(t, tuple) and hasattr(t, "_fields") else _LEAF
    if len(_KIND) > _MAX_CACHED_TYPES:
        for cached in [c for c, k in list(_KIND.items()) if k in (_LEAF, _NAMEDTUPLE)]:
            _KIND.pop(cached, None)
    _KIND[t] = kind
    return kind


class PyTreeDef(tuple):
    """The structure of a pytree: its node types, their aux data, and where the leaves go.

    Immutable and hashable; equal when the structures are equal (leaf values play no part).
    Internally it is the tuple ``(node_type, aux_data, children, num_leaves)``, with
    ``node_type`` None for a leaf, so comparing and hashing run at C speed. Example::

        treedef = tree_structure({"a": 1, "b": (2, 3)})
        treedef.num_leaves                   # 3
        treedef.unflatten([4, 5, 6])         # {'a': 4, 'b': (5, 6)}
        treedef.flatten_up_to({"a": [7], "b": (8, 9)})   # [[7], 8, 9]
    """

    __slots__ = ()

    def __hash__(self) -> int:
        try:
            return tuple.__hash__(self)
        except TypeError:
            # Unhashable aux data (a dict, say), as JAX accepts: hashed by the rest of the
            # node; equality still compares the aux data.
            return hash((self[0], self[2], self[3]))

    @property
    def num_leaves(self) -> int:
        """Number of leaves, e.g. ``tree_structure((1, [2, 3])).num_leaves == 3``."""
        return self[3]

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves included, e.g. ``tree_structure((1, 2)).num_nodes == 3``."""
        return 1 + sum(child.num_nodes for child in self[2])

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the children, e.g. ``tree_structure((1, [2])).children()``
        is ``[PyTreeDef(*), PyTreeDef([*])]``."""
        return list(self[2])

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Builds the pytree with this structure from ``leaves``, in ``tree_flatten`` order.

        Example: ``tree_structure((1, 2)).unflatten(["a", "b"]) == ("a", "b")``.
        """
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        if len(leaves) != self[3]:
            raise ValueError(f"tree_unflatten: {self!r} has {self[3]} leaves, but "
                             f"{len(leaves)} leaves were given")
        if (self[0] is tuple and len(self[2]) == self[3]
                and self[2] == _all_leaf_children(self[3])):
            return tuple(leaves)  # the common case of jit arguments: a flat tuple
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` at this structure's leaf positions.

        ``tree`` must have this structure as a prefix, else ValueError. Example:
        ``tree_structure((1, 2)).flatten_up_to(([3], {"a": 4})) == [[3], {"a": 4}]``.
        """
        subtrees: list[Any] = []
        try:
            _up_to(self, tree, subtrees)
        except _StructureMismatch as e:
            raise ValueError(_mismatch_message(e, self, tree)) from None
        return subtrees

    def __repr__(self) -> str:
        return f"PyTreeDef({_format(self)})"

    __str__ = __repr__

    # tuple would concatenate, repeat and count these; a structure is no sequence.
    __add__ = __mul__ = __rmul__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return (_make_treedef, (tuple(self),))


_new_treedef = tuple.__new__


def _make_treedef(fields: tuple) -> PyTreeDef:
    return _new_treedef(PyTreeDef, fields)


_LEAF_DEF = _make_treedef((None, None, (), 1))
_NONE_DEF = _make_treedef((_NoneType, None, (), 0))
_ALL_LEAF_CHILDREN: dict[int, tuple] = {}  # n -> (_LEAF_DEF,) * n


def _all_leaf_children(n: int) -> tuple:
    children = _ALL_LEAF_CHILDREN.get(n)
    if children is None:
        children = (_LEAF_DEF,) * n
        if n <= 256:
            _ALL_LEAF_CHILDREN[n] = children
    return children


def _flatten(x: Any, leaves: list, is_leaf: Callable[[Any], bool] | None) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF_DEF
    t = type(x)
    kind = _KIND.get(t)
    if kind is None:
        kind = _classify(t)
    if kind == _LEAF:
        leaves.append(x)
        return _LEAF_DEF
    start = len(leaves)
    if kind == _TUPLE or kind == _LIST or kind == _NAMEDTUPLE:
        aux = None
        children = []
        for child in x:
            # Leaves inline: most children of jit arguments are arrays.
            if is_leaf is None and _KIND.get(type(child)) == _LEAF:
                leaves.append(child)
                children.append(_LEAF_DEF)
            else:
                children.append(_flatten(child, leaves, is_leaf))
    elif kind == _DICT:
        aux = _sorted_keys(x)
        children = [_flatten(x[k], leaves, is_leaf) for k in aux]
    elif kind == _NONE:
        return _NONE_DEF
    elif kind == _ORDERED:
        aux = tuple(x)
        children = [_flatten(x[k], leaves, is_leaf) for k in aux]
    elif kind == _DEFAULT:
        keys = _sorted_keys(x)
        aux = (x.default_factory, keys)
        children = [_flatten(x[k], leaves, is_leaf) for k in keys]
    else:
        node_children, aux = _CUSTOM_NODES[t][0](x)
        children = [_flatten(c, leaves, is_leaf) for c in node_children]
    return _new_treedef(PyTreeDef, (t, aux, tuple(children), len(leaves) - start))


def _sorted_keys(d: dict) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError(f"pytree dict keys must be sortable, got keys {list(d)!r}: {e}") from None


def _build(treedef: PyTreeDef, leaves: Iterator[Any]) -> Any:
    node_type, aux, children_defs, _ = treedef
    if node_type is None:
        return next(leaves)
    children = [_build(c, leaves) for c in children_defs]
    if node_type is tuple:
        return tuple(children)
    if node_type is list:
        return children
    if node_type is dict:
        return dict(zip(aux, children))
    if node_type is _NoneType:
        return None
    if node_type is _OrderedDict:
        return _OrderedDict(zip(aux, children))
    if node_type is _defaultdict:
        return _defaultdict(aux[0], zip(aux[1], children))
    custom = _CUSTOM_NODES.get(node_type)
    if custom is not None:
        return custom[1](aux, children)
    return node_type(*children)  # a namedtuple


def _node_children(x: Any, treedef: PyTreeDef) -> tuple[list, list]:
    """One level of ``x``, which has ``treedef``'s node type: (child values, their key names)."""
    node_type, aux = treedef[0], treedef[1]
    if node_type is tuple or node_type is list:
        return list(x), [f"[{i}]" for i in range(len(x))]
    if node_type is dict or node_type is _defaultdict or node_type is _OrderedDict:
        keys = tuple(x) if node_type is _OrderedDict else _sorted_keys(x)
        got = (x.default_factory, keys) if node_type is _defaultdict else keys
        if got != aux:
            raise _StructureMismatch(f"a {node_type.__name__} with keys {got!r}",
                                     f"keys {aux!r}")
        return [x[k] for k in keys], [f"[{k!r}]" for k in keys]
    custom = _CUSTOM_NODES.get(node_type)
    if custom is None:  # a namedtuple
        return list(x), [f".{name}" for name in node_type._fields]
    children, got_aux = custom[0](x)
    if got_aux != aux:
        raise _StructureMismatch(f"a {node_type.__name__} with aux data {got_aux!r}",
                                 f"aux data {aux!r}")
    children = list(children)
    return children, [f"[<flat index {i}>]" for i in range(len(children))]


class _StructureMismatch(Exception):
    def __init__(self, got: str, expected: str) -> None:
        super().__init__(got)
        self.got, self.expected, self.path = got, expected, []


def _up_to(treedef: PyTreeDef, x: Any, out: list) -> None:
    node_type = treedef[0]
    if node_type is None:
        out.append(x)
        return
    if type(x) is not node_type:
        raise _StructureMismatch(f"a {type(x).__name__}", f"a {node_type.__name__}")
    if node_type is _NoneType:
        return
    child_defs = treedef[2]
    if node_type is tuple or node_type is list:
        if len(x) != len(child_defs):
            raise _StructureMismatch(f"a {node_type.__name__} of length {len(x)}",
                                     f"length {len(child_defs)}")
        for i, (child_def, child) in enumerate(zip(child_defs, x)):
            try:
                _up_to(child_def, child, out)
            except _StructureMismatch as e:
                e.path.append(f"[{i}]")
                raise
        return
    children, names = _node_children(x, treedef)
    if len(children) != len(child_defs):
        raise _StructureMismatch(f"a {node_type.__name__} with {len(children)} children",
                                 f"{len(child_defs)} children")
    for child_def, child, name in zip(child_defs, children, names):
        try:
            _up_to(child_def, child, out)
        except _StructureMismatch as e:
            e.path.append(name)
            raise


def _mismatch_message(e: _StructureMismatch, prefix: PyTreeDef, tree: Any) -> str:
    path = "tree" + "".join(reversed(e.path))
    try:
        full = repr(tree_structure(tree))
    except Exception:  # noqa: BLE001 - the message must not fail; show what we can
        full = f"<unflattenable {type(tree).__name__}>"
    return (f"pytree structure mismatch at {path}: expected {e.expected}, got {e.got}.\n"
            f"  expected structure (a prefix): {prefix!r}\n"
            f"  got structure:                 {full}")


def _format(treedef: PyTreeDef) -> str:
    node_type, aux, children_defs, _ = treedef
    if node_type is None:
        return "*"
    children = [_format(c) for c in children_defs]
    if node_type is _NoneType:
        return "None"
    if node_type is tuple:
        return f"({children[0]},)" if len(children) == 1 else f"({', '.join(children)})"
    if node_type is list:
        return f"[{', '.join(children)}]"
    if node_type is dict:
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(aux, children)) + "}"
    if node_type not in _CUSTOM_NODES and node_type not in _BUILTIN_NODE_TYPES:
        name = f"namedtuple[{node_type.__name__}]"
    else:
        name = f"{node_type.__name__}[{aux}]"
    return f"CustomNode({name}, [{', '.join(children)}])"


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """The leaves of ``tree`` (left to right, dict keys sorted) and its structure.

    ``is_leaf(subtree)`` returning True makes that subtree a leaf. Example::

        tree_flatten({"b": [1, 2], "a": 3})   # ([3, 1, 2], PyTreeDef({'a': *, 'b': [*, *]}))
    """
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Builds a pytree with structure ``treedef`` from ``leaves``.

    Example: ``tree_unflatten(tree_structure([1, (2, 3)]), "abc") == ['a', ('b', 'c')]``.
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``. Example: ``tree_leaves([1, None, {"x": 2}]) == [1, 2]``."""
    leaves: list[Any] = []
    _flatten(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure of ``tree``. Example: ``tree_structure((1, 2))`` is ``PyTreeDef((*, *))``."""
    return _flatten(tree, [], is_leaf)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Applies ``f`` to the leaves of ``tree`` (and the matching subtrees of ``rest``).

    Each tree in ``rest`` must have ``tree``'s structure as a prefix: where ``tree`` has a
    leaf, ``f`` gets the whole corresponding subtree. Example::

        tree_map(lambda x, y: x + y, {"a": 1, "b": 2}, {"a": 10, "b": 20})  # {'a': 11, 'b': 22}
        tree_map(lambda x, y: (x, y), (1, 2), ([3], None))                  # ((1, [3]), (2, None))
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    all_leaves = [leaves] + [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten([f(*xs) for xs in zip(*all_leaves)])


_MISSING = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _MISSING,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Folds ``function`` over the leaves, like ``functools.reduce``.

    Example: ``tree_reduce(operator.add, [1, (2, 3)]) == 6``.
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when every leaf is truthy. Example: ``tree_all([True, (1, None)]) is True``."""
    return all(tree_leaves(tree, is_leaf))


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have structures ``treedefs``.

    Example: ``treedef_tuple([tree_structure(1), tree_structure([1])])`` is
    ``PyTreeDef((*, [*]))``.
    """
    children = tuple(treedefs)
    return _new_treedef(PyTreeDef, (tuple, None, children, sum(c[3] for c in children)))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The child structures. Example: ``treedef_children(tree_structure((1, [2])))``
    is ``[PyTreeDef(*), PyTreeDef([*])]``."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True for the structure of a single leaf. Example: ``treedef_is_leaf(tree_structure(1))``."""
    return treedef[0] is None


def leaf_paths(treedef: PyTreeDef) -> list[str]:
    """Readable paths of a structure's leaves, for error messages.

    Example: ``leaf_paths(tree_structure({"w": 1, "b": (2, 3)}))`` is
    ``["['b'][0]", "['b'][1]", "['w']"]``; a lone leaf's path is ``""``.
    """
    paths: list[str] = []

    def walk(td: PyTreeDef, path: str) -> None:
        node_type, aux, children, _ = td
        if node_type is None:
            paths.append(path)
            return
        if node_type is dict or node_type is _OrderedDict:
            names = [f"[{k!r}]" for k in aux]
        elif node_type is _defaultdict:
            names = [f"[{k!r}]" for k in aux[1]]
        elif node_type is tuple or node_type is list:
            names = [f"[{i}]" for i in range(len(children))]
        elif hasattr(node_type, "_fields") and node_type not in _CUSTOM_NODES:
            names = [f".{f}" for f in node_type._fields]
        else:
            names = [f"[<{i}>]" for i in range(len(children))]
        for name, child in zip(names, children):
            walk(child, path + name)

    walk(treedef, "")
    return paths


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when every element is a leaf (None is not: it is a node without children).

    Example: ``all_leaves([1, 2.0]) is True`` and ``all_leaves([1, (2,)]) is False``.
    """
    for x in iterable:
        if is_leaf is not None and is_leaf(x):
            continue
        kind = _KIND.get(type(x))
        if (_classify(type(x)) if kind is None else kind) != _LEAF:
            return False
    return True


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], Any]) -> None:
    """Makes ``nodetype`` a pytree node.

    ``flatten_func(x)`` returns ``(children, aux_data)``; ``unflatten_func(aux_data, children)``
    rebuilds ``x``. ``aux_data`` is part of the treedef and must compare with ``==``; hashable
    aux data makes jit's cache lookup faster (a dict works, as in JAX).
    Example::

        class Pair:
            def __init__(self, a, b): self.a, self.b = a, b
        register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    """
    if nodetype in _CUSTOM_NODES or nodetype in _BUILTIN_NODE_TYPES:
        raise ValueError(f"{nodetype!r} is already registered as a pytree node")
    _CUSTOM_NODES[nodetype] = (flatten_func, unflatten_func)
    _KIND[nodetype] = _CUSTOM


def register_pytree_node_class(cls: type[_T]) -> type[_T]:
    """Class decorator registering ``cls`` through its ``tree_flatten`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod. Example::

        @register_pytree_node_class
        class Box:
            def __init__(self, x): self.x = x
            def tree_flatten(self): return (self.x,), None
            @classmethod
            def tree_unflatten(cls, aux, children): return cls(*children)
    """
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type[_T] | None = None, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None) -> Any:
    """Registers a class whose ``data_fields`` are children and ``meta_fields`` aux data.

    Usable directly or as a class decorator. Without field lists ``nodetype`` must be a
    dataclass: its ``__init__`` fields are data fields, except those declared with
    ``dataclasses.field(metadata=dict(static=True))``, which are meta fields. The class is
    rebuilt by calling ``nodetype(**fields)``. Example::

        @register_dataclass
        @dataclasses.dataclass
        class Params:
            w: Any
            name: str = dataclasses.field(default="p", metadata=dict(static=True))

        tree_leaves(Params(w=1.0))   # [1.0]
    """
    if nodetype is None:  # @register_dataclass(data_fields=..., meta_fields=...)
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields)
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass, so "
                            "data_fields and meta_fields must both be given")
        init_fields = [f for f in dataclasses.fields(nodetype) if f.init]
        if data_fields is None and meta_fields is None:
            meta_fields = [f.name for f in init_fields if f.metadata.get("static", False)]
        if data_fields is None:
            data_fields = [f.name for f in init_fields if f.name not in set(meta_fields)]
        else:
            data_fields = list(data_fields)
            meta_fields = [f.name for f in init_fields if f.name not in set(data_fields)]
    data_names, meta_names = tuple(data_fields), tuple(meta_fields)
    if set(data_names) & set(meta_names):
        raise ValueError(f"register_dataclass: fields {sorted(set(data_names) & set(meta_names))}"
                         " are both data and meta fields")
    get_data = operator.attrgetter(*data_names) if data_names else (lambda x: ())
    get_meta = operator.attrgetter(*meta_names) if meta_names else (lambda x: ())

    def flatten(x: Any) -> tuple[tuple, tuple]:
        # attrgetter of one name returns the bare value, of several a tuple
        data = (get_data(x),) if len(data_names) == 1 else get_data(x)
        meta = (get_meta(x),) if len(meta_names) == 1 else get_meta(x)
        return data, meta

    def unflatten(meta: tuple, data: Iterable) -> Any:
        return nodetype(**dict(zip(data_names, data)), **dict(zip(meta_names, meta)))

    def flatten_with_keys(x: Any) -> tuple[list, tuple]:
        data, meta = flatten(x)
        return [(GetAttrKey(n), d) for n, d in zip(data_names, data)], meta

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten, flatten)
    return nodetype


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: the function is aux data, the bound
    arguments are children, so it can be passed through ``jit`` and ``tree_map``. Example::

        add_one = Partial(operator.add, 1)
        tree_leaves(add_one)                 # [1]
        tree_map(lambda x: x * 10, add_one)(2)   # 12
    """


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))


# -- key paths -------------------------------------------------------------------------------------
# A leaf's path is the tuple of keys that lead to it from the root, one per node: dict entries
# are DictKey, tuple and list items SequenceKey, namedtuple and dataclass fields GetAttrKey, the
# children of other registered nodes FlattenedIndexKey (unless registered with keys).

class _PathKey:
    """One key of a path: a value in the attribute ``__match_args__[0]``, equal to keys of its
    own class with an equal value, printed by ``_text``."""

    __slots__ = ()

    def __init__(self, value: Any) -> None:
        setattr(self, self.__match_args__[0], value)

    @property
    def _value(self) -> Any:
        return getattr(self, self.__match_args__[0])

    def __str__(self) -> str:
        return self._text.format(self._value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__match_args__[0]}={self._value!r})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and self._value == other._value

    def __hash__(self) -> int:
        return hash((type(self), self._value))


class DictKey(_PathKey):
    """The key of a dict entry in a path; prints as ``['a']``. Example: ``DictKey("a").key``"""

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _text = "[{!r}]"


class SequenceKey(_PathKey):
    """The index of a tuple or list item in a path; prints as ``[0]``.
    Example: ``SequenceKey(0).idx``"""

    __slots__ = ("idx",)
    __match_args__ = ("idx",)
    _text = "[{!r}]"


class GetAttrKey(_PathKey):
    """The name of an attribute (a namedtuple's or dataclass's field) in a path; prints as
    ``.name``. Example: ``GetAttrKey("w").name``"""

    __slots__ = ("name",)
    __match_args__ = ("name",)
    _text = ".{}"


class FlattenedIndexKey(_PathKey):
    """The position of a child of a node registered without keys, in a path; prints as
    ``[<flat index 0>]``. Example: ``FlattenedIndexKey(0).key``"""

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _text = "[<flat index {}>]"


KeyEntry = Any                 # one key of a path (the classes above, or a user's own)
KeyPath = tuple                # a tuple of KeyEntry


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A path as text, each key as it prints (``['a'][0].w``) or, with ``simple``, as its bare
    value (``a/0/w`` with ``separator="/"``).

    Example::

        for path, leaf in tree_leaves_with_path({"a": [1, 2]}):
            keystr(path)           # "['a'][0]", then "['a'][1]"
    """
    def simple_text(key: Any) -> str:
        return str(key._value) if isinstance(key, _PathKey) else str(key)
    return separator.join(simple_text(k) if simple else str(k) for k in keys)


def _keyed_children(x: Any, kind: int) -> tuple[list, list, Any]:
    """One level of the node ``x`` of kind ``kind``: (keys, children, aux data)."""
    if kind == _TUPLE or kind == _LIST:
        return [SequenceKey(i) for i in range(len(x))], list(x), None
    if kind == _NAMEDTUPLE:
        return [GetAttrKey(f) for f in type(x)._fields], list(x), None
    if kind == _DICT:
        keys = _sorted_keys(x)
        return [DictKey(k) for k in keys], [x[k] for k in keys], keys
    if kind == _ORDERED:
        keys = tuple(x)
        return [DictKey(k) for k in keys], [x[k] for k in keys], keys
    if kind == _DEFAULT:
        keys = _sorted_keys(x)
        return [DictKey(k) for k in keys], [x[k] for k in keys], (x.default_factory, keys)
    if kind == _NONE:
        return [], [], None
    keyed = _KEYED_NODES.get(type(x))
    if keyed is not None:
        pairs, aux = keyed(x)
        pairs = list(pairs)
        return [k for k, _ in pairs], [c for _, c in pairs], aux
    children, aux = _CUSTOM_NODES[type(x)][0](x)
    children = list(children)
    return [FlattenedIndexKey(i) for i in range(len(children))], children, aux


def _kind_of(x: Any) -> int:
    kind = _KIND.get(type(x))
    return _classify(type(x)) if kind is None else kind


def _flatten_keyed(x: Any, path: tuple, pairs: list, is_leaf: Callable | None,
                   takes_path: bool) -> PyTreeDef:
    if is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x)):
        pairs.append((path, x))
        return _LEAF_DEF
    kind = _kind_of(x)
    if kind == _LEAF:
        pairs.append((path, x))
        return _LEAF_DEF
    if kind == _NONE:
        return _NONE_DEF
    start = len(pairs)
    keys, children, aux = _keyed_children(x, kind)
    child_defs = tuple(_flatten_keyed(c, path + (k,), pairs, is_leaf, takes_path)
                       for k, c in zip(keys, children))
    return _new_treedef(PyTreeDef, (type(x), aux, child_defs, len(pairs) - start))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like ``tree_flatten``, with each leaf's key path: ``([(path, leaf), ...], treedef)``.
    With ``is_leaf_takes_path``, ``is_leaf(path, subtree)`` decides the leaves.

    Example::

        tree_flatten_with_path({"a": [1, 2]})[0]
        # [((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
    """
    pairs: list = []
    treedef = _flatten_keyed(tree, (), pairs, is_leaf, is_leaf_takes_path)
    return pairs, treedef


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """The ``(path, leaf)`` pairs of ``tree``, in ``tree_leaves`` order.

    Example: ``[keystr(p) for p, _ in tree_leaves_with_path({"a": (1, 2)})]`` is
    ``["['a'][0]", "['a'][1]"]``
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """``tree_map`` whose function also gets each leaf's key path first:
    ``f(path, leaf, *matching leaves of rest)``.

    Example::

        tree_map_with_path(lambda p, x: x * 0 if keystr(p) == "['b']" else x, {"a": 1, "b": 2})
        # {'a': 1, 'b': 0}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    all_leaves = [[leaf for _, leaf in pairs]] + [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten([f(path, *xs) for (path, _), xs in zip(pairs, zip(*all_leaves))])


def register_pytree_with_keys(nodetype: type,
                              flatten_with_keys: Callable[[Any], tuple[Iterable, Any]],
                              unflatten_func: Callable[[Any, Iterable], Any],
                              flatten_func: Callable[[Any], tuple[Iterable, Any]] | None = None
                              ) -> None:
    """Makes ``nodetype`` a pytree node whose children have keys in paths:
    ``flatten_with_keys(x)`` returns ``(((key, child), ...), aux_data)``; ``flatten_func``
    (default: derived from it) returns ``(children, aux_data)`` for plain flattening.

    Example::

        register_pytree_with_keys(Pair, lambda p: (((GetAttrKey("a"), p.a),
                                                    (GetAttrKey("b"), p.b)), None),
                                  lambda _, c: Pair(*c))
    """
    if flatten_func is None:
        def flatten_func(x: Any) -> tuple[list, Any]:
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func)
    _KEYED_NODES[nodetype] = flatten_with_keys


def register_pytree_with_keys_class(cls: type[_T]) -> type[_T]:
    """Class decorator registering ``cls`` through its ``tree_flatten_with_keys`` method, its
    ``tree_unflatten(aux_data, children)`` classmethod and, if defined, ``tree_flatten``.

    Example::

        @register_pytree_with_keys_class
        class Box:
            def __init__(self, x): self.x = x
            def tree_flatten_with_keys(self): return ((GetAttrKey("x"), self.x),), None
            @classmethod
            def tree_unflatten(cls, aux, children): return cls(*children)
    """
    flatten = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten,
                              operator.methodcaller("tree_flatten") if flatten else None)
    return cls


def register_static(cls: type[_T]) -> type[_T]:
    """Class decorator making instances of ``cls`` nodes without children: the instance
    itself is aux data of the treedef (so it must be hashable), never a leaf; ``jit`` treats
    it as static.

    Example::

        @register_static
        @dataclasses.dataclass(frozen=True)
        class Config:
            depth: int

        tree_leaves([Config(2), 1.0])    # [1.0]
    """
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


def is_tree_node(typ: type) -> bool:
    """Whether ``typ`` is a pytree node type (built-in container, namedtuple or registered).

    Example: ``is_tree_node(list) and not is_tree_node(int)``
    """
    if not isinstance(typ, type):
        raise TypeError(f"is_tree_node takes a type, got {typ!r}")
    kind = _KIND.get(typ)
    return (_classify(typ) if kind is None else kind) != _LEAF


def flatten_one_level(tree: Any) -> tuple[list, Any]:
    """One level of a node: ``(children, aux_data)``; ValueError for a leaf.

    Example: ``flatten_one_level({"b": 1, "a": [2]}) == ([[2], 1], ('a', 'b'))``
    """
    keys, children, aux = _one_level(tree)
    return children, aux


def flatten_one_level_with_keys(tree: Any) -> tuple[list, Any]:
    """One level of a node with its keys: ``([(key, child), ...], aux_data)``.

    Example: ``flatten_one_level_with_keys([5])[0] == [(SequenceKey(0), 5)]``
    """
    keys, children, aux = _one_level(tree)
    return list(zip(keys, children)), aux


def _one_level(tree: Any) -> tuple[list, list, Any]:
    kind = _kind_of(tree)
    if kind == _LEAF:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keys, children, aux = _keyed_children(tree, kind)
    if kind == _NAMEDTUPLE:
        aux = type(tree)
    return keys, children, aux


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Swap the outer and inner levels of a tree of trees: a tree of structure
    ``outer(inner(leaves))`` becomes ``inner(outer(leaves))``. ``inner_treedef`` None takes
    the structure of the first inner tree.

    Example::

        tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
        # ([1, 3], [2, 4])
    """
    inners = outer_treedef.flatten_up_to(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(inners[0]) if inners else tree_structure(())
    columns = [inner_treedef.flatten_up_to(t) for t in inners]
    n_inner = inner_treedef.num_leaves
    return inner_treedef.unflatten(
        [outer_treedef.unflatten([col[i] for col in columns]) for i in range(n_inner)])


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``prefix_tree`` expanded to ``full_tree``'s structure: each leaf of the prefix is
    repeated over the subtree of ``full_tree`` where it sits.

    Example::

        tree_broadcast([1, {"a": 2}], [(3, 4), {"a": [5, 6]}])   # [(1, 1), {'a': [2, 2]}]
    """
    leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    return prefix_def.unflatten([tree_map(lambda _, v=leaf: v, sub, is_leaf=is_leaf)
                                 for leaf, sub in zip(leaves, subtrees)])


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                            identity: Any = _MISSING,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Reduce the leaves with an associative ``operation`` as a balanced tree of calls
    (depth log n, not n); ``identity`` is the result for no leaves.

    Example: ``tree_reduce_associative(operator.add, [1, (2, 3)]) == 6``
    """
    items = tree_leaves(tree, is_leaf)
    if not items:
        if identity is _MISSING:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(items) > 1:
        paired = [operation(a, b) for a, b in zip(items[::2], items[1::2])]
        items = paired + ([items[-1]] if len(items) % 2 else [])
    return items[0]


