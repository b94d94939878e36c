"""Linear algebra: ``jnp.tensordot/einsum/kron/trace/cross/vecdot/matvec/vecmat`` and
``jnp.linalg`` checked against NumPy, eagerly and under ``pyree.jit``; derivatives against
finite differences; vmap against stacked per-example results.

Compile counts are kept low: the factorizations are checked several at once in one jitted
program per shape, and only a few shapes run eagerly (each linalg function is one compiled
program per shape when called eagerly).
"""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.test_util import check_grads

F32_TOL = dict(rtol=2e-4, atol=2e-5)


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


def well_conditioned(rng, *shape, dtype=np.float32):
    """Random square matrices with a dominant diagonal (and some negative determinants)."""
    n = shape[-1]
    a = rng.randn(*shape) + n * np.eye(n) * rng.choice([-1.0, 1.0], size=(n,))
    return a.astype(dtype)


def spd(rng, *shape, dtype=np.float32):
    m = rng.randn(*shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(got, want, dtype=np.float32, **tol):
    assert isinstance(got, pyree.Array), type(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got, np.float64), want.astype(np.float64),
                               **(tol or F32_TOL))


# -- factorizations ---------------------------------------------------------------------------------

def _everything(a, b, c):
    sign, logabsdet = jnp.linalg.slogdet(a)
    return (jnp.linalg.inv(a), jnp.linalg.det(a), sign, logabsdet, jnp.linalg.solve(a, b),
            jnp.linalg.cholesky(c))


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (5, 5), (8, 8), (32, 32),
                                   (2, 3, 4, 4)])
def test_factorizations_against_numpy(shape):
    rng = np.random.RandomState(sum(shape))
    a = well_conditioned(rng, *shape)
    b = rng.randn(*shape[:-1], 3).astype(np.float32)
    c = spd(rng, *shape)
    inv, det, sign, logabsdet, x, low = pyree.jit(_everything)(a, b, c)
    a64 = a.astype(np.float64)
    close(inv, np.linalg.inv(a64), rtol=1e-3, atol=1e-4)
    want_sign, want_log = np.linalg.slogdet(a64)
    close(sign, want_sign)
    close(logabsdet, want_log, rtol=1e-4, atol=1e-4)
    if shape[-1] <= 8:
        close(det, np.linalg.det(a64), rtol=1e-3)
    else:   # the determinant of a 32 x 32 matrix of this scale overflows float32
        assert np.asarray(det) == want_sign * np.inf
    close(x, np.linalg.solve(a64, b.astype(np.float64)), rtol=1e-3, atol=1e-4)
    close(low, np.linalg.cholesky(c.astype(np.float64)), rtol=1e-3, atol=1e-4)


def test_eager_and_pivoting(run):
    # Needs pivoting (zero leading entry), negative determinant, integer input promoted.
    a = np.array([[0, 2, 1], [1, 1, 0], [3, 0, 1]], np.int32)
    af = a.astype(np.float64)
    close(run(jnp.linalg.inv, a), np.linalg.inv(af))
    close(run(jnp.linalg.det, a), np.linalg.det(af))
    sign, logabsdet = run(jnp.linalg.slogdet, a)
    close(sign, np.linalg.slogdet(af)[0])
    close(logabsdet, np.linalg.slogdet(af)[1])
    b = np.array([1.0, 2.0, 3.0], np.float32)
    close(run(jnp.linalg.solve, a, b), np.linalg.solve(af, b))
    c = np.array([[4.0, 2.0, 0.0], [2.0, 5.0, 1.0], [0.0, 1.0, 3.0]], np.float32)
    close(run(jnp.linalg.cholesky, c), np.linalg.cholesky(c))
    close(run(lambda c: jnp.linalg.cholesky(c, upper=True), c), np.linalg.cholesky(c).T)


