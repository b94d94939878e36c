"""``pyree.vmap``: every batching rule against the per-example computation, stacked.

Each check builds a batch of examples, runs ``pyree.vmap(f, in_axes, out_axes)`` on it, and
compares with ``f`` applied to each example (eagerly, by pyree) and stacked along ``out_axes``.
Hypothesis draws the batch axes (0, 1, -1, or None for arguments shared by every example), the
output axes, the batch size (1 included) and the data. Most checks run eagerly, where each
primitive is one shape-polymorphic kernel compiled once, so that drawing many shapes costs
little; the ``jit`` compositions compile a program per shape and are kept few.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyree
import pyree.numpy as jnp
from pyree import lax, tree_util

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
FEW = settings(SETTINGS, max_examples=3)

F32 = np.float32
I32 = np.int32


# -- the check -------------------------------------------------------------------------------------

def _stack_at(xs, axis):
    return np.moveaxis(np.stack([np.asarray(x) for x in xs]), 0, axis)


def _out_axis(oa, example_ndim):
    """``oa`` (0, 1 or -1) made valid for an output whose examples have rank ``example_ndim``."""
    return oa if oa != 1 or example_ndim >= 1 else -1


def check_vmap(f, examples, in_axes, out_axes=0, *, rtol=1e-5, atol=1e-6, transform=None,
               vmap_kwargs=None):
    """``vmap(f, in_axes, out_axes)`` on ``examples`` (one tuple of arguments per example;
    arguments whose axis is None take the first example's value) equals ``f`` on each example,
    stacked at ``out_axes`` (an int, adjusted per output leaf of rank 0, or a pytree)."""
    size = len(examples)
    n = len(examples[0])
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * n
    args = tuple(examples[0][j] if ax is None else _stack_at([e[j] for e in examples], ax)
                 for j, ax in enumerate(axes))
    per_example = [tuple(examples[0][j] if ax is None else e[j] for j, ax in enumerate(axes))
                   for e in examples]
    refs = [f(*a) for a in per_example]
    ref_weak = [getattr(x, "weak_type", None) for x in tree_util.tree_leaves(refs[0])]
    ref_leaves = [[np.asarray(x) for x in tree_util.tree_leaves(r)] for r in refs]
    tree = tree_util.tree_structure(refs[0])
    if isinstance(out_axes, int):
        leaf_axes = [_out_axis(out_axes, x.ndim) for x in ref_leaves[0]]
        out_axes = tree_util.tree_unflatten(tree, leaf_axes)
    else:
        leaf_axes = tree_util.tree_leaves(out_axes, is_leaf=lambda x: x is None)
        if len(leaf_axes) == 1 and len(ref_leaves[0]) > 1:
            leaf_axes = leaf_axes * len(ref_leaves[0])
    kwargs = dict(vmap_kwargs or {})
    if all(ax is None for ax in axes):
        kwargs.setdefault("axis_size", size)
    batched = pyree.vmap(f, in_axes=in_axes, out_axes=out_axes, **kwargs)
    if transform is not None:
        batched = transform(batched)
    got = batched(*args)
    assert tree_util.tree_structure(got) == tree
    for k, (g, oa) in enumerate(zip(tree_util.tree_leaves(got), leaf_axes)):
        want = _stack_at([leaves[k] for leaves in ref_leaves], oa)
        if ref_weak[k] is not None and isinstance(g, pyree.Array):
            assert g.weak_type == ref_weak[k], (k, g.weak_type, ref_weak[k])
        g = np.asarray(g)
        assert g.dtype == want.dtype, (k, g.dtype, want.dtype)
        assert g.shape == want.shape, (k, g.shape, want.shape)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, want)
    return got


@st.composite
def batching(draw, ranks, batched=None, sizes=(1, 2, 3)):
    """(batch size, in_axes, out_axes, seed) for arguments of example ranks ``ranks``; the
    entries of ``batched`` that are True are always mapped (default: at least one)."""
    size = draw(st.sampled_from(sizes))
    axes = []
    for k, r in enumerate(ranks):
        choices = [0, -1] + ([1] if r >= 1 else [])
        if batched is None or not batched[k]:
            choices.append(None)
        axes.append(draw(st.sampled_from(choices)))
    if batched is None and all(a is None for a in axes):
        axes[draw(st.integers(0, len(axes) - 1))] = 0
    out_axes = draw(st.sampled_from([0, 1, -1]))
    seed = draw(st.integers(0, 2 ** 16))
    return size, tuple(axes), out_axes, seed


def examples_of(make, size, seed):
    rng = np.random.RandomState(seed)
    return [make(rng) for _ in range(size)]


# -- data ------------------------------------------------------------------------------------------

def _f(lo=-2.0, hi=2.0):
    return lambda rng, shape: rng.uniform(lo, hi, shape).astype(F32)


def _nonzero(rng, shape):
    return (rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(F32)


def _i(lo=-6, hi=7):
    return lambda rng, shape: rng.randint(lo, hi, shape).astype(I32)


def _b(rng, shape):
    return rng.rand(*shape) < 0.5 if shape else np.asarray(rng.rand() < 0.5)


def _halves(rng, shape):  # ties for round: x.5 values
    return (rng.randint(-6, 7, shape) + 0.5 * rng.randint(0, 2, shape)).astype(F32)


FLOAT, POS, INT, NONZERO = _f(), _f(0.2, 2.0), _i(), _nonzero
SHIFT = _i(0, 8)
UNIT = _f(-0.9, 0.9)

# -- elementwise -----------------------------------------------------------------------------------
# (name, function, data per operand). lax's elementwise functions take rank-0 operands against
# arrays as they are (no explicit broadcast), which exercises the rule's rank-0 path.

UNARY = [
    ("neg", lax.neg, FLOAT), ("exp", lax.exp, FLOAT), ("log", lax.log, POS),
    ("log1p", lax.log1p, POS), ("expm1", lax.expm1, FLOAT), ("sin", lax.sin, FLOAT),
    ("cos", lax.cos, FLOAT), ("tan", lax.tan, UNIT), ("tanh", lax.tanh, FLOAT),
    ("logistic", lax.logistic, FLOAT), ("sqrt", lax.sqrt, POS), ("rsqrt", lax.rsqrt, POS),
    ("cbrt", lax.cbrt, FLOAT), ("abs", lax.abs, FLOAT), ("abs_int", lax.abs, INT),
    ("sign", lax.sign, FLOAT), ("floor", lax.floor, FLOAT), ("ceil", lax.ceil, FLOAT),
    ("round_away", lax.round, _halves),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), _halves),
    ("erf", lax.erf, FLOAT), ("is_finite", lax.is_finite, FLOAT),
    ("not_bool", lax.bitwise_not, _b), ("not_int", lax.bitwise_not, INT),
    ("integer_pow_3", lambda x: lax.integer_pow(x, 3), FLOAT),
    ("integer_pow_-2", lambda x: lax.integer_pow(x, -2), POS),
    ("convert_f2i", lambda x: lax.convert_element_type(x, jnp.int32), _f(-9, 9)),
    ("convert_i2f", lambda x: lax.convert_element_type(x, jnp.float32), INT),
    ("convert_b2f", lambda x: lax.convert_element_type(x, jnp.float32), _b),
    ("astype_bool", lambda x: x.astype(jnp.bool_), INT),
]

BINARY = [
    ("add", lax.add, FLOAT, FLOAT), ("sub", lax.sub, FLOAT, FLOAT), ("mul", lax.mul, FLOAT, FLOAT),
    ("div", lax.div, FLOAT, NONZERO), ("div_int", lax.div, INT, _i(1, 5)),
    ("rem", lax.rem, FLOAT, NONZERO), ("rem_int", lax.rem, INT, _i(1, 5)),
    ("pow", lax.pow, POS, FLOAT), ("max", lax.max, FLOAT, FLOAT), ("min", lax.min, INT, INT),
    ("atan2", lax.atan2, FLOAT, FLOAT),
    ("and", lax.bitwise_and, INT, INT), ("or", lax.bitwise_or, _b, _b),
    ("xor", lax.bitwise_xor, INT, INT), ("shift_left", lax.shift_left, INT, SHIFT),
    ("shift_right_arithmetic", lax.shift_right_arithmetic, INT, SHIFT),
    ("shift_right_logical", lax.shift_right_logical, INT, SHIFT),
    ("eq", lax.eq, INT, INT), ("ne", lax.ne, _i(0, 2), _i(0, 2)), ("lt", lax.lt, FLOAT, FLOAT),
    ("le", lax.le, INT, INT), ("gt", lax.gt, FLOAT, FLOAT), ("ge", lax.ge, INT, INT),
]



@pytest.mark.parametrize("name,fun,gen", UNARY, ids=[c[0] for c in UNARY])
@SETTINGS
@given(hyp=st.data())
def test_unary(name, fun, gen, hyp):
    shape = hyp.draw(st.sampled_from([(), (4,), (2, 3)]))
    size, in_axes, out_axes, seed = hyp.draw(batching([len(shape)]))
    check_vmap(fun, examples_of(lambda rng: (gen(rng, shape),), size, seed), in_axes, out_axes)


@pytest.mark.parametrize("name,fun,gen_x,gen_y", BINARY, ids=[c[0] for c in BINARY])
@SETTINGS
@given(hyp=st.data())
def test_binary(name, fun, gen_x, gen_y, hyp):
    """Both operands of one shape, or one (or both) of rank 0; batched or not (at least one)."""
    shape = hyp.draw(st.sampled_from([(4,), (2, 3)]))
    sx, sy = hyp.draw(st.sampled_from([(shape, shape), (shape, ()), ((), shape), ((), ())]))
    size, in_axes, out_axes, seed = hyp.draw(batching([len(sx), len(sy)]))
    examples = examples_of(lambda rng: (gen_x(rng, sx), gen_y(rng, sy)), size, seed)
    check_vmap(fun, examples, in_axes, out_axes)


@SETTINGS
@given(hyp=st.data())
@pytest.mark.vulkan_subset
def test_select(hyp):
    """lax.select with a batched predicate (or not), operands of rank 0 or not."""
    shape = hyp.draw(st.sampled_from([(4,), (2, 3)]))
    shapes = [hyp.draw(st.sampled_from([shape, ()])) for _ in range(3)]
    size, in_axes, out_axes, seed = hyp.draw(batching([len(s) for s in shapes]))
    examples = examples_of(lambda rng: (_b(rng, shapes[0]), FLOAT(rng, shapes[1]),
                                        INT(rng, shapes[2]).astype(F32)), size, seed)
    check_vmap(lax.select, examples, in_axes, out_axes)


def _numpy_broadcasting(x, y, s):
    z = jnp.where(x > s, x * y, y - s) + jnp.clip(x, -1.0, 1.0) * 2
    return z, jnp.maximum(x, 0.5) + s, (x < y).astype(jnp.int32) + 1


@SETTINGS
@given(hyp=st.data())
def test_numpy_broadcasting(hyp):
    """pyree.numpy's broadcasting (explicit broadcast_in_dim) between batched and shared
    operands of different ranks, Python scalars, several outputs."""
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 1, 0]))
    examples = examples_of(lambda rng: (FLOAT(rng, (2, 3)), FLOAT(rng, (3,)), FLOAT(rng, ())),
                           size, seed)
    check_vmap(_numpy_broadcasting, examples, in_axes, out_axes)


# -- shapes, slicing, padding, concatenation, iota -------------------------------------------------
# (name, function, (data, example shape) per argument)

def _a(shape, gen=FLOAT):
    return gen, shape


def _iota_fun(x):
    return x * jnp.arange(4.0) + lax.broadcasted_iota(jnp.float32, (4,), 0) * x[0]


def _iota_unbatched(x):
    return jnp.arange(3), jnp.arange(6).reshape(2, 3) + x.sum().astype(jnp.int32)


SHAPE_CASES = [
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)), [_a((2, 4))]),
    ("broadcast_in_dim_size1", lambda x: lax.broadcast_in_dim(x, (3, 2, 4), (1, 2)),
     [_a((2, 1))]),
    ("broadcast_rank0", lambda s: lax.broadcast_in_dim(s, (2, 3), ()), [_a(())]),
    ("broadcast_to", lambda x, y: jnp.broadcast_to(x, (3, 2, 4)) * y, [_a((4,)), _a((2, 4))]),
    ("reshape", lambda x: jnp.reshape(x, (4, 6)), [_a((2, 3, 4))]),
    ("reshape_dimensions", lambda x: lax.reshape(x, (4, 6), dimensions=(2, 0, 1)),
     [_a((2, 3, 4))]),
    ("ravel_expand_squeeze", lambda x: (jnp.ravel(x), jnp.expand_dims(x, 1),
                                        jnp.squeeze(x[:1], 0)), [_a((2, 3))]),
    ("reshape_from_rank0", lambda s: jnp.reshape(s, (1, 1)), [_a(())]),
    ("transpose", lambda x: jnp.transpose(x, (2, 0, 1)), [_a((2, 3, 4))]),
    ("transpose_T_moveaxis", lambda x: (x.T, jnp.moveaxis(x, 0, -1), jnp.swapaxes(x, 0, 1)),
     [_a((2, 3, 4))]),
    ("rev", lambda x: (lax.rev(x, (0,)), lax.rev(x, (0, 2)), lax.rev(x, (1,))),
     [_a((2, 3, 4))]),
    ("getitem_reversed", lambda x: x[::-1, 1:, ::-2], [_a((3, 4, 5))]),
    ("slice_strided", lambda x: lax.slice(x, (0, 1, 0), (3, 4, 5), (2, 2, 3)), [_a((3, 4, 5))]),
    ("slice_nostride", lambda x: lax.slice(x, (1, 0), (3, 2)), [_a((3, 4))]),
    ("getitem_static", lambda x: (x[1:, ::2], x[2], x[:, 1], x[None, 1:3]), [_a((3, 4))]),
    ("pad", lambda x: lax.pad(x, 0.0, [(1, 2, 1), (0, -1, 0)]), [_a((3, 4))]),
    ("pad_negative_interior", lambda x: lax.pad(x, -1.5, [(-1, 2, 2), (2, -2, 1)]),
     [_a((3, 4))]),
    ("pad_value", lambda x, p: lax.pad(x, p, [(1, 2, 1), (2, 0, 0)]), [_a((3, 4)), _a(())]),
    ("pad_value_crop", lambda x, p: lax.pad(x, p, [(-1, 1, 1), (1, -2, 0)]),
     [_a((3, 4)), _a(())]),
    ("pad_value_int", lambda x, p: lax.pad(x, p, [(0, 1, 1)]), [_a((3,), INT), _a((), INT)]),
    ("concatenate", lambda x, y, z: jnp.concatenate([x, y, z], axis=1),
     [_a((2, 3)), _a((2, 1)), _a((2, 2))]),
    ("concatenate_axis0", lambda x, y: lax.concatenate([x, y, x], 0), [_a((2, 3)), _a((1, 3))]),
    ("stack", lambda x, y: (jnp.stack([x, y]), jnp.stack([x, y], axis=-1)),
     [_a((2, 3)), _a((2, 3))]),
    ("iota", _iota_fun, [_a((4,))]),
    ("iota_unbatched_output", _iota_unbatched, [_a((2,))]),
    ("linspace_arange", lambda x: jnp.linspace(0.0, 1.0, 5) * x + jnp.arange(2, 12, 2), [_a(())]),
]


def _check_cases(case, hyp):
    name, fun, args = case
    shapes = [shape for _, shape in args]
    size, in_axes, out_axes, seed = hyp.draw(batching([len(s) for s in shapes]))
    examples = examples_of(lambda rng: tuple(gen(rng, shape) for gen, shape in args), size,
                           seed)
    check_vmap(fun, examples, in_axes, out_axes, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
@SETTINGS
@given(hyp=st.data())
def test_shape_ops(case, hyp):
    _check_cases(case, hyp)


# -- reductions ------------------------------------------------------------------------------------

def _distinct(rng, shape):  # no ties, for argmax/argmin
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.25 - 3).astype(F32)


REDUCTION_CASES = [
    ("sum", lambda x: (jnp.sum(x), jnp.sum(x, axis=0), jnp.sum(x, axis=(0, 2)),
                       jnp.sum(x, axis=-1, keepdims=True)), [_a((2, 3, 4))]),
    ("prod", lambda x: (jnp.prod(x, axis=1), lax.reduce_prod(x, (0, 2))),
     [_a((2, 3, 4), _f(0.5, 1.5))]),
    ("max_min", lambda x: (jnp.max(x, axis=2), jnp.min(x), lax.reduce_max(x, (0, 1)),
                           lax.reduce_min(x, (1,))), [_a((2, 3, 4))]),
    ("max_min_int", lambda x: (jnp.max(x, axis=0), jnp.min(x, axis=1)), [_a((3, 4), INT)]),
    ("mean_var_std", lambda x: (jnp.mean(x, axis=1), jnp.var(x, axis=0), jnp.std(x)),
     [_a((3, 4))]),
    ("all_any", lambda b: (jnp.all(b, axis=0), jnp.any(b, axis=1), jnp.all(b), jnp.any(b),
                           lax.reduce_and(b, (0, 1)), lax.reduce_or(b, (1,))), [_a((3, 4), _b)]),
    ("argmax", lambda x: (jnp.argmax(x, axis=0), jnp.argmax(x, axis=-1), jnp.argmax(x),
                          lax.argmax(x, 1, jnp.int32)), [_a((2, 3, 4), _distinct)]),
    ("argmin", lambda x: (jnp.argmin(x, axis=1), jnp.argmin(x), lax.argmin(x, 2, jnp.int32)),
     [_a((2, 3, 4), _distinct)]),
    ("argmax_int", lambda x: jnp.argmax(x, axis=0), [_a((5, 2), _i(-100, 100))]),
    ("sum_rank1", lambda x, y: jnp.sum(x * y), [_a((5,)), _a((5,))]),
]


@pytest.mark.parametrize("case", REDUCTION_CASES, ids=[c[0] for c in REDUCTION_CASES])
@SETTINGS
@given(hyp=st.data())
def test_reductions(case, hyp):
    _check_cases(case, hyp)


# -- dot_general -----------------------------------------------------------------------------------

DOT_CASES = [  # (lhs shape, rhs shape, dimension_numbers)
    ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ((3, 2), (4, 3), (((0,), (1,)), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),
    ((2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ()))),
    ((3,), (4,), (((), ()), ((), ()))),
    ((3,), (3,), (((0,), (0,)), ((), ()))),
    ((4, 2, 3), (3, 2), (((2,), (0,)), ((1,), (1,)))),
    ((3, 1), (1, 4), (((1,), (0,)), ((), ()))),  # contracting dims of size 1: outer products
    ((2, 3, 1), (1, 2, 4), (((2,), (0,)), ((0,), (1,)))),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dn", DOT_CASES,
                         ids=[f"{l}x{r}" for l, r, _ in DOT_CASES])
@SETTINGS
@given(hyp=st.data())
def test_dot_general(lhs_shape, rhs_shape, dn, hyp):
    """Batched lhs only, rhs only, or both, at any axis."""
    which = hyp.draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    size, in_axes, out_axes, seed = hyp.draw(batching([len(lhs_shape), len(rhs_shape)], which))
    in_axes = tuple(a if b else None for a, b in zip(in_axes, which))
    examples = examples_of(lambda rng: (FLOAT(rng, lhs_shape), FLOAT(rng, rhs_shape)), size,
                           seed)
    check_vmap(lambda a, b: lax.dot_general(a, b, dn), examples, in_axes, out_axes,
               rtol=1e-5, atol=1e-5)


MATMUL_CASES = [
    ("matmul", jnp.matmul, [_a((2, 3)), _a((3, 4))]),
    ("matmul_batched", jnp.matmul, [_a((2, 2, 3)), _a((3, 4))]),
    ("matvec", jnp.matmul, [_a((2, 3)), _a((3,))]),
    ("dot", jnp.dot, [_a((2, 3)), _a((3, 4))]),
    ("dot_vec", jnp.dot, [_a((3,)), _a((3,))]),
    ("inner_outer_vdot", lambda a, b: (jnp.inner(a, b), jnp.outer(a, b), jnp.vdot(a, b)),
     [_a((3,)), _a((3,))]),
    ("matmul_operator", lambda a, b: a @ b + 1.0, [_a((2, 3)), _a((3, 2))]),
]


@pytest.mark.parametrize("case", MATMUL_CASES, ids=[c[0] for c in MATMUL_CASES])
@SETTINGS
@given(hyp=st.data())
def test_matmul(case, hyp):
    _check_cases(case, hyp)


# -- dynamic_slice / dynamic_update_slice ----------------------------------------------------------

def _with_specials(rng, shape):
    """Floats with an inf and a nan somewhere: outside a window they must not leak in."""
    x = FLOAT(rng, shape)
    flat = x.reshape(-1)
    flat[rng.randint(flat.size)] = np.inf
    flat[rng.randint(flat.size)] = np.nan
    return x


IDX = _i(-3, 9)  # out of range on both sides of a (5, 6) operand: clamped


@pytest.mark.parametrize("sizes", [(2, 3), (5, 3), (1, 6), (5, 6)])
@pytest.mark.parametrize("gen", [_with_specials, INT, _b], ids=["float", "int", "bool"])
@SETTINGS
@given(hyp=st.data())
def test_dynamic_slice(sizes, gen, hyp):
    """Starts shared or per example (out-of-range ones clamp), operand batched or not."""
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 0, 0]))
    examples = examples_of(lambda rng: (gen(rng, (5, 6)), IDX(rng, ()), IDX(rng, ())), size,
                           seed)
    check_vmap(lambda x, i, j: lax.dynamic_slice(x, (i, j), sizes), examples, in_axes,
               out_axes)


def _getitem_traced(x, i, j):
    return x[i], x[i, 1:4], x[:, j], x[i, j]


@SETTINGS
@given(hyp=st.data())
def test_getitem_traced_index(hyp):
    """x[i] with traced (negative: from the end) indices, shared or per example."""
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 0, 0]))
    examples = examples_of(lambda rng: (FLOAT(rng, (5, 6)), _i(-5, 5)(rng, ()),
                                        _i(-6, 6)(rng, ())), size, seed)
    check_vmap(_getitem_traced, examples, in_axes, out_axes)


@pytest.mark.parametrize("ushape", [(2, 3), (5, 2), (1, 6), (5, 6)])
@pytest.mark.parametrize("gen", [_with_specials, INT, _b], ids=["float", "int", "bool"])
@SETTINGS
@given(hyp=st.data())
def test_dynamic_update_slice(ushape, gen, hyp):
    """Operand, update and starts each shared or per example; out-of-range starts clamp."""
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 2, 0, 0]))
    examples = examples_of(lambda rng: (gen(rng, (5, 6)), gen(rng, ushape), IDX(rng, ()),
                                        IDX(rng, ())), size, seed)
    check_vmap(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), examples, in_axes,
               out_axes)


def _at_updates(x, v, i):
    x = jnp.asarray(x)
    return x.at[i].set(v), x.at[i].add(v * 2), x.at[i, 1:3].set(v[:2]), x.at[1].multiply(v)


@SETTINGS
@given(hyp=st.data())
def test_at_set_traced_index(hyp):
    """x.at[i].set(v) & co with i and/or v per example."""
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 1, 0]))
    examples = examples_of(lambda rng: (FLOAT(rng, (4, 3)), FLOAT(rng, (3,)), _i(-4, 4)(rng, ())),
                           size, seed)
    check_vmap(_at_updates, examples, in_axes, out_axes)


# -- corner cases ----------------------------------------------------------------------------------

_X = FLOAT(np.random.RandomState(7), (3, 5, 6))


def _ds(x, i, j):
    return lax.dynamic_slice(x, (i, j), (2, 2))


def _dus(x, u, i, j):
    return lax.dynamic_update_slice(x, u, (i, j))


CORNER_CASES = [  # (name, function, examples, in_axes)
    ("slice_start_dtypes_shared", _ds, [(_X[k], np.int32(k + 1), np.uint8(k)) for k in range(3)],
     (0, None, None)),
    ("slice_start_dtypes_batched", _ds, [(_X[k], np.int8(k - 1), np.uint8(2 * k))
                                         for k in range(3)], (None, 0, 0)),
    ("update_start_dtypes_shared", _dus, [(_X[k], _X[k, :2, :3] * 10, np.int8(k - 1),
                                           np.uint32(3 * k)) for k in range(3)],
     (0, 0, None, None)),
    ("update_start_dtypes_batched", _dus, [(_X[k], _X[k, :2, :3] * 10, np.int8(k - 1),
                                            np.uint32(3 * k)) for k in range(3)],
     (0, None, 0, 0)),
    ("slice_size_0", lambda x, i: lax.dynamic_slice(x, (i, 0), (0, 6)),
     [(_X[k], np.int32(k)) for k in range(3)], (None, 0)),
    ("slice_rank0", lambda x: lax.dynamic_slice(x, (), ()), [(np.float32(k),) for k in range(3)],
     0),
    ("update_rank0", lambda x, u: lax.dynamic_update_slice(x, u, ()),
     [(np.float32(k), np.float32(k + 1)) for k in range(3)], (0, None)),
    ("getitem_int64_uint_index", lambda x, i, j: (x[i], x[j]),
     [(_X[k], np.int64(k - 2), np.uint32(k)) for k in range(3)], (None, 0, 0)),
    ("reduce_no_axes", lambda x: lax.reduce_sum(x, ()), [(_X[k],) for k in range(3)], 1),
    ("argmax_nan", lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)),
     [(np.array([[1, np.nan, 2], [3, 1, 0]], F32) + k,) for k in range(3)], -1),
    ("sum_bool", lambda b: jnp.sum(b, axis=0), [(_X[k] < 0,) for k in range(3)], 1),
    ("pad_rank0", lambda a, p: lax.pad(a, p, []), [(np.float32(k), np.float32(-k))
                                                   for k in range(3)], (0, 0)),
    ("clamp_batched_bound", lambda lo, a, hi: lax.clamp(lo, a, hi),
     [(np.float32(-0.5 * k), _X[k, 0], np.float32(0.2)) for k in range(3)], (0, None, None)),
    ("constant_output", lambda x: (jnp.ones(3), x), [(_X[k, 0, 0],) for k in range(2)], 0),
]


@pytest.mark.parametrize("case", CORNER_CASES, ids=[c[0] for c in CORNER_CASES])
@pytest.mark.parametrize("out_axes", [0, -1])
def test_corner_cases(case, out_axes):
    name, fun, examples, in_axes = case
    check_vmap(fun, examples, in_axes, out_axes)


def test_batch_size_0():
    got = pyree.vmap(jnp.sin)(np.ones((0, 3), F32))
    assert got.shape == (0, 3)
    got = pyree.vmap(_ds, in_axes=(None, 0, 0))(_X[0], np.zeros(0, I32), np.zeros(0, I32))
    assert got.shape == (0, 2, 2)


# -- weak types ------------------------------------------------------------------------------------
# A weakly typed operand (from a Python scalar) shared by every example keeps its weak type
# through rules that build their result with selects (per-example starts, padding values).

def _weak(shape, value=1.5):
    return lax.full(shape, value)  # float32, weakly typed


WEAK_CASES = [
    ("dynamic_slice", lambda i: lax.dynamic_slice(_weak((5,)), (i,), (2,)), _i(-2, 7)),
    ("getitem", lambda i: _weak((5, 2))[i], _i(-5, 5)),
    ("dynamic_update_slice", lambda i: lax.dynamic_update_slice(
        _weak((5,)), jnp.ones(2, jnp.float32), (i,)), _i(-2, 7)),
    ("dynamic_update_slice_weak_update", lambda i: lax.dynamic_update_slice(
        _weak((5,)), _weak((2,), 2.5), (i,)), _i(-2, 7)),
    ("pad_batched_value", lambda p: lax.pad(_weak((3,), 2.0), p, [(1, 1, 1)]), FLOAT),
    ("elementwise", lambda s: lax.add(_weak((3,)), 2.0) * s + _weak(()), FLOAT),
]


@pytest.mark.parametrize("case", WEAK_CASES, ids=[c[0] for c in WEAK_CASES])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_weak_types_kept(case, jit):
    name, fun, gen = case
    examples = examples_of(lambda rng: (gen(rng, ()),), 3, 0)
    check_vmap(fun, examples, 0, transform=pyree.jit if jit else None)


# -- nested vmap -----------------------------------------------------------------------------------

def _pair(x, y):
    return jnp.dot(x, y) * y + x.sum(), x[1] - y[0]


@SETTINGS
@given(hyp=st.data())
@pytest.mark.vulkan_subset
def test_nested_vmap(hyp):
    """vmap(vmap(f, inner axes), outer axes): each argument mapped by the inner vmap, the
    outer one, both or neither, at any axis; equal to the double loop."""
    n = hyp.draw(st.sampled_from([1, 2, 3]))
    m = hyp.draw(st.sampled_from([1, 2, 4]))
    inner = [hyp.draw(st.sampled_from([0, 1, -1, None])) for _ in range(2)]
    outer = [hyp.draw(st.sampled_from([0, 1, -1, None])) for _ in range(2)]
    if inner == [None, None]:
        inner[0] = 0
    if outer == [None, None]:
        outer[1] = -1
    inner_out = hyp.draw(st.sampled_from([0, 1, -1]))
    outer_out = hyp.draw(st.sampled_from([0, 1, -1]))
    rng = np.random.RandomState(hyp.draw(st.integers(0, 1000)))
    full = [FLOAT(rng, (n, m, 3)) for _ in range(2)]  # [outer example, inner example]

    def pick(a, o, ki):
        return full[a][o if outer[a] is not None else 0, ki if inner[a] is not None else 0]

    args = []
    for a in range(2):
        per_outer = []
        for o in range(n if outer[a] is not None else 1):
            if inner[a] is None:
                per_outer.append(full[a][o, 0])
            else:
                per_outer.append(_stack_at(list(full[a][o]), inner[a]))
        args.append(per_outer[0] if outer[a] is None else _stack_at(per_outer, outer[a]))
    f = pyree.vmap(pyree.vmap(_pair, in_axes=tuple(inner), out_axes=(inner_out, _out_axis(
        inner_out, 0))), in_axes=tuple(outer), out_axes=outer_out)
    got = f(*args)
    want = [[_pair(pick(0, o, k), pick(1, o, k)) for k in range(m)] for o in range(n)]
    for leaf, (g, rank) in enumerate(zip(got, (1, 0))):
        inner_stacked = [_stack_at([w[k][leaf] for k in range(m)], _out_axis(inner_out, rank))
                         for w in want]
        expected = _stack_at(inner_stacked, outer_out)
        np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.vulkan_subset
def test_vmap_of_vmap_matrix_product():
    """Matrix product as a vmap over rows of a vmap over columns of a vector dot."""
    a, b = FLOAT(np.random.RandomState(0), (3, 4)), FLOAT(np.random.RandomState(1), (4, 5))
    mm = pyree.vmap(pyree.vmap(jnp.dot, in_axes=(None, 1)), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(mm(a, b)), a @ b, rtol=1e-5, atol=1e-5)
    mm_t = pyree.vmap(pyree.vmap(jnp.dot, in_axes=(0, None)), in_axes=(None, 1), out_axes=1)
    np.testing.assert_allclose(np.asarray(mm_t(a, b)), a @ b, rtol=1e-5, atol=1e-5)


# -- jit compositions ------------------------------------------------------------------------------

def _mixed(x, y, i):
    return (jnp.dot(x, y), lax.dynamic_slice(x, (i, 0), (2, 3)), jnp.sum(x * x, axis=0),
            jnp.asarray(x).at[i].set(y), jnp.argmax(y))


def _mixed_examples(size, seed):
    return examples_of(lambda rng: (FLOAT(rng, (4, 3)), FLOAT(rng, (3,)), _i(-4, 4)(rng, ())),
                       size, seed)


@FEW
@given(hyp=st.data())
@pytest.mark.vulkan_subset
def test_jit_of_vmap(hyp):
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 1, 0]))
    check_vmap(_mixed, _mixed_examples(size, seed), in_axes, out_axes, transform=pyree.jit,
               atol=1e-5)


@FEW
@given(hyp=st.data())
@pytest.mark.vulkan_subset
def test_vmap_of_jit(hyp):
    size, in_axes, out_axes, seed = hyp.draw(batching([2, 1, 0]))
    check_vmap(pyree.jit(_mixed), _mixed_examples(size, seed), in_axes, out_axes, atol=1e-5)


@pytest.mark.vulkan_subset
def test_vmap_inside_jit_and_jit_inside_vmap():
    rng = np.random.RandomState(0)
    xs, y = FLOAT(rng, (3, 4, 2)), FLOAT(rng, (2,))
    inner = pyree.jit(lambda m, v: jnp.tanh(m @ v))

    @pyree.jit
    def outer(xs, y):
        return pyree.vmap(inner, in_axes=(0, None))(xs, y) * 2.0 + pyree.vmap(
            lambda m: inner(m, y).sum())(xs)[:, None]

    want = np.stack([np.tanh(x @ y) * 2 + np.tanh(x @ y).sum() for x in xs])
    np.testing.assert_allclose(np.asarray(outer(xs, y)), want, rtol=1e-5, atol=1e-5)
    # Calls to a jitted function traced by vmap.
    got = pyree.vmap(lambda m: inner(m, y) + 1.0, in_axes=2, out_axes=1)(xs.transpose(1, 2, 0))
    np.testing.assert_allclose(np.asarray(got), np.stack([np.tanh(x @ y) + 1 for x in xs], 1),
                               rtol=1e-5, atol=1e-5)


def test_jit_of_vmap_int_dot():
    """Integer dot_general, batched on either side (under jit: eagerly, IREE 3.13 fails to
    compile the shape-polymorphic integer matmul kernel)."""
    rng = np.random.RandomState(0)
    a, b = INT(rng, (3, 2, 4)), INT(rng, (4, 3))
    f = pyree.jit(pyree.vmap(lax.dot, in_axes=(0, 1), out_axes=1))
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.stack([x @ b[:, k] for k, x in
                                                                 enumerate(a)], 1))
    g = pyree.jit(pyree.vmap(lax.dot, in_axes=(None, 1)))
    np.testing.assert_array_equal(np.asarray(g(a[0], b)), np.stack([a[0] @ b[:, k]
                                                                    for k in range(3)]))


# -- collectives -----------------------------------------------------------------------------------

needs_psum = pytest.mark.skipif(not hasattr(lax, "psum"),
                                reason="pyree.lax has no psum/pmean/pmax/pmin")


@needs_psum
@SETTINGS
@given(hyp=st.data())
@pytest.mark.vulkan_subset
def test_collectives(hyp):
    size = hyp.draw(st.sampled_from([1, 2, 5]))
    ax = hyp.draw(st.sampled_from([0, 1, -1]))
    out_ax = hyp.draw(st.sampled_from([0, 1, -1]))
    xs = FLOAT(np.random.RandomState(size), (size, 2, 3))

    def f(v):
        return (v / lax.psum(v, "i"), v - lax.pmean(v, "i"), lax.pmax(v, "i"),
                lax.pmin(v, "i") * v, lax.psum({"a": v[0], "b": 2.0 * v}, "i"))

    got = pyree.vmap(f, in_axes=ax, out_axes=out_ax, axis_name="i")(np.moveaxis(xs, 0, ax))
    s, mean = xs.sum(0), xs.mean(0)
    want = (xs / s, xs - mean, np.broadcast_to(xs.max(0), xs.shape), xs.min(0) * xs,
            {"a": np.broadcast_to(s[0], (size, 3)), "b": np.broadcast_to(2 * s, xs.shape)})
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.moveaxis(w, 0, out_ax), rtol=1e-5,
                                   atol=1e-5)


@needs_psum
def test_collectives_unbatched_operand_and_out_axes_none():
    xs, c = FLOAT(np.random.RandomState(0), (4, 3)), np.float32(1.5)
    f = pyree.vmap(lambda v, c: (v + lax.psum(c, "i"), lax.pmean(c, "i"), lax.pmax(c, "i")),
                   in_axes=(0, None), axis_name="i")
    got = f(xs, c)
    np.testing.assert_allclose(np.asarray(got[0]), xs + 4 * c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), np.full(4, c), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[2]), np.full(4, c), rtol=1e-6)
    total = pyree.vmap(lambda v: lax.psum(v, "i"), axis_name="i", out_axes=None)(xs)
    assert total.shape == (3,)
    np.testing.assert_allclose(np.asarray(total), xs.sum(0), rtol=1e-5)
    jitted = pyree.jit(pyree.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i", in_axes=1))
    np.testing.assert_allclose(np.asarray(jitted(xs)), (xs - xs.mean(1, keepdims=True)).T,
                               rtol=1e-5, atol=1e-6)


@needs_psum
def test_collectives_nested_axes():
    xs = FLOAT(np.random.RandomState(0), (2, 3, 4))  # [i, j, example]

    def inner(v):
        return lax.psum(v, "i"), lax.psum(v, "j"), lax.psum(v, ("i", "j")), lax.pmax(v, "i")

    f = pyree.vmap(pyree.vmap(inner, axis_name="j"), axis_name="i")
    over_i, over_j, over_both, max_i = f(xs)
    np.testing.assert_allclose(np.asarray(over_i), np.broadcast_to(xs.sum(0), xs.shape),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(over_j), np.broadcast_to(xs.sum(1, keepdims=True),
                                                                   xs.shape), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(over_both),
                               np.broadcast_to(xs.sum((0, 1)), xs.shape), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(max_i), np.broadcast_to(xs.max(0), xs.shape))


@needs_psum
def test_psum_of_unbatched_weak_value_is_weak():
    xs = np.ones((3, 2), F32)
    got = pyree.vmap(lambda v: lax.psum(_weak((2,)), "i"), axis_name="i")(xs)
    np.testing.assert_allclose(np.asarray(got), np.full((3, 2), 4.5))
    assert got.weak_type


@needs_psum
def test_collective_unbound_axis_name():
    with pytest.raises(NameError, match="unbound axis name: 'k'"):
        pyree.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(np.ones((2, 3), F32))
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum(np.ones(3, F32), "i")


# -- pytrees, kwargs, axis_size --------------------------------------------------------------------

@pytest.mark.vulkan_subset
def test_in_axes_pytrees():
    rng = np.random.RandomState(0)
    a, b, z = FLOAT(rng, (3, 4)), FLOAT(rng, (4,)), FLOAT(rng, (2, 3))

    def f(d, z):
        return d["a"] * d["b"].sum() + z[0, 0]

    got = pyree.vmap(f, in_axes=({"a": 0, "b": None}, None))({"a": a, "b": b}, z)
    np.testing.assert_allclose(np.asarray(got), a * b.sum() + z[0, 0], rtol=1e-5)
    # A tuple prefix: per-leaf axes for the first argument; a whole-subtree entry.
    g = pyree.vmap(lambda p, z: p[0] * p[1] + z.sum(), in_axes=((1, 0), 0))
    got = g((a.T, b[:3, None] * np.ones((3, 4), F32)), np.ones((3, 2), F32))
    np.testing.assert_allclose(np.asarray(got), a * b[:3, None] + 2.0, rtol=1e-5)
    h = pyree.vmap(lambda d, s: d["a"] - d["c"] * s, in_axes=(0, None))
    got = h({"a": a, "c": a * 2}, np.float32(0.5))
    np.testing.assert_allclose(np.asarray(got), a - a, atol=1e-6)
    # A list is a tuple.
    got = pyree.vmap(lambda x, y: x * y, in_axes=[1, None])(a, np.float32(3))
    np.testing.assert_allclose(np.asarray(got), 3 * a.T, rtol=1e-6)


@pytest.mark.vulkan_subset
def test_out_axes_pytrees_and_none():
    rng = np.random.RandomState(1)
    xs, c = FLOAT(rng, (3, 2, 4)), FLOAT(rng, (2,))

    def f(x):
        return {"a": x, "b": (x.sum(1), c * 2.0)}

    got = pyree.vmap(f, out_axes={"a": 2, "b": (-1, None)})(xs)
    np.testing.assert_allclose(np.asarray(got["a"]), np.moveaxis(xs, 0, 2))
    np.testing.assert_allclose(np.asarray(got["b"][0]), xs.sum(2).T, rtol=1e-5)
    assert got["b"][1].shape == (2,)
    np.testing.assert_allclose(np.asarray(got["b"][1]), c * 2)
    # An unbatched output with a mapped out_axes is broadcast along it.
    got = pyree.vmap(lambda x: (c, x), out_axes=1)(xs)
    np.testing.assert_allclose(np.asarray(got[0]), np.broadcast_to(c[:, None], (2, 3)))


def test_kwargs_mapped_over_axis_0():
    rng = np.random.RandomState(2)
    xs, ys = FLOAT(rng, (3, 4)), FLOAT(rng, (3, 4))

    def f(x, y, scale=1.0):
        return x * scale + y

    got = pyree.vmap(f)(xs, y=ys)
    np.testing.assert_allclose(np.asarray(got), xs + ys, rtol=1e-6)
    got = pyree.vmap(f, in_axes=(None,))(xs[0], y=ys, scale=np.arange(3, dtype=F32))
    np.testing.assert_allclose(np.asarray(got), xs[0] * np.arange(3)[:, None] + ys, rtol=1e-6)


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_axis_size_with_nothing_mapped(out_axes):
    c = FLOAT(np.random.RandomState(3), (2,))
    got = pyree.vmap(lambda v: jnp.sin(v) * 2.0, in_axes=None, axis_size=3,
                     out_axes=out_axes)(c)
    np.testing.assert_allclose(np.asarray(got),
                               np.moveaxis(np.broadcast_to(np.sin(c) * 2, (3, 2)), 0, out_axes),
                               rtol=1e-6)
    got = pyree.vmap(lambda v: v.sum(), in_axes=0, axis_size=4)(np.ones((4, 2), F32))
    np.testing.assert_allclose(np.asarray(got), np.full(4, 2.0))


def test_passthrough_output_is_a_pyree_array():
    for f in (lambda x: x, jnp.asarray, lambda x: lax.dynamic_slice(x, (0,), (3,))):
        got = pyree.vmap(f)(np.ones((2, 3)))
        assert isinstance(got, pyree.Array), type(got)
        assert got.dtype == np.float32, got.dtype
        np.testing.assert_array_equal(np.asarray(got), np.ones((2, 3)))


# -- errors ----------------------------------------------------------------------------------------

def _add(a, b):
    return a + b


def test_error_inconsistent_sizes_names_arguments():
    with pytest.raises(ValueError, match="inconsistent sizes") as e:
        pyree.vmap(_add)(np.ones((2, 3), F32), np.ones((3, 3), F32))
    msg = str(e.value)
    assert "argument a" in msg and "argument b" in msg, msg
    assert "size 2 along axis 0" in msg and "size 3 along axis 0" in msg, msg
    with pytest.raises(ValueError, match="inconsistent sizes") as e:
        pyree.vmap(lambda d: d["x"] + d["y"])({"x": np.ones(2, F32), "y": np.ones(4, F32)})
    assert "argument d" in str(e.value) and "'y'" in str(e.value), str(e.value)
    with pytest.raises(ValueError, match="axis_size=4"):
        pyree.vmap(_add, axis_size=4)(np.ones(3, F32), np.ones(3, F32))


def test_error_in_axes_out_of_range():
    with pytest.raises(ValueError, match="map its argument b along axis 2") as e:
        pyree.vmap(_add, in_axes=(0, 2))(np.ones((2, 3), F32), np.ones((2, 3), F32))
    assert "rank should be at least 3" in str(e.value) and "(2, 3)" in str(e.value)
    with pytest.raises(ValueError, match="along axis -3"):
        pyree.vmap(_add, in_axes=-3)(np.ones((2, 3), F32), np.ones((2, 3), F32))
    with pytest.raises(ValueError, match="is only 0"):
        pyree.vmap(_add)(np.ones(2, F32), np.float32(1))


def test_error_out_axes():
    xs = np.ones((2, 3), F32)
    with pytest.raises(ValueError, match="mapped output but out_axes is None"):
        pyree.vmap(jnp.sin, out_axes=None)(xs)
    with pytest.raises(ValueError, match="out_axes 2 is out of range"):
        pyree.vmap(jnp.sin, out_axes=2)(xs)


def test_error_in_axes_structure():
    xs = np.ones((2, 3), F32)
    with pytest.raises(ValueError, match=r"len\(in_axes\)=3, len\(args\)=2"):
        pyree.vmap(_add, in_axes=(0, 0, 0))(xs, xs)
    with pytest.raises(ValueError, match="pytree prefix"):
        pyree.vmap(lambda d: d["a"], in_axes=({"a": 0},))({"a": xs, "b": xs})
    with pytest.raises(TypeError, match="must be ints or None"):
        pyree.vmap(lambda d: d["a"], in_axes=({"a": "x", "b": 0},))({"a": xs, "b": xs})
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        pyree.vmap(_add, in_axes=None)(xs, xs)


def test_batch_size_0_updates():
    def update(x, u, i):
        return lax.dynamic_update_slice(x, u, (i, 0))
    got = pyree.vmap(update, in_axes=(0, 0, 0))(np.zeros((0, 4, 3), F32), np.ones((0, 2, 3), F32),
                                                 np.zeros(0, I32))
    assert got.shape == (0, 4, 3)


def test_unmapped_python_scalars_reach_the_function_unchanged():
    # As in JAX: vmap(f, in_axes=(0, None))(x, 2) calls f with the int 2, so that it can be a
    # static argument of a jitted callee (or a slice bound).
    seen = []

    def head(x, n):
        seen.append(type(n))
        return x[:n] * n

    x = np.arange(15.0, dtype=np.float32).reshape(3, 5)
    np.testing.assert_array_equal(pyree.vmap(head, in_axes=(0, None))(x, 2), x[:, :2] * 2)
    assert seen == [int]
    jitted = functools.partial(pyree.jit, static_argnames=["n"])(head)
    np.testing.assert_array_equal(pyree.vmap(jitted, in_axes=(0, None))(x, 3), x[:, :3] * 3)
    np.testing.assert_array_equal(pyree.jit(lambda x: pyree.vmap(head, (0, None))(x, 1))(x),
                                  x[:, :1])
