"""Tests of pyree.tree_util: flattening, rebuilding, mapping and registering pytree nodes."""
import collections
import dataclasses
import functools
import operator
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyree import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])
Empty = collections.namedtuple("Empty", [])


class Pair:
    """Registered with register_pytree_node; aux data is its tag."""

    def __init__(self, a, b, tag="pair"):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return (type(other) is Pair and (self.a, self.b, self.tag) == (other.a, other.b, other.tag))

    def __repr__(self):
        return f"Pair({self.a!r}, {self.b!r}, {self.tag!r})"


tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), p.tag),
                        lambda tag, children: Pair(*children, tag=tag))


@tu.register_pytree_node_class
class Box:
    """Registered with register_pytree_node_class."""

    def __init__(self, value, label):
        self.value, self.label = value, label

    def tree_flatten(self):
        return (self.value,), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(children[0], label)

    def __eq__(self, other):
        return type(other) is Box and (self.value, self.label) == (other.value, other.label)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: Any
    b: Any
    name: str = dataclasses.field(default="p", metadata=dict(static=True))


@dataclasses.dataclass
class Explicit:
    x: Any
    y: Any
    mode: str


tu.register_dataclass(Explicit, data_fields=["x", "y"], meta_fields=["mode"])


class Opaque:
    """Not registered: a leaf."""


# --- flatten / unflatten ------------------------------------------------------------------

ROUND_TRIP_TREES = [
    1,
    None,
    (),
    [],
    {},
    (1,),
    (1, 2.0, "three"),
    [1, [2, [3, []]]],
    {"b": 1, "a": (2, 3), "c": None},
    (None, [None], {"k": None}),
    Point(1, (2, 3)),
    Point(None, []),
    Empty(),
    collections.OrderedDict([("z", 1), ("a", 2)]),
    collections.defaultdict(list, {"y": 1, "x": [2]}),
    Pair(1, (2, 3), tag="t"),
    Box([1, 2], label="L"),
    Params(w=np.ones(2), b=0.5, name="layer"),
    Explicit(1, {"q": 2}, mode="m"),
    {"nested": [Pair(Box(1, "a"), Point(2, 3)), collections.OrderedDict(b=None, a=4)]},
    np.arange(3),
    Opaque,
]