def test_pivot_order_and_sign_in_the_loop_form():
    # Permuted triangular matrices: every step pivots, through exchanges of every cycle
    # structure; det = parity * product of the diagonal. n = 5 runs the factorization's loop.
    rng = np.random.RandomState(7)
    perms = [rng.permutation(5) for _ in range(6)] + [np.arange(5), np.array([1, 2, 3, 4, 0])]
    upper = np.triu(rng.uniform(-1, 1, (5, 5))) + np.diag(rng.uniform(2, 3, 5) * [1, -1, 1, 1, -1])
    a = np.stack([np.eye(5)[p] @ upper for p in perms]).astype(np.float32)
    want = np.linalg.det(a.astype(np.float64))
    close(jnp.linalg.det(a), want, rtol=1e-5)
    sign, logabsdet = jnp.linalg.slogdet(a)
    close(sign, np.sign(want))
    close(logabsdet, np.log(np.abs(want)), rtol=1e-5, atol=1e-5)
    # A zero column: no pivot, a zero on U's diagonal, det 0 (3 x 3: the loop form too).
    zero_col = np.array([[0.0, 2.0, 1.0], [0.0, 1.0, 5.0], [0.0, 3.0, 1.0]], np.float32)
    close(jnp.linalg.det(zero_col), 0.0)


def test_singular_and_not_positive_definite():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    close(jnp.linalg.det(singular), 0.0)
    sign, logabsdet = jnp.linalg.slogdet(singular)
    assert float(sign) == 0.0 and float(logabsdet) == -np.inf
    # As in JAX: NaNs, not an error.
    low = np.asarray(jnp.linalg.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)))
    assert np.isnan(low).all()
    # Only the symmetric part of the input counts.
    c = np.array([[4.0, 3.0], [1.0, 5.0]], np.float32)
    close(jnp.linalg.cholesky(c), np.linalg.cholesky((c + c.T) / 2))


def test_solve_broadcasting():
    rng = np.random.RandomState(1)
    a = well_conditioned(rng, 2, 1, 3, 3)
    b = rng.randn(4, 3, 2).astype(np.float32)
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    close(jnp.linalg.solve(a, b), want, rtol=1e-4, atol=1e-5)
    # A 1-d b is one vector for every matrix of the stack.
    v = rng.randn(3).astype(np.float32)
    close(jnp.linalg.solve(a, v), np.linalg.solve(a.astype(np.float64), v), rtol=1e-4,
          atol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.inv(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.det(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="two dimensional"):
        jnp.linalg.solve(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="do not match"):
        jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        jnp.linalg.solve(np.ones((2, 3, 3), np.float32), np.ones((4, 3, 1), np.float32))
    with pytest.raises(TypeError):
        jnp.linalg.inv([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="integer"):
        jnp.linalg.matrix_power(np.eye(2, dtype=np.float32), 1.5)
    with pytest.raises(ValueError, match="invalid order"):
        jnp.linalg.norm(np.ones(3, np.float32), "fro")
    with pytest.raises(ValueError, match="improper"):
        jnp.linalg.norm(np.ones((2, 2, 2), np.float32), 1)


# -- derivatives and vmap ---------------------------------------------------------------------------

GRAD_TOL = dict(atol=3e-2, rtol=3e-2)


def test_grads():
    rng = np.random.RandomState(2)
    a = well_conditioned(rng, 3, 3)
    b = rng.randn(3, 2).astype(np.float32)
    # Second order where the rules are built from the functions themselves (inv, det).
    check_grads(jnp.linalg.inv, (a,), 2, modes=("rev",), **GRAD_TOL)
    check_grads(jnp.linalg.det, (a,), 2, modes=("rev",), **GRAD_TOL)
    check_grads(jnp.linalg.solve, (a, b), 1, **GRAD_TOL)
    check_grads(lambda a: jnp.linalg.slogdet(a).logabsdet, (a,), 1, modes=("rev",), **GRAD_TOL)
    check_grads(jnp.linalg.cholesky, (spd(rng, 3, 3),), 1, modes=("rev",), **GRAD_TOL)
    # Closed forms: d logabsdet / da = inv(a).T, d det / da = det(a) inv(a).T.
    a64 = a.astype(np.float64)
    close(pyree.grad(lambda a: jnp.linalg.slogdet(a).logabsdet)(a), np.linalg.inv(a64).T)
    close(pyree.grad(jnp.linalg.det)(a), np.linalg.det(a64) * np.linalg.inv(a64).T, rtol=1e-3)


def test_grad_of_larger_matrix_uses_the_loop_form():
    rng = np.random.RandomState(3)
    a = well_conditioned(rng, 20, 20)
    got = pyree.jit(pyree.grad(lambda a: jnp.linalg.slogdet(a)[1] + jnp.sum(jnp.linalg.inv(a))))(a)
    a64 = a.astype(np.float64)
    inv = np.linalg.inv(a64)
    want = inv.T - inv.T @ np.ones((20, 20)) @ inv.T
    close(got, want, rtol=1e-3, atol=1e-5)


def test_vmap_equals_stacking():
    rng = np.random.RandomState(4)
    a = well_conditioned(rng, 3, 4, 4)
    b = rng.randn(4, 2).astype(np.float32)
    c = spd(rng, 3, 4, 4)

    def f(a, b, c):
        return jnp.linalg.inv(a), jnp.linalg.det(a), jnp.linalg.solve(a, b), jnp.linalg.cholesky(c)

    got = pyree.jit(pyree.vmap(f, (0, None, 0)))(a, b, c)
    want = [np.stack(ys) for ys in zip(*[[np.asarray(y) for y in pyree.jit(f)(a[i], b, c[i])]
                                         for i in range(3)])]
    for g, w in zip(got, want):
        close(g, w, rtol=1e-5, atol=1e-6)


def test_float64():
    saved = pyree.config.enable_x64
    pyree.config.update("enable_x64", True)
    try:
        rng = np.random.RandomState(5)
        a = well_conditioned(rng, 6, 6, dtype=np.float64)
        b = rng.randn(6, 2)
        c = spd(rng, 6, 6, dtype=np.float64)
        inv, det, sign, logabsdet, x, low = pyree.jit(_everything)(a, b, c)
        tol = dict(rtol=1e-10, atol=1e-12)
        close(inv, np.linalg.inv(a), np.float64, **tol)
        close(det, np.linalg.det(a), np.float64, **tol)
        close(logabsdet, np.linalg.slogdet(a)[1], np.float64, **tol)
        close(x, np.linalg.solve(a, b), np.float64, **tol)
        close(low, np.linalg.cholesky(c), np.float64, **tol)
    finally:
        pyree.config.update("enable_x64", saved)


# -- norms, powers, chains ----------------------------------------------------------------------------

def test_norms(run):
    rng = np.random.RandomState(6)
    x = rng.randn(3, 4).astype(np.float32)
    x[0, 1] = 0.0
    vector_ords = [None, 2, 1, np.inf, -np.inf, 0, 3, -1]
    matrix_ords = [None, "fro", 1, -1, np.inf, -np.inf]

    def f(x):
        out = [jnp.linalg.norm(x)]
        out += [jnp.linalg.norm(x, o, axis=1) for o in vector_ords]
        out += [jnp.linalg.norm(x, o) for o in matrix_ords]
        out += [jnp.linalg.norm(x, o, axis=(1, 0), keepdims=True) for o in matrix_ords[2:]]
        out += [jnp.linalg.norm(x[0], o, keepdims=True) for o in (None, 1)]
        out += [jnp.linalg.vector_norm(x, ord=1), jnp.linalg.matrix_norm(x, ord=np.inf)]
        return out

    got = run(f, x)
    want = [np.linalg.norm(x)]
    want += [np.linalg.norm(x, o, axis=1) for o in vector_ords]
    want += [np.linalg.norm(x, o) for o in matrix_ords]
    want += [np.linalg.norm(x, o, axis=(1, 0), keepdims=True) for o in matrix_ords[2:]]
    want += [np.linalg.norm(x[0], o, keepdims=True) for o in (None, 1)]
    want += [np.abs(x).sum(), np.linalg.norm(x, np.inf)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        close(g, w, rtol=1e-5)
    close(jnp.linalg.norm(np.arange(3)), np.linalg.norm(np.arange(3.0)))   # ints promote


def test_matrix_power_and_multi_dot(run):
    rng = np.random.RandomState(7)
    a = well_conditioned(rng, 2, 3, 3)
    i = np.array([[1, 1], [0, 1]], np.int32)
    got = run(lambda a, i: [jnp.linalg.matrix_power(a, k) for k in (0, 1, 2, 5, -1, -2)]
              + [jnp.linalg.matrix_power(i, 3)], a, i)
    for g, k in zip(got, (0, 1, 2, 5, -1, -2)):
        close(g, np.linalg.matrix_power(a.astype(np.float64), k), rtol=1e-4, atol=1e-5)
    assert got[-1].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got[-1]), [[1, 3], [0, 1]])
    v, m1, m2, m3 = (rng.randn(4).astype(np.float32), rng.randn(4, 10).astype(np.float32),
                     rng.randn(10, 2).astype(np.float32), rng.randn(2, 5).astype(np.float32))
    got = run(lambda v, m1, m2, m3: [jnp.linalg.multi_dot([v, m1, m2, m3]),
                                     jnp.linalg.multi_dot([m1.T, m1, m2]),
                                     jnp.linalg.multi_dot([v, m1, m1.T, v])], v, m1, m2, m3)
    want = [np.linalg.multi_dot([v, m1, m2, m3]), np.linalg.multi_dot([m1.T, m1, m2]),
            np.linalg.multi_dot([v, m1, m1.T, v])]
    for g, w in zip(got, want):
        close(g, w, rtol=1e-4, atol=1e-4)


def test_numpy2_aliases():
    rng = np.random.RandomState(8)
    x = rng.randn(2, 3, 4).astype(np.float32)
    v, w = rng.randn(3).astype(np.float32), rng.randn(3).astype(np.float32)
    close(jnp.linalg.trace(x, offset=1), np.linalg.trace(x, offset=1), rtol=1e-5)
    for k in (0, 1, -1, 3, -3):
        close(jnp.linalg.diagonal(x, offset=k), np.linalg.diagonal(x, offset=k))
    close(jnp.linalg.matrix_transpose(x), np.linalg.matrix_transpose(x))
    close(jnp.linalg.outer(v, w), np.linalg.outer(v, w))
    close(jnp.linalg.cross(v, w), np.linalg.cross(v, w), rtol=1e-5)
    close(jnp.linalg.vecdot(x, x[0, 0]), np.linalg.vecdot(x, x[0, 0]), rtol=1e-5)
    xt = x.transpose(1, 2, 0)
    close(jnp.linalg.tensordot(x, xt, 2), np.tensordot(x, xt, 2), rtol=1e-5)
    assert jnp.linalg.matmul is jnp.matmul
    with pytest.raises(ValueError):
        jnp.linalg.outer(x, v)
    with pytest.raises(ValueError):
        jnp.linalg.cross(x, x)


# -- products of pyree.numpy ---------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ij,jk,kl,lm", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iji->j", [(3, 2, 3)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...j,jk->...k", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij...,jk...->ik...", [(3, 4, 2), (4, 5, 2)]),
    ("...i->...", [(2, 3, 4)]),
    ("i...->...", [(4, 2, 3)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("bi,bj,bk->bijk", [(2, 3), (2, 4), (2, 2)]),
    ("abc,cd,db->a", [(2, 3, 4), (4, 5), (5, 3)]),
    ("ba", [(3, 4)]),
    ("Ab,bc->Ac", [(2, 3), (3, 4)]),
    ("ij,kl->", [(2, 3), (4, 5)]),
]


def test_einsum_against_numpy(run):
    rng = np.random.RandomState(9)
    operands = [[rng.randn(*s).astype(np.float32) for s in shapes] for _, shapes in EINSUM_CASES]

    def f(*flat):
        out, k = [], 0
        for (sub, shapes) in EINSUM_CASES:
            out.append(jnp.einsum(sub, *flat[k:k + len(shapes)]))
            k += len(shapes)
        return out

    got = run(f, *[x for ops in operands for x in ops])
    for (sub, _), ops, g in zip(EINSUM_CASES, operands, got):
        want = np.einsum(sub, *[x.astype(np.float64) for x in ops])
        close(g, want, rtol=1e-4, atol=1e-5)


def test_einsum_forms_and_errors():
    rng = np.random.RandomState(10)
    a, b = rng.randn(3, 4).astype(np.float32), rng.randn(4, 5).astype(np.float32)
    close(jnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b, rtol=1e-5)
    close(jnp.einsum(a, [0, Ellipsis], [Ellipsis]), a.sum(0), rtol=1e-5)
    # Integer operands keep their dtype; mixed operands promote.
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    close(jnp.einsum("ij,kj->ik", i, i), np.einsum("ij,kj->ik", i, i), np.int32)
    close(jnp.einsum("ij,j->i", i, np.ones(3, np.float32)), i.sum(1), np.float32)
    path, _ = jnp.einsum_path("ij,jk,kl->il", np.ones((2, 50)), np.ones((50, 50)),
                              np.ones((50, 2)))
    assert path[0] == "einsum_path" and len(path) == 3
    with pytest.raises(ValueError, match="operand"):
        jnp.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="sizes"):
        jnp.einsum("ij,jk->ik", a, a)
    with pytest.raises(ValueError, match="rank"):
        jnp.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="does not appear"):
        jnp.einsum("ij->iz", a)
    with pytest.raises(ValueError, match="more than once"):
        jnp.einsum("ij->ii", a)


def test_einsum_grad_and_vmap():
    rng = np.random.RandomState(11)
    a, b = rng.randn(3, 4).astype(np.float32), rng.randn(4, 5).astype(np.float32)
    check_grads(lambda a, b: jnp.einsum("ij,jk,ik->k", a, b, a @ b), (a, b), 1, **GRAD_TOL)
    batched = rng.randn(2, 3, 4).astype(np.float32)
    got = pyree.vmap(lambda x: jnp.einsum("ij,jk->ki", x, b))(batched)
    close(got, np.einsum("bij,jk->bki", batched, b), rtol=1e-5, atol=1e-6)


def test_tensordot_kron_trace_cross(run):
    rng = np.random.RandomState(12)
    x, y = rng.randn(2, 3, 4).astype(np.float32), rng.randn(3, 4, 5).astype(np.float32)
    m = rng.randn(4, 4).astype(np.float32)
    u, v = rng.randn(5, 3).astype(np.float32), rng.randn(3).astype(np.float32)
    p, q = rng.randn(5, 2).astype(np.float32), rng.randn(2).astype(np.float32)
    ui = np.arange(6, dtype=np.int32).reshape(2, 3)

    def f(x, y, m, u, v, p, q, ui):
        return [jnp.tensordot(x, y), jnp.tensordot(x, y, 1 - 1), jnp.tensordot(x, m, 1),
                jnp.tensordot(x, y, axes=([1, 2], [0, 1])), jnp.tensordot(x, y, ((1,), (0,))),
                jnp.tensordot(x, 2.0, 0),
                jnp.kron(m[:2, :3], m[:3]), jnp.kron(v, m), jnp.kron(ui, ui),
                jnp.trace(m), jnp.trace(m, 1), jnp.trace(m, -2), jnp.trace(x, 0, 2, 1),
                jnp.trace(ui), jnp.trace(m, dtype=jnp.int32), jnp.trace(m, 7),
                jnp.cross(u, v), jnp.cross(v, u), jnp.cross(p, q), jnp.cross(p, v),
                jnp.cross(u.T, v, axisa=0), jnp.cross(u, v, axisc=0), jnp.cross(ui, ui[::-1]),
                jnp.vecdot(u, v), jnp.matvec(m, m[0]), jnp.vecmat(m[0], m),
                jnp.matvec(jnp.stack([m, m]), m[:2])]

    got = run(f, x, y, m, u, v, p, q, ui)
    want = [np.tensordot(x, y), np.tensordot(x, y, 0), np.tensordot(x, m, 1),
            np.tensordot(x, y, axes=([1, 2], [0, 1])), np.tensordot(x, y, ((1,), (0,))),
            x * 2.0,
            np.kron(m[:2, :3], m[:3]), np.kron(v, m), np.kron(ui, ui),
            np.trace(m), np.trace(m, 1), np.trace(m, -2), np.trace(x, 0, 2, 1),
            np.trace(ui), np.trace(m, dtype=np.int32), np.float32(0),
            np.cross(u, v), np.cross(v, u), p[:, 0] * q[1] - p[:, 1] * q[0],
            np.cross(np.pad(p, ((0, 0), (0, 1))), v),
            np.cross(u.T, v, axisa=0), np.cross(u, v, axisc=0), np.cross(ui, ui[::-1]),
            (u * v).sum(-1), m @ m[0], m[0] @ m, np.einsum("bij,bj->bi", np.stack([m, m]), m[:2])]
    for g, w in zip(got, want):
        w = np.asarray(w)
        dtype = np.int32 if w.dtype.kind in "iu" else np.float32
        close(g, w, dtype, rtol=1e-5, atol=1e-5)


def test_product_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="do not match"):
        jnp.tensordot(x, x, axes=([1], [1 - 1]))
    with pytest.raises(TypeError):
        jnp.tensordot(x, x, 3)
    with pytest.raises(ValueError, match="same"):
        jnp.trace(x, axis1=1, axis2=1)
    with pytest.raises(ValueError, match="2-d"):
        jnp.trace(np.ones(3))
    with pytest.raises(ValueError, match="2 or 3"):
        jnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="vector axis"):
        jnp.vecdot(np.ones(3), np.ones(4))