def _same(a, b):
    """Structural equality that also compares numpy leaves and container types exactly."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.all(a == b))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        same_order = list(a) == list(b) if isinstance(a, collections.OrderedDict) else True
        return (same_order and set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
                and getattr(a, "default_factory", None) == getattr(b, "default_factory", None))
    if isinstance(a, Params):
        return a.name == b.name and _same(a.w, b.w) and _same(a.b, b.b)
    return a == b


@pytest.mark.parametrize("tree", ROUND_TRIP_TREES, ids=lambda t: type(t).__name__)
def test_round_trip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert len(leaves) == treedef.num_leaves
    assert _same(tu.tree_unflatten(treedef, leaves), tree)
    assert tu.tree_structure(tree) == treedef
    assert hash(tu.tree_structure(tree)) == hash(treedef)
    assert tu.tree_leaves(tree) == leaves or any(isinstance(x, np.ndarray) for x in leaves)


def test_leaves_order_and_sorted_dict_keys():
    tree = {"b": [1, 2], "a": 3, "c": {"z": 4, "y": 5}}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [3, 1, 2, 5, 4]
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt == tree and list(rebuilt) == ["a", "b", "c"]
    assert list(rebuilt["c"]) == ["y", "z"]
    # Insertion order does not change the structure.
    assert tu.tree_structure({"a": 1, "b": 2}) == tu.tree_structure({"b": 1, "a": 2})


def test_ordered_dict_keeps_insertion_order():
    tree = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [1, 2]
    rebuilt = tu.tree_unflatten(treedef, ["x", "y"])
    assert type(rebuilt) is collections.OrderedDict and list(rebuilt.items()) == [("b", "x"),
                                                                                   ("a", "y")]
    assert treedef != tu.tree_structure(collections.OrderedDict([("a", 1), ("b", 2)]))
    assert treedef != tu.tree_structure({"b": 1, "a": 2})


def test_defaultdict_sorted_and_keeps_factory():
    tree = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [2, 1]
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is collections.defaultdict and rebuilt.default_factory is list
    assert rebuilt == tree and rebuilt["missing"] == []
    assert treedef != tu.tree_structure(collections.defaultdict(dict, {"b": 1, "a": 2}))


def test_none_is_a_node_without_leaves():
    assert tu.tree_leaves(None) == []
    assert tu.tree_leaves([None, (None,), {"a": None}]) == []
    treedef = tu.tree_structure(None)
    assert treedef.num_leaves == 0 and treedef.num_nodes == 1
    assert tu.tree_unflatten(treedef, []) is None
    assert tu.tree_leaves([1, None, 2]) == [1, 2]


def test_namedtuple_is_a_node_of_its_class():
    leaves, treedef = tu.tree_flatten(Point(1, 2))
    assert leaves == [1, 2]
    rebuilt = tu.tree_unflatten(treedef, [3, 4])
    assert type(rebuilt) is Point and rebuilt == Point(3, 4)
    assert treedef != tu.tree_structure((1, 2))
    Other = collections.namedtuple("Point", ["x", "y"])
    assert treedef != tu.tree_structure(Other(1, 2))


def test_everything_else_is_a_leaf():
    class DictSubclass(dict):
        pass

    for leaf in [1, 2.5, "s", b"b", np.float32(1), np.ones((2, 2)), Opaque(), Opaque,
                 DictSubclass(a=1), {1, 2}, frozenset(), range(3), print]:
        leaves, treedef = tu.tree_flatten(leaf)
        assert leaves == [leaf] or leaves[0] is leaf
        assert tu.treedef_is_leaf(treedef) and treedef.num_leaves == 1
        assert repr(treedef) == "PyTreeDef(*)"


def test_registered_nodes():
    tree = Pair(1, Box(2, "lbl"), tag="t")
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [1, 2]
    assert tu.tree_unflatten(treedef, [10, 20]) == Pair(10, Box(20, "lbl"), tag="t")
    # Aux data is part of the structure.
    assert treedef != tu.tree_structure(Pair(1, Box(2, "lbl"), tag="other"))
    assert treedef != tu.tree_structure(Pair(1, Box(2, "x"), tag="t"))


def test_register_twice_raises():
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Pair, lambda p: ((), None), lambda a, c: Pair(0, 0))
    with pytest.raises(ValueError):
        tu.register_pytree_node(tuple, lambda t: (t, None), lambda a, c: tuple(c))
    with pytest.raises(ValueError):
        tu.register_pytree_node_class(Box)
    with pytest.raises(ValueError):
        tu.register_dataclass(Params)


def test_registering_a_type_seen_as_leaf_makes_it_a_node():
    class Late:
        def __init__(self, v):
            self.v = v

    assert tu.tree_leaves([Late(1)])[0].v == 1  # cached as a leaf type
    tu.register_pytree_node(Late, lambda x: ((x.v,), None), lambda _, c: Late(c[0]))
    assert tu.tree_leaves([Late(1)]) == [1]


def test_register_dataclass():
    params = Params(w=1.0, b=2.0, name="dense")
    leaves, treedef = tu.tree_flatten(params)
    assert leaves == [1.0, 2.0]
    rebuilt = tu.tree_unflatten(treedef, [3.0, 4.0])
    assert rebuilt == Params(w=3.0, b=4.0, name="dense")
    assert treedef != tu.tree_structure(Params(w=1.0, b=2.0, name="other"))
    assert "Params" in repr(treedef)

    leaves, treedef = tu.tree_flatten(Explicit(1, [2], "m"))
    assert leaves == [1, 2]
    assert tu.tree_unflatten(treedef, [5, 6]) == Explicit(5, [6], "m")


def test_register_dataclass_decorator_with_fields_and_one_field():
    @functools.partial(tu.register_dataclass, data_fields=["v"], meta_fields=[])
    @dataclasses.dataclass
    class One:
        v: Any

    assert tu.tree_leaves(One([1, 2])) == [1, 2]
    assert tu.tree_map(lambda x: x * 2, One(3)) == One(6)

    @tu.register_dataclass(data_fields=["a"], meta_fields=["b"])
    class Plain:  # not a dataclass: fields given explicitly
        def __init__(self, a, b):
            self.a, self.b = a, b

    rebuilt = tu.tree_map(lambda x: x + 1, Plain(1, "meta"))
    assert (rebuilt.a, rebuilt.b) == (2, "meta")

    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(Opaque)


def test_partial_is_a_pytree():
    add = tu.Partial(operator.add, 1)
    assert isinstance(add, functools.partial)
    assert add(2) == 3
    leaves, treedef = tu.tree_flatten(add)
    assert leaves == [1]
    doubled = tu.tree_map(lambda x: x * 10, add)
    assert type(doubled) is tu.Partial and doubled(2) == 12

    kw = tu.Partial(lambda a, b, scale: (a + b) * scale, 1, scale=3)
    leaves, treedef = tu.tree_flatten(kw)
    assert leaves == [1, 3]
    assert tu.tree_unflatten(treedef, [2, 4])(5) == 28
    assert tu.tree_structure(tu.Partial(operator.add, 5)) == tu.tree_structure(add)
    assert tu.tree_structure(tu.Partial(operator.mul, 5)) != tu.tree_structure(add)
    assert tu.tree_leaves(tu.Partial(print)) == []


def test_is_leaf():
    tree = [(1, 2), {"a": (3, 4)}, None]
    is_pair = lambda x: isinstance(x, tuple) and len(x) == 2  # noqa: E731
    leaves, treedef = tu.tree_flatten(tree, is_leaf=is_pair)
    assert leaves == [(1, 2), (3, 4)]
    assert treedef.num_leaves == 2
    assert tu.tree_unflatten(treedef, leaves) == tree
    assert tu.tree_leaves(tree, is_leaf=lambda x: x is None) == [1, 2, 3, 4, None]
    assert tu.tree_leaves(tree, is_leaf=lambda x: True) == [tree]
    assert tu.tree_map(lambda p: p[0] + p[1], tree, is_leaf=is_pair) == [3, {"a": 7}, None]
    assert tu.tree_structure(tree, is_leaf=is_pair) == treedef


def test_unflatten_accepts_any_iterable():
    treedef = tu.tree_structure([1, (2, 3)])
    assert tu.tree_unflatten(treedef, "abc") == ["a", ("b", "c")]
    assert tu.tree_unflatten(treedef, iter([1, 2, 3])) == [1, (2, 3)]
    assert tu.tree_unflatten(treedef, (x for x in range(3))) == [0, (1, 2)]
    flat = tu.tree_structure((1, 2))
    assert flat.unflatten(["a", "b"]) == ("a", "b")
    assert type(flat.unflatten(["a", "b"])) is tuple


def test_unflatten_wrong_number_of_leaves():
    treedef = tu.tree_structure((1, {"a": 2}))
    with pytest.raises(ValueError) as info:
        tu.tree_unflatten(treedef, [1])
    message = str(info.value)
    assert "2" in message and "1" in message and "PyTreeDef((*, {'a': *}))" in message
    with pytest.raises(ValueError, match="3 leaves were given"):
        tu.tree_unflatten(treedef, [1, 2, 3])
    with pytest.raises(ValueError):
        tu.tree_unflatten(tu.tree_structure((1, 2)), [1, 2, 3])


# --- tree_map and flatten_up_to ------------------------------------------------------------

def test_tree_map_single_and_several_trees():
    tree = {"a": [1, 2], "b": (3, None)}
    assert tu.tree_map(lambda x: x + 1, tree) == {"a": [2, 3], "b": (4, None)}
    other = {"a": [10, 20], "b": (30, None)}
    third = {"b": (300, None), "a": [100, 200]}
    assert tu.tree_map(lambda x, y, z: x + y + z, tree, other, third) == {
        "a": [111, 222], "b": (333, None)}


def test_tree_map_rest_trees_may_be_deeper():
    # Where the first tree has a leaf, f gets the whole subtree of the others.
    got = tu.tree_map(lambda x, y: (x, y), (1, 2), ([3], {"k": 4}))
    assert got == ((1, [3]), (2, {"k": 4}))
    assert tu.tree_map(lambda x, y: (x, y), (1, 2), (1, None)) == ((1, 1), (2, None))
    assert tu.tree_map(lambda x, y: (x, y), (1, None), (1, None)) == ((1, 1), None)


@pytest.mark.parametrize("first, other, detail", [
    ((1, 2), (1, 2, 3), "length 2"),
    ([1, 2], (1, 2), "a list"),
    ({"a": 1}, {"b": 1}, "keys"),
    ((1, [2]), (1, (2,)), "tree[1]"),
    ((1, None), (1, 2), "tree[1]"),
    ({"a": {"b": [1]}}, {"a": {"b": (1,)}}, "tree['a']['b']"),
    (Point(1, [2]), Point(1, (2,)), "tree.y"),
    (Pair(1, 2, tag="x"), Pair(1, 2, tag="y"), "aux data"),
    (Box((1, 2), "l"), Box((1,), "l"), "tree[<flat index 0>]"),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1), "keys"),
])
def test_tree_map_structure_mismatch(first, other, detail):
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda *xs: xs[0], first, other)
    message = str(info.value)
    assert detail in message
    assert repr(tu.tree_structure(first)) in message  # both structures are shown
    assert repr(tu.tree_structure(other)) in message


def test_flatten_up_to():
    treedef = tu.tree_structure((1, {"a": 2, "b": 3}))
    assert treedef.flatten_up_to(([1], {"a": (2,), "b": None})) == [[1], (2,), None]
    assert tu.tree_structure(1).flatten_up_to({"x": 1}) == [{"x": 1}]
    assert tu.tree_structure(None).flatten_up_to(None) == []
    with pytest.raises(ValueError, match="expected a NoneType, got a int"):
        tu.tree_structure([None]).flatten_up_to([0])
    with pytest.raises(ValueError):
        treedef.flatten_up_to((1, {"a": 2}))


# --- other functions -----------------------------------------------------------------------

def test_tree_reduce_and_all():
    assert tu.tree_reduce(operator.add, [1, (2, 3), {"a": 4}]) == 10
    assert tu.tree_reduce(operator.add, [], 0) == 0
    assert tu.tree_reduce(operator.add, [[1], [2]], 100) == 103
    with pytest.raises(TypeError):
        tu.tree_reduce(operator.add, [])
    assert tu.tree_all([True, (1, "x")])
    assert not tu.tree_all([True, (0,)])
    assert tu.tree_all([None, ()])
    assert tu.tree_reduce(lambda total, x: total + len(x), [[1, 2], [3]], 0,
                          is_leaf=lambda x: isinstance(x, list) and
                          all(type(v) is int for v in x)) == 3


def test_treedef_tuple_and_children():
    a, b = tu.tree_structure(1), tu.tree_structure([1, 2])
    combined = tu.treedef_tuple([a, b])
    assert combined == tu.tree_structure((0, [0, 0]))
    assert combined.num_leaves == 3 and combined.num_nodes == 5
    assert tu.treedef_children(combined) == [a, b]
    assert combined.children() == [a, b]
    assert tu.tree_unflatten(combined, [1, 2, 3]) == (1, [2, 3])
    assert tu.treedef_tuple([]) == tu.tree_structure(())
    assert tu.tree_structure({"a": 1, "b": (2,)}).children() == [a, tu.tree_structure((0,))]


def test_all_leaves():
    assert tu.all_leaves([1, 2.0, "s", np.ones(2)])
    assert not tu.all_leaves([1, (2,)])
    assert not tu.all_leaves([None])
    assert tu.all_leaves([])
    assert tu.all_leaves([(1, 2)], is_leaf=lambda x: isinstance(x, tuple))


def test_num_leaves_and_nodes():
    treedef = tu.tree_structure((1, [2, None], {"a": 3}))
    assert treedef.num_leaves == 3
    # tuple, 1, list, 2, None, dict, 3
    assert treedef.num_nodes == 7
    assert tu.tree_structure(1).num_nodes == 1


def test_treedef_equality_and_hash():
    a = tu.tree_structure((np.ones(2), {"x": 1.0, "y": [2]}))
    b = tu.tree_structure(("leaf", {"y": ["leaf"], "x": None.__class__}))
    assert a == b and hash(a) == hash(b)
    assert a != tu.tree_structure((1, {"x": 1, "y": (2,)}))
    assert a != tu.tree_structure((1, {"x": 1, "z": [2]}))
    assert tu.tree_structure([1]) != tu.tree_structure((1,))
    assert tu.tree_structure(None) != tu.tree_structure(1)
    cache = {a: "hit"}
    assert cache[b] == "hit"
    assert len({tu.tree_structure(t) for t in [(1, 2), (3, 4), [1, 2], (1,)]}) == 3


def test_treedef_is_immutable_and_picklable():
    treedef = tu.tree_structure((1, {"a": [2]}, Point(3, 4)))
    with pytest.raises(AttributeError):
        treedef.num_leaves = 5
    assert pickle.loads(pickle.dumps(treedef)) == treedef
    assert isinstance(pickle.loads(pickle.dumps(treedef)), tu.PyTreeDef)


@pytest.mark.parametrize("tree, text", [
    (1, "PyTreeDef(*)"),
    (None, "PyTreeDef(None)"),
    ((), "PyTreeDef(())"),
    ((1,), "PyTreeDef((*,))"),
    ((1, {"b": None, "a": 2}), "PyTreeDef((*, {'a': *, 'b': None}))"),
    ([1, [2]], "PyTreeDef([*, [*]])"),
    ({1: 2, 3: (4,)}, "PyTreeDef({1: *, 3: (*,)})"),
    (Point(1, 2), "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"),
    (collections.OrderedDict(b=1, a=2),
     "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"),
    (collections.defaultdict(list, {"b": 1, "a": 2}),
     "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))"),
    (Pair(1, (2, 3), tag="aux"), "PyTreeDef(CustomNode(Pair[aux], [*, (*, *)]))"),
    (tu.Partial(print, 1, k=2),
     "PyTreeDef(CustomNode(Partial[<built-in function print>], [(*,), {'k': *}]))"),
])
def test_repr_like_jax(tree, text):
    assert repr(tu.tree_structure(tree)) == text
    assert str(tu.tree_structure(tree)) == text


def test_unsortable_dict_keys():
    with pytest.raises(ValueError, match="sortable"):
        tu.tree_flatten({1: "a", "b": 2})


# --- random structures ---------------------------------------------------------------------

_leaf_values = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
                         st.booleans())
_keys = st.text(alphabet="abcdef", min_size=1, max_size=3)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_keys, children, max_size=4),
        st.tuples(children, children).map(lambda xy: Point(*xy)),
        st.lists(st.tuples(_keys, children), max_size=4).map(collections.OrderedDict),
        st.dictionaries(_keys, children, max_size=3).map(
            lambda d: collections.defaultdict(int, d)),
        st.tuples(children, children).map(lambda ab: Pair(*ab)),
        st.tuples(children, _keys).map(lambda vl: Box(*vl)),
    )


_trees = st.recursive(st.one_of(_leaf_values, st.none()), _containers, max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_trees)
def test_random_round_trip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert _same(rebuilt, tree)
    assert tu.tree_structure(rebuilt) == treedef
    # Replacing the leaves keeps the structure; their order is the flatten order.
    numbered = tu.tree_unflatten(treedef, range(len(leaves)))
    assert tu.tree_leaves(numbered) == list(range(len(leaves)))
    assert tu.tree_structure(numbered) == treedef
    assert hash(tu.tree_structure(numbered)) == hash(treedef)
    assert _same(tu.tree_map(lambda x: x, tree), tree)
    assert _same(tu.tree_map(lambda x, y: y, tree, numbered), numbered)
    assert treedef.flatten_up_to(numbered) == list(range(len(leaves)))
    if not tu.treedef_is_leaf(treedef):
        assert tu.treedef_tuple(treedef.children()).num_leaves == treedef.num_leaves
    assert pickle.loads(pickle.dumps(treedef)) == treedef


@settings(max_examples=200, deadline=None)
@given(_trees, _trees)
def test_random_structures_equal_iff_same_shape(a, b):
    same = tu.tree_structure(a) == tu.tree_structure(b)
    numbered_a = tu.tree_unflatten(tu.tree_structure(a), range(tu.tree_structure(a).num_leaves))
    if same:
        assert repr(tu.tree_structure(a)) == repr(tu.tree_structure(b))
        assert tu.tree_structure(b).flatten_up_to(numbered_a) == tu.tree_leaves(numbered_a)
    else:
        try:
            tu.tree_structure(a).flatten_up_to(b)
        except ValueError:
            pass  # a mismatch is reported as ValueError, never anything else


def test_many_leaf_types_keep_their_classification():
    """Classes made on the fly are cached as leaf types; the cache is bounded."""
    classes = [type(f"Leaf{i}", (), {}) for i in range(5000)]
    tuples = [collections.namedtuple(f"NT{i}", ["a"]) for i in range(50)]
    for cls in classes:
        assert tu.tree_leaves([cls(), None]) != []
    assert all(tu.tree_leaves(nt((1, 2))) == [1, 2] for nt in tuples)
    assert tu.tree_leaves(Pair(1, Point(2, 3))) == [1, 2, 3]


class Scaled:
    """A node whose aux data is a dict, which JAX accepts (its Common Gotchas notebook)."""

    def __init__(self, x, options):
        self.x, self.options = x, options


tu.register_pytree_node(Scaled, lambda s: ((s.x,), dict(s.options)),
                        lambda aux, children: Scaled(*children, aux))


def test_unhashable_aux_data_works_in_treedefs_and_jit():
    import pyree
    a, b = (tu.tree_structure(Scaled(1.0, {"mul": m})) for m in (2, 2))
    assert a == b and hash(a) == hash(b)
    assert a != tu.tree_structure(Scaled(1.0, {"mul": 3}))
    calls = []

    @pyree.jit
    def f(s, y):
        calls.append(1)
        return s.x * y * s.options["mul"]

    assert float(f(Scaled(2.0, {"mul": 3}), 4.0)) == 24.0
    assert float(f(Scaled(5.0, {"mul": 3}), 4.0)) == 60.0
    assert float(f(Scaled(5.0, {"mul": 1}), 4.0)) == 20.0    # other aux data: traced again
    assert len(calls) == 2