def test_vdot_vecdot_conjugate_the_first_argument(run):
    """As NumPy and JAX: sum(conj(a) * b); vdot flattens its inputs first."""
    a = np.array([1 + 2j, 3 - 1j, -.5 + .5j], np.complex64)
    b = np.array([2 - 1j, 1j, 4], np.complex64)
    m, n = np.stack([a, b]), np.stack([b, a])
    got = run(lambda a, b, m, n: (jnp.vdot(a, b), jnp.vdot(m, n), jnp.vecdot(m, n),
                                  jnp.linalg.vecdot(a, b)), a, b, m, n)
    want = [np.vdot(a, b), np.vdot(m, n), np.linalg.vecdot(m, n), np.linalg.vecdot(a, b)]
    assert complex(want[0]) == -3 - 4j
    for g, w in zip(got, want):
        close(g, w, np.complex64, rtol=1e-6)


def test_spectral_and_nuclear_norms():
    """ord 2, -2 and 'nuc' of matrices come from the singular values, over any axis pair."""
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    for ord_ in ("nuc", 2, -2):
        for axes in ((1, 2), (2, 0)):
            for keepdims in (False, True):
                got = jnp.linalg.norm(x, ord_, axis=axes, keepdims=keepdims)
                want = np.linalg.norm(x, ord_, axis=axes, keepdims=keepdims)
                assert got.shape == want.shape
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    # d||A||_* / dA = U V^T for a full-rank A.
    u, _, vt = np.linalg.svd(x[0].astype(np.float64), full_matrices=False)
    grad = pyree.grad(lambda a: jnp.linalg.norm(a, "nuc"))(x[0])
    np.testing.assert_allclose(np.asarray(grad), u @ vt, atol=1e-5)


def test_lax_linalg_module(run):
    """jax.lax.linalg's functions, signatures and output conventions (values from JAX 0.10.2
    and NumPy/SciPy), eagerly and under jit."""
    import scipy.linalg
    import pyree.lax.linalg
    from pyree.lax import linalg
    assert pyree.lax.linalg is linalg
    a = np.array([[4., 1, 2], [1, 3, 0.5], [2, 0.5, 5]], np.float32)
    m = np.array([[1., 2], [3, 4], [5, 7]], np.float32)
    t = np.array([[2., 0, 0], [1, 3, 0], [4, 5, 6]], np.float32)
    b = np.arange(6.).reshape(3, 2).astype(np.float32)

    def factorizations(a, m, t, b):
        return (linalg.cholesky(a), linalg.cholesky(jnp.tril(a) + 100 * jnp.triu(a, 1),
                                                    symmetrize_input=False),
                linalg.eigh(a), linalg.lu(m), linalg.lu(m.T), linalg.qr(m),
                linalg.qr(m, full_matrices=False), linalg.svd(m, full_matrices=False),
                linalg.triangular_solve(t + 50 * jnp.triu(jnp.ones((3, 3)), 1), b,
                                        left_side=True, lower=True),
                linalg.triangular_solve(t, b.T, lower=True, transpose_a=True),
                linalg.triangular_solve(t.T, b, left_side=True, unit_diagonal=True),
                linalg.lu_pivots_to_permutation(jnp.array([2, 2, 2]), 4))

    (chol, chol_lower, (v, w), (lu, piv, perm), (lu_t, piv_t, perm_t), (q, r), (qe, re),
     (u, s, vh), x_left, x_right, x_unit, permutation) = run(factorizations, a, m, t, b)
    np.testing.assert_allclose(chol, np.linalg.cholesky(a), **F32_TOL)
    np.testing.assert_allclose(chol_lower, np.linalg.cholesky(a), **F32_TOL)
    assert v.shape == (3, 3) and w.shape == (3,)           # (v, w): vectors first, as JAX
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), **F32_TOL)
    np.testing.assert_allclose(np.asarray(v) * np.asarray(w) @ np.asarray(v).T, a, **F32_TOL)
    # JAX's lu: (lu, LAPACK pivots, permutation) with x[permutation] = L U, int32.
    assert piv.dtype == perm.dtype == np.int32
    np.testing.assert_array_equal(piv, [2, 2])
    np.testing.assert_array_equal(perm, [2, 0, 1])
    np.testing.assert_array_equal(piv_t, [1, 1])
    np.testing.assert_array_equal(perm_t, [1, 0])
    lu_ref, piv_ref = scipy.linalg.lu_factor(m.astype(np.float64))
    np.testing.assert_allclose(lu, lu_ref, **F32_TOL)
    np.testing.assert_array_equal(piv, piv_ref)
    np.testing.assert_allclose(lu_t, [[2, 4, 7], [0.5, 1, 1.5]], **F32_TOL)
    assert q.shape == (3, 3) and r.shape == (3, 2) and qe.shape == (3, 2) and re.shape == (2, 2)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), m, **F32_TOL)
    np.testing.assert_allclose(np.asarray(qe) @ np.asarray(re), m, **F32_TOL)
    np.testing.assert_allclose(s, np.linalg.svd(m, compute_uv=False), **F32_TOL)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vh), m, **F32_TOL)
    np.testing.assert_allclose(x_left, np.linalg.solve(t, b), **F32_TOL)   # upper ignored
    np.testing.assert_allclose(x_right, np.linalg.solve(t, b).T, **F32_TOL)  # x t.T = b.T
    np.testing.assert_allclose(x_unit, scipy.linalg.solve_triangular(
        t.T, b, lower=False, unit_diagonal=True), **F32_TOL)
    np.testing.assert_array_equal(permutation, [2, 0, 1, 3])


def test_lax_linalg_complex_and_vectors():
    from pyree.lax import linalg
    t = np.array([[2., 0, 0], [1, 3, 0], [4, 5, 6]]) + 1j * np.tril(np.ones((3, 3)))
    t = t.astype(np.complex64)
    b = np.arange(6.).reshape(3, 2).astype(np.complex64)
    np.testing.assert_allclose(
        linalg.triangular_solve(t, b, left_side=True, lower=True, conjugate_a=True),
        np.linalg.solve(t.conj(), b), **F32_TOL)
    np.testing.assert_allclose(
        linalg.triangular_solve(t, b, left_side=True, lower=True, conjugate_a=True,
                                transpose_a=True), np.linalg.solve(t.conj().T, b), **F32_TOL)
    np.testing.assert_allclose(linalg.triangular_solve(t, b.T, lower=True, conjugate_a=True),
                               np.linalg.solve(t.conj().T, b).T, **F32_TOL)  # x conj(t) = b.T
    tr = t.real.copy()
    np.testing.assert_allclose(linalg.triangular_solve(tr, np.ones(3, np.float32),
                                                       left_side=True, lower=True),
                               [0.5, 1 / 6, -0.3055556], **F32_TOL)          # JAX's values
    q, r, p = linalg.qr(tr, pivoting=True, full_matrices=False)       # JAX's (q, r, p)
    np.testing.assert_array_equal(p, [2, 1, 0])
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), tr[:, [2, 1, 0]], **F32_TOL)
