"""``jnp.linalg``'s eigh, eigvalsh, svd, qr, pinv, lstsq, matrix_rank and cond, and
``pyree.scipy.linalg``, checked against NumPy and SciPy: values (sign-invariant where LAPACK's
signs are arbitrary), reconstructions and orthogonality; derivatives against finite differences
in float64; jit and vmap.

Each new (function, shape) pair is a new compiled program, so the checks are grouped: most run
as one jitted program per test, over few shapes.
"""
import numpy as np
import pytest
import scipy.linalg as sl

import pyree
import pyree.numpy as jnp
from pyree.scipy import linalg as L


def f64(x):
    return np.asarray(x, np.float64)


def close(got, want, rtol=2e-4, atol=2e-5):
    assert isinstance(got, pyree.Array), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(f64(got), f64(want), rtol=rtol, atol=atol)


def orthonormal_columns(q, atol=1e-5):
    q = f64(q)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
        np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=atol)


def same_columns_up_to_sign(got, want, atol=1e-4):
    """Columns equal up to each one's sign: |got^T want| is the identity."""
    got, want = f64(got), f64(want)
    np.testing.assert_allclose(np.abs(np.swapaxes(got, -1, -2) @ want),
                               np.broadcast_to(np.eye(got.shape[-1]), got.shape[:-2]
                                               + (got.shape[-1],) * 2), atol=atol)


def symmetric(rng, *shape, dtype=np.float32):
    m = rng.randn(*shape)
    return ((m + np.swapaxes(m, -1, -2)) / 2).astype(dtype)


def spd(rng, *shape, dtype=np.float32):
    m = rng.randn(*shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


# -- jnp.linalg ------------------------------------------------------------------------------------

def test_numpy_linalg_against_numpy():
    rng = np.random.RandomState(0)
    s5 = symmetric(rng, 5, 5)
    tall = rng.randn(6, 4).astype(np.float32)
    wide = rng.randn(3, 5).astype(np.float32)
    batch = symmetric(rng, 2, 3, 3)
    lower_only = np.tril(s5) + np.triu(rng.randn(5, 5), 1).astype(np.float32)

    def f(s5, tall, wide, batch, lower_only):
        return dict(
            eigh=jnp.linalg.eigh(s5),
            eigh_u=jnp.linalg.eigvalsh(lower_only.T, UPLO="U", symmetrize_input=False),
            eigh_batch=jnp.linalg.eigh(batch),
            svd_full=jnp.linalg.svd(tall), svd_wide_full=jnp.linalg.svd(wide),
            svd_batch=jnp.linalg.svd(batch, compute_uv=False),
            svd_herm=jnp.linalg.svd(s5, hermitian=True),
            qr=jnp.linalg.qr(tall), qr_complete=jnp.linalg.qr(tall, mode="complete"),
            qr_wide=jnp.linalg.qr(wide), qr_batch=jnp.linalg.qr(batch),
            pinv=jnp.linalg.pinv(tall), pinv_herm=jnp.linalg.pinv(s5, hermitian=True),
            cond=jnp.linalg.cond(tall))

    out = pyree.jit(f)(s5, tall, wide, batch, lower_only)
    # eigh: ascending eigenvalues, eigenvectors equal up to sign (distinct eigenvalues).
    w, v = out["eigh"]
    want_w, want_v = np.linalg.eigh(f64(s5))
    close(w, want_w)
    same_columns_up_to_sign(v, want_v)
    close(out["eigh_u"], want_w)
    wb, vb = out["eigh_batch"]
    close(wb, np.linalg.eigvalsh(f64(batch)))
    close(vb @ (wb[..., None] * jnp.swapaxes(vb, -1, -2)), batch, atol=1e-5)
    orthonormal_columns(vb)
    # svd: singular values, reconstruction, orthogonality; the full U completes the thin one.
    for key, a, full in [("svd_full", tall, True), ("svd_wide_full", wide, True)]:
        u, s, vh = out[key]
        k = min(a.shape)
        m, n = a.shape
        assert u.shape == ((m, m) if full else (m, k)) and vh.shape == ((n, n) if full else (k, n))
        close(s, np.linalg.svd(f64(a), compute_uv=False))
        close((u[:, :k] * s) @ vh[:k], a, atol=1e-5)
        orthonormal_columns(u)
        orthonormal_columns(vh.T)
        want_u, _, want_vh = np.linalg.svd(f64(a))
        same_columns_up_to_sign(u[:, :k], want_u[:, :k])
        same_columns_up_to_sign(vh[:k].T, want_vh[:k].T)
    close(out["svd_batch"], np.linalg.svd(f64(batch), compute_uv=False))
    u, s, vh = out["svd_herm"]
    close(s, np.linalg.svd(f64(s5), compute_uv=False))
    close((u * s) @ vh, s5, atol=1e-5)
    # qr: R's signs are LAPACK's, so the factors equal NumPy's.
    for key, a, mode in [("qr", tall, "reduced"), ("qr_complete", tall, "complete"),
                         ("qr_wide", wide, "reduced")]:
        q, r = out[key]
        want_q, want_r = np.linalg.qr(f64(a), mode=mode)
        close(q, want_q, atol=1e-5)
        close(r, want_r, atol=1e-5)
    q, r = out["qr_batch"]
    close(q @ r, batch, atol=1e-5)
    orthonormal_columns(q)
    assert np.all(np.tril(f64(r), -1) == 0)
    close(out["pinv"], np.linalg.pinv(f64(tall)), atol=1e-5)
    close(out["pinv_herm"], np.linalg.pinv(f64(s5), hermitian=True), rtol=1e-3, atol=1e-4)
    close(out["cond"], np.linalg.cond(f64(tall)), rtol=1e-4)


def test_degenerate_and_small_cases():
    rng = np.random.RandomState(1)
    q, _ = np.linalg.qr(rng.randn(5, 5))
    repeated = (q @ np.diag([1.0, 1.0, 2.0, 2.0, 3.0]) @ q.T).astype(np.float32)
    tall = rng.randn(5, 3).astype(np.float32)
    rank2 = tall[:, :2] @ rng.randn(2, 3).astype(np.float32)
    zero = np.zeros((5, 3), np.float32)
    one = np.array([[-0.5]], np.float32)
    sv = np.linalg.svd(f64(rank2), compute_uv=False)
    between = float(sv[0] + sv[1]) / 2     # an absolute tolerance that keeps one value

    def f(repeated, rank2, zero, one):
        return dict(repeated=jnp.linalg.eigh(repeated), rank2=jnp.linalg.svd(rank2),
                    zero_svd=jnp.linalg.svd(zero), zero_qr=jnp.linalg.qr(zero, mode="complete"),
                    one=(jnp.linalg.eigh(one), jnp.linalg.svd(one)),
                    rank=jnp.linalg.matrix_rank(rank2),
                    rank_tol=jnp.linalg.matrix_rank(rank2, tol=between),
                    rank_vec=jnp.linalg.matrix_rank(jnp.zeros(3)))

    out = pyree.jit(f)(repeated, rank2, zero, one)
    w, v = out["repeated"]
    close(w, [1.0, 1.0, 2.0, 2.0, 3.0], atol=2e-6)
    orthonormal_columns(v)
    close((v * w) @ v.T, repeated, atol=2e-6)
    u, s, vh = out["rank2"]
    close(s, sv, atol=1e-5)
    orthonormal_columns(u)          # complete even where a singular value is zero
    orthonormal_columns(vh.T)
    close((u[:, :3] * s) @ vh, rank2, atol=1e-5)
    u, s, vh = out["zero_svd"]
    close(s, np.zeros(3))
    orthonormal_columns(u)
    orthonormal_columns(vh)
    q, r = out["zero_qr"]
    close(q, np.eye(5))
    close(r, zero)
    (w, v), (u, s, vh) = out["one"]
    close(w, [-0.5])
    close(v, [[1.0]])
    close(s, [0.5])
    close((u * s) @ vh, one)
    assert int(out["rank"]) == 2 and int(out["rank_tol"]) == 1 and int(out["rank_vec"]) == 0


def test_float64(x64):
    rng = np.random.RandomState(2)
    s6 = symmetric(rng, 6, 6, dtype=np.float64)
    tall = rng.randn(6, 4)
    deficient = rng.randn(6, 2) @ rng.randn(2, 4)
    b = rng.randn(6, 2)

    def f(s6, tall, deficient, b):
        return (jnp.linalg.eigh(s6), jnp.linalg.svd(tall), jnp.linalg.qr(tall),
                jnp.linalg.lstsq(deficient, b), L.expm(s6))

    (w, v), (u, s, vh), (q, r), (x, resid, rank, sv), e = pyree.jit(f)(s6, tall, deficient, b)
    tol = dict(rtol=1e-11, atol=1e-12)
    assert w.dtype == np.float64
    close(w, np.linalg.eigvalsh(s6), **tol)
    close((v * w) @ v.T, s6, **tol)
    orthonormal_columns(v, atol=1e-13)
    close(s, np.linalg.svd(tall, compute_uv=False), **tol)
    close((u[:, :4] * s) @ vh, tall, **tol)
    orthonormal_columns(u, atol=1e-13)
    want_q, want_r = np.linalg.qr(tall)
    close(q, want_q, **tol)
    close(r, want_r, **tol)
    want = np.linalg.lstsq(deficient, b, rcond=None)
    close(x, want[0], **tol)
    close(sv, want[3], rtol=1e-11, atol=1e-11)
    assert int(rank) == want[2] == 2 and rank.dtype == np.int32
    close(resid, np.sum((deficient @ want[0] - b) ** 2, axis=0), **tol)   # always, as JAX
    close(e, sl.expm(s6), rtol=1e-11, atol=1e-11)


# -- pyree.scipy.linalg ----------------------------------------------------------------------------

def test_scipy_linalg_against_scipy():
    rng = np.random.RandomState(3)
    a = (rng.randn(4, 4) + 4 * np.eye(4)).astype(np.float32)
    c = spd(rng, 4, 4)
    b = rng.randn(4, 2).astype(np.float32)
    tall = rng.randn(5, 3).astype(np.float32)
    tri_cases = [(trans, lower, unit) for trans in (0, 1, "T") for lower in (False, True)
                 for unit in (False, True)]
    shapes = {"square": a, "tall": tall, "wide": tall.T}

    def f(a, c, b, tall):
        mats = {"square": a, "tall": tall, "wide": tall.T}
        return dict(
            chol=(L.cholesky(c), L.cholesky(jnp.triu(c)), L.cholesky(jnp.tril(c), lower=True)),
            cho=[L.cho_solve(L.cho_factor(c, lower=lower), b) for lower in (False, True)],
            cho_vec=L.cho_solve(L.cho_factor(c), b[:, 0]),
            tri=[L.solve_triangular(a, b, trans=t, lower=lo, unit_diagonal=u)
                 for t, lo, u in tri_cases],
            tri_vec=L.solve_triangular(a, b[:, 0], lower=True),
            lu={k: (L.lu(m), L.lu_factor(m), L.lu(m, permute_l=True)) for k, m in mats.items()},
            qr={k: [L.qr(m, mode=mode) for mode in ("full", "economic", "r")]
                for k, m in mats.items()},
            lu_solve=[L.lu_solve(L.lu_factor(a), b, trans=t) for t in (0, 1)],
            lu_solve_vec=L.lu_solve(L.lu_factor(a), b[:, 0]),
            eigh=L.eigh(a), eigh_upper=L.eigh(a, lower=False, eigvals_only=True),
            eigh_general=L.eigh(a, c), svd=L.svd(tall), svdvals=L.svd(tall, compute_uv=False),
            inv=L.inv(a), det=L.det(a), solve=L.solve(a, b),
            solve_pos=L.solve(c, b, assume_a="pos"),
            solve_sym=L.solve(jnp.tril(a), b, assume_a="sym", lower=True))

    out = pyree.jit(f)(a, c, b, tall)
    tol = dict(rtol=1e-3, atol=1e-4)
    for got in out["chol"][:2]:
        close(got, sl.cholesky(c), **tol)       # only the upper triangle is read
    close(out["chol"][2], sl.cholesky(c, lower=True), **tol)
    for lower, got in zip((False, True), out["cho"]):
        close(got, sl.cho_solve(sl.cho_factor(c, lower=lower), b), **tol)
    close(out["cho_vec"], np.linalg.solve(c, b[:, 0]), **tol)
    for (trans, lower, unit), got in zip(tri_cases, out["tri"]):
        close(got, sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), **tol)
    close(out["tri_vec"], sl.solve_triangular(a, b[:, 0], lower=True), **tol)
    for key, m in shapes.items():
        (p, low, up), (factors, piv), (pl, up2) = out["lu"][key]
        want_p, want_l, want_u = sl.lu(m)
        close(p, want_p)
        close(low, want_l, **tol)
        close(up, want_u, **tol)
        want_lu, want_piv = sl.lu_factor(m)
        close(factors, want_lu, **tol)
        assert piv.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(piv), want_piv)
        close(pl, want_p @ want_l, **tol)
        for mode, got in zip(("full", "economic", "r"), out["qr"][key]):
            want = sl.qr(m, mode=mode)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                close(g, w, **tol)
    for trans, got in zip((0, 1), out["lu_solve"]):
        close(got, sl.lu_solve(sl.lu_factor(a), b, trans=trans), **tol)
    close(out["lu_solve_vec"], np.linalg.solve(a, b[:, 0]), **tol)
    w, v = out["eigh"]               # a symmetrized, as JAX (SciPy reads one triangle)
    a_sym = (f64(a) + f64(a).T) / 2
    want_w, want_v = sl.eigh(a_sym)
    close(w, want_w, **tol)
    same_columns_up_to_sign(v, want_v, atol=1e-3)
    close(out["eigh_upper"], sl.eigh(a_sym, eigvals_only=True), **tol)
    w, v = out["eigh_general"]       # a x = w c x, x^T c x = I
    want_w, want_v = sl.eigh(a, c)
    close(w, want_w, **tol)
    close(jnp.abs(v), np.abs(want_v), **tol)
    u, s, vh = out["svd"]
    close(s, sl.svdvals(tall), **tol)
    close((u[:, :3] * s) @ vh, tall, **tol)
    close(out["svdvals"], sl.svdvals(tall), **tol)
    close(out["inv"], sl.inv(a), **tol)
    close(out["det"], sl.det(a), **tol)
    close(out["solve"], sl.solve(a, b), **tol)
    close(out["solve_pos"], sl.solve(c, b, assume_a="pos"), **tol)
    close(out["solve_sym"], sl.solve(np.tril(a), b, assume_a="sym", lower=True), **tol)
    # Eagerly too (each call its own compiled program).
    close(L.cho_solve(L.cho_factor(c), b), sl.cho_solve(sl.cho_factor(c), b), **tol)
    close(L.lu_solve(L.lu_factor(a), b), sl.solve(a, b), **tol)
    close(L.eigh(a, eigvals_only=True), sl.eigh(a_sym, eigvals_only=True), **tol)
    # NumPy's residuals: empty where the rank is deficient (this needs a concrete rank).
    x, resid, rank, sv = jnp.linalg.lstsq(a[:, :2] @ a[:2, :], b, numpy_resid=True)
    assert x.shape == (4, 2) and resid.shape == (0,) and int(rank) == 2 and sv.shape == (4,)
    blocks = (a[:2, :3], np.float32(3.0), np.ones(2, np.int32))
    got = L.block_diag(*blocks)
    close(got, sl.block_diag(*blocks))
    assert got.dtype == np.float32
    assert L.block_diag().shape == (1, 0)


def test_expm():
    """Eagerly, one batch: 1-norms that select each float32 Padé degree (3, 5, 7), two that
    need squarings, a zero matrix and one beyond max_squarings (NaN, as JAX)."""
    rng = np.random.RandomState(4)
    a = rng.randn(4, 4).astype(np.float32)
    scales = np.array([0.05, 1.0, 3.0, 12.0, 40.0, 0.0, 1e9], np.float32)
    mats = a[None] * (scales / np.abs(a).sum(0).max())[:, None, None]
    got = np.asarray(L.expm(mats))
    want = np.stack([sl.expm(f64(m)) for m in mats[:-1]])
    np.testing.assert_allclose(got[:-1], want, rtol=2e-4, atol=1e-5 * np.abs(want).max())
    assert np.isnan(got[-1]).all()


# -- QR with column pivoting, QR's raw mode --------------------------------------------------------

def check_pivoted_qr(got, a, mode, atol):
    """``got`` (``L.qr(a, mode=mode, pivoting=True)``) against SciPy's: the same column order
    P (int32), the same factors (LAPACK's signs)."""
    want = sl.qr(a, mode=mode, pivoting=True)
    assert len(got) == len(want) and got[-1].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got[-1]), want[-1])
    for g, w in zip(got[:-1], want[:-1]):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(np.asarray(g), w, rtol=0, atol=atol)


def test_qr_pivoting_and_raw():
    """scipy.linalg.qr(pivoting=True) against SciPy (geqp3: P, Q and R equal), every mode, for
    square, tall and wide matrices, one with tied column norms (the first of equals is taken)
    and a complex one, in one jitted program; a rank-deficient matrix (P equal up to its rank:
    the rest is ordered by rounding noise, in SciPy too); a batch; eagerly.
    jnp.linalg.qr(mode='raw') against NumPy: (h, tau), h LAPACK's geqrf output transposed."""
    rng = np.random.RandomState(9)
    mats = {"square": rng.randn(4, 4), "tall": rng.randn(5, 3), "wide": rng.randn(3, 5),
            "ties": np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]),
            "complex": rng.randn(4, 3) + 1j * rng.randn(4, 3)}
    mats = {k: m.astype(np.complex64 if k == "complex" else np.float32) for k, m in mats.items()}
    modes = ("full", "economic", "r")

    def f(mats):
        return ({k: [L.qr(m, mode=mode, pivoting=True) for mode in modes]
                 for k, m in mats.items()},
                {k: jnp.linalg.qr(m, mode="raw") for k, m in mats.items()})

    pivoted, raw = pyree.jit(f)(mats)
    for k, m in mats.items():
        wide = np.complex128 if k == "complex" else np.float64
        for mode, got in zip(modes, pivoted[k]):
            check_pivoted_qr(got, m.astype(wide), mode, atol=2e-6)
        if k == "ties":   # (rank 2: its last reflector reflects rounding noise)
            continue
        h, tau = raw[k]
        want_h, want_tau = np.linalg.qr(m.astype(wide), mode="raw")
        assert h.dtype == tau.dtype == m.dtype and h.shape == want_h.shape
        # (Not close(): it compares real parts.)
        np.testing.assert_allclose(np.asarray(h), want_h, rtol=0, atol=2e-6)
        np.testing.assert_allclose(np.asarray(tau), want_tau, rtol=0, atol=2e-6)
    # Rank 2, one zero column: the two pivots before the noise are SciPy's, Q R = a[:, P],
    # and |R|'s diagonal does not increase.
    deficient = (rng.randn(5, 2) @ rng.randn(2, 4)).astype(np.float32)
    deficient[:, 1] = 0
    q, r, p = L.qr(deficient, pivoting=True)
    np.testing.assert_array_equal(np.asarray(p)[:2], sl.qr(f64(deficient), pivoting=True)[2][:2])
    close(q @ r, deficient[:, np.asarray(p)], atol=1e-5)
    orthonormal_columns(q)
    d = np.abs(np.diag(f64(r)))
    assert np.all(d[1:] <= d[:-1] + 1e-6) and d[2:].max() < 1e-5
    # A batch (each matrix its own order), eagerly.
    batch = rng.randn(3, 4, 3).astype(np.float32)
    q, r, p = L.qr(batch, mode="economic", pivoting=True)
    h, tau = jnp.linalg.qr(batch, mode="raw")
    assert h.shape == (3, 3, 4) and tau.shape == (3, 3)
    for i in range(3):
        check_pivoted_qr((q[i], r[i], p[i]), f64(batch[i]), "economic", atol=2e-6)
        want_h, want_tau = np.linalg.qr(f64(batch[i]), mode="raw")
        close(h[i], want_h, atol=2e-6)
        close(tau[i], want_tau, atol=2e-6)


def test_qr_pivoting_and_raw_x64(x64):
    rng = np.random.RandomState(10)
    for a in (rng.randn(4, 5), rng.randn(5, 4) + 1j * rng.randn(5, 4)):
        for mode in ("full", "economic", "r"):
            check_pivoted_qr(L.qr(a, mode=mode, pivoting=True), a, mode, atol=1e-13)
        h, tau = jnp.linalg.qr(a, mode="raw")
        want_h, want_tau = np.linalg.qr(a, mode="raw")
        assert h.dtype == tau.dtype == a.dtype
        np.testing.assert_allclose(np.asarray(h), want_h, rtol=0, atol=1e-13)
        np.testing.assert_allclose(np.asarray(tau), want_tau, rtol=0, atol=1e-13)


def test_qr_pivoting_grads(x64):
    """As JAX: the factors' derivative is that of the QR of a[:, P] with P fixed (reduced
    factors of a tall or square matrix, both modes of differentiation); a full Q of a tall
    matrix and the raw mode's reflectors have none."""
    rng = np.random.RandomState(11)
    tall, square = rng.randn(5, 3), rng.randn(3, 3)

    def f(tall, square):
        return L.qr(tall, mode="economic", pivoting=True)[:2], L.qr(square, pivoting=True)[:2]

    check_derivatives(f, (tall, square), modes=("rev", "fwd"))
    w1, w2 = rng.randn(5, 3), rng.randn(3, 3)
    q, r, p = L.qr(tall, mode="economic", pivoting=True)
    grad = pyree.grad(lambda a: jnp.sum(L.qr(a, mode="economic", pivoting=True)[0] * w1)
                      + jnp.sum(L.qr(a, mode="economic", pivoting=True)[1] * w2))(tall)
    # The same gradient from the unpivoted QR's, of the reordered columns, put back.
    inner = pyree.grad(lambda c: jnp.sum(jnp.linalg.qr(c)[0] * w1)
                       + jnp.sum(jnp.linalg.qr(c)[1] * w2))(tall[:, np.asarray(p)])
    want = np.zeros_like(tall)
    want[:, np.asarray(p)] = f64(inner)
    close(grad, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(NotImplementedError, match="QR"):
        pyree.grad(lambda a: jnp.sum(L.qr(a, pivoting=True)[0]))(tall)
    with pytest.raises(NotImplementedError, match="raw"):
        pyree.grad(lambda a: jnp.sum(jnp.linalg.qr(a, mode="raw")[0]))(tall)


# -- matrix_rank -----------------------------------------------------------------------------------

def test_matrix_rank_as_jax(x64):
    """JAX's matrix_rank: the default threshold relative to the largest singular value (as
    NumPy), a given rtol (or tol, its alias) compared as it is (NumPy's rtol is relative:
    rtol=0.5 gives 1 for diag(10, 1, 0.05), JAX 2), ``hermitian=True`` from the eigenvalues'
    magnitudes (as NumPy's), the rank int64 under x64 (a vector's int32), eagerly and in
    jit."""
    rng = np.random.RandomState(12)
    diag = np.diag([10.0, 1.0, 0.05])
    q = np.linalg.qr(rng.randn(4, 4))[0]
    indefinite = q @ np.diag([3.0, -2.0, 0.0, 0.0]) @ q.T     # rank 2
    full = q @ np.diag([3.0, -2.0, 1e-3, -1e-2]) @ q.T
    wide = rng.randn(2, 3) @ rng.randn(3, 5)                  # rank 2, 2 x 5

    def ranks(diag, indefinite, full, wide):
        rank = jnp.linalg.matrix_rank
        return (rank(diag), rank(diag, 0.5), rank(diag, tol=0.5), rank(diag, rtol=0.02),
                rank(indefinite, hermitian=True), rank(full, hermitian=True), rank(wide),
                rank(jnp.ones((2, 3, 3)), rtol=jnp.array([0.1, 10.0])),
                rank(jnp.zeros(3)), rank(jnp.ones(3)))

    want = (3, 2, 2, 3, 2, 4, 2, [1, 0], 0, 1)
    assert np.linalg.matrix_rank(indefinite, hermitian=True) == 2
    assert np.linalg.matrix_rank(full, hermitian=True) == 4
    for got in (ranks(diag, indefinite, full, wide),
                pyree.jit(ranks)(diag, indefinite, full, wide)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
        assert [g.dtype for g in got] == [np.int64] * 8 + [np.int32] * 2
    with pytest.raises(ValueError, match="only one of tol or rtol"):
        jnp.linalg.matrix_rank(diag, rtol=0.1, tol=0.1)
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.matrix_rank(wide, hermitian=True)


# -- gradients of non-symmetric inputs ---------------------------------------------------------------

def _cholesky_jvp(low, da):
    """JAX's rule: dL = L Phi(L^-1 dA L^-H), Phi the lower triangle with half the diagonal."""
    low_inv = np.linalg.inv(low)
    x = low_inv @ da @ low_inv.conj().T
    return low @ (np.tril(x, -1) + np.diag(np.diag(x)) / 2)


def _eigh_jvp(w, v, da):
    """JAX's rule: dw = Re diag(V^H dA V), dV = V (F o V^H dA V), F_ij = 1 / (w_j - w_i)."""
    inner = v.conj().T @ da @ v
    gaps = w[None, :] - w[:, None]
    f = np.where(np.eye(len(w)) > 0, 0.0, 1 / np.where(np.eye(len(w)) > 0, 1.0, gaps))
    return np.real(np.diag(inner)), v @ (f * inner)


def _gradient_of(linear, n):
    """The gradient of a real linear function of an n x n real matrix, entry by entry."""
    grad = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e = np.zeros((n, n))
            e[i, j] = 1.0
            grad[i, j] = linear(e)
    return grad


def test_cholesky_eigh_grads_of_non_symmetric_input(x64):
    """Gradients at a non-symmetric input are JAX's (each checked against jax.grad with JAX
    0.10.2, to 1e-7 in float32): symmetrized inputs (jnp.linalg.cholesky and eigh by default,
    scipy.linalg.eigh always, as JAX) give the derivative of the symmetrized function (a
    symmetric gradient); a triangle read as is (symmetrize_input=False, scipy.linalg.cholesky)
    gives the rule's derivative with the whole tangent dA, not the mirrored triangle's (which
    put twice the cotangent on one triangle and none on the other). Values against NumPy and
    SciPy; the references apply JAX's JVP rules to each entry of dA."""
    rng = np.random.RandomState(13)
    n = 3
    m = rng.randn(n, n)
    spd_a = m @ m.T + n * np.eye(n)
    a = spd_a + 0.3 * np.triu(rng.randn(n, n), 1)     # the upper triangle perturbed
    sym = (a + a.T) / 2
    w1, w2 = rng.randn(n, n), rng.randn(n, n)

    def chol_loss(chol):
        return lambda a: jnp.sum(chol(a) * w1)

    def eigh_loss(eigh):
        def loss(a):
            w, v = eigh(a)[:2]
            return jnp.sum(w * w1[0]) + jnp.sum(v * v * w2)    # (signs of v do not matter)
        return loss

    def chol_reference(matrix, symmetrize, upper=False):
        low = np.linalg.cholesky(matrix)
        d = (lambda e: (e + e.T) / 2) if symmetrize else (lambda e: e)
        if upper:     # U = L^H with L from a^H's lower triangle: the tangent is dA^H
            return _gradient_of(lambda e: np.sum(_cholesky_jvp(low, d(e).T).T * w1), n)
        return _gradient_of(lambda e: np.sum(_cholesky_jvp(low, d(e)) * w1), n)

    def eigh_reference(matrix, symmetrize):
        w, v = np.linalg.eigh(matrix)
        d = (lambda e: (e + e.T) / 2) if symmetrize else (lambda e: e)

        def linear(e):
            dw, dv = _eigh_jvp(w, v, d(e))
            return np.sum(dw * w1[0]) + np.sum(2 * v * dv * w2)
        return _gradient_of(linear, n)

    lower_mirrored = np.tril(a) + np.tril(a, -1).T           # = spd_a
    upper_mirrored = np.triu(a) + np.triu(a, 1).T
    cases = [   # (function, its value, the gradient JAX gives)
        (chol_loss(jnp.linalg.cholesky), np.linalg.cholesky(sym), chol_reference(sym, True)),
        (chol_loss(lambda a: jnp.linalg.cholesky(a, symmetrize_input=False)),
         np.linalg.cholesky(lower_mirrored), chol_reference(lower_mirrored, False)),
        (chol_loss(lambda a: jnp.linalg.cholesky(a, upper=True, symmetrize_input=False)),
         np.linalg.cholesky(lower_mirrored).T,
         _gradient_of(lambda e: np.sum(_cholesky_jvp(np.linalg.cholesky(lower_mirrored),
                                                      e).T * w1), n)),
        (chol_loss(L.cholesky), sl.cholesky(a), chol_reference(upper_mirrored, False, True)),
        (chol_loss(lambda a: L.cholesky(a, lower=True)), sl.cholesky(a, lower=True),
         chol_reference(lower_mirrored, False)),
        (eigh_loss(jnp.linalg.eigh), np.linalg.eigvalsh(sym), eigh_reference(sym, True)),
        (eigh_loss(L.eigh), np.linalg.eigvalsh(sym), eigh_reference(sym, True)),
        (eigh_loss(lambda a: L.eigh(a, lower=False)), np.linalg.eigvalsh(sym),
         eigh_reference(sym, True)),
    ]
    for k, (loss, value, grad) in enumerate(cases):
        fn = pyree.grad(loss)
        got = fn(a) if k % 2 else pyree.jit(fn)(a)            # eagerly and in jit
        close(got, grad, rtol=1e-10, atol=1e-10)
    values = pyree.jit(lambda a: (jnp.linalg.cholesky(a), jnp.linalg.cholesky(
        a, symmetrize_input=False), jnp.linalg.cholesky(a, upper=True, symmetrize_input=False),
        L.cholesky(a), L.cholesky(a, lower=True), jnp.linalg.eigh(a)[0], L.eigh(a)[0],
        L.eigh(a, lower=False)[0]))(a)
    for got, (_, want, _) in zip(values, cases):
        close(got, want, rtol=1e-12, atol=1e-12)
    # symmetrize_input=False in eigh: the tangent whole too (at a symmetric input: JAX's rule
    # evaluates eigh of the symmetrized input there, whatever the triangle read).
    for uplo in ("L", "U"):
        got = pyree.grad(eigh_loss(lambda a: jnp.linalg.eigh(a, uplo, symmetrize_input=False))
                         )(spd_a)
        close(got, eigh_reference(spd_a, False), rtol=1e-10, atol=1e-10)
    # The whole tangent, checked against JAX's rule in complex128 too: a real loss of the
    # lower factor of a non-Hermitian matrix's lower triangle.
    c = rng.randn(n, n) + 1j * rng.randn(n, n)
    hpd = c @ c.conj().T + n * np.eye(n)
    c_in = hpd + 0.3 * np.triu(rng.randn(n, n) + 1j * rng.randn(n, n), 1)
    wc = rng.randn(n, n) + 1j * rng.randn(n, n)
    got = pyree.grad(lambda a: jnp.sum(jnp.real(L.cholesky(a, lower=True) * wc)))(c_in)
    low = np.linalg.cholesky(hpd)

    def complex_gradient(e_real, e_imag):   # JAX's convention: df/dx - i df/dy
        dx = np.sum(np.real(_cholesky_jvp(low, e_real) * wc))
        dy = np.sum(np.real(_cholesky_jvp(low, 1j * e_imag) * wc))
        return dx - 1j * dy

    want = np.zeros((n, n), complex)
    for i in range(n):
        for j in range(n):
            e = np.zeros((n, n))
            e[i, j] = 1.0
            want[i, j] = complex_gradient(e, e)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


# -- derivatives -----------------------------------------------------------------------------------

def check_derivatives(f, args, modes=("rev",), eps=1e-6, rtol=1e-5, atol=1e-5):
    """``f``'s derivatives against central differences along a random direction v: reverse
    mode as <grad <u, f>, v> = <u, J v>, forward mode as jvp(v) = J v, leaf by leaf. (Like
    ``check_grads``, but each derivative is one jitted program: eager ``vjp`` of programs with
    while loops compiled several times slower.)"""
    rng = np.random.RandomState(0)
    f_jit = pyree.jit(f)
    leaves = pyree.tree_util.tree_leaves
    v = [rng.randn(*np.shape(x)) for x in args]
    plus = leaves(f_jit(*[x + eps * d for x, d in zip(args, v)]))
    minus = leaves(f_jit(*[x - eps * d for x, d in zip(args, v)]))
    numeric = [(f64(p) - f64(m)) / (2 * eps) for p, m in zip(plus, minus)]
    if "rev" in modes:
        u = [rng.randn(*np.shape(y)) for y in numeric]

        def projected(*xs):
            return sum(jnp.sum(y * w) for y, w in zip(leaves(f(*xs)), u))

        grads = pyree.jit(pyree.grad(projected, argnums=tuple(range(len(args)))))(*args)
        got = sum(np.vdot(f64(g), d) for g, d in zip(grads, v))
        want = sum(np.vdot(w, n) for w, n in zip(u, numeric))
        assert np.isclose(got, want, rtol=rtol, atol=atol * max(1.0, abs(want))), (got, want)
    if "fwd" in modes:
        tangents = pyree.jit(lambda xs, vs: pyree.jvp(f, xs, vs)[1])(tuple(args), tuple(v))
        for got, want in zip(leaves(tangents), numeric):
            np.testing.assert_allclose(f64(got), want, rtol=rtol, atol=atol)


def test_grads(x64):
    """Reverse mode (a linearization of the JVP rules, transposed) of each family at once;
    forward mode for the SVD's (wide: the other branch of its rule), expm's (whose squarings
    are a while loop) and a rectangular LU's."""
    rng = np.random.RandomState(5)
    a = rng.randn(4, 4)
    tall = rng.randn(5, 3)
    b = rng.randn(4, 2)

    def svd_parts(m):
        u, s, vh = jnp.linalg.svd(m, full_matrices=False)
        return u ** 2, s, vh ** 2           # signs are arbitrary: squares are not

    def f(a, tall, b):
        w, v = jnp.linalg.eigh(a)
        spd_a = a @ a.T + 4 * jnp.eye(4)
        return dict(eigh=(w, v ** 2), svd=svd_parts(tall), qr=jnp.linalg.qr(tall),
                    tri=L.solve_triangular(a, b, trans=1, lower=True, unit_diagonal=True),
                    cho_solve=L.cho_solve(L.cho_factor(spd_a), b), lu=L.lu(a)[1:],
                    expm=L.expm(3.0 * a),
                    pinv=jnp.linalg.pinv(tall), pinv_hermitian=jnp.linalg.pinv(a, hermitian=True))

    check_derivatives(f, (a, tall, b))
    # (A rectangular LU is differentiated through its factorization's loop.)
    check_derivatives(lambda a, tall: (svd_parts(tall.T), L.expm(3.0 * a), L.lu(tall)[1:]),
                      (a, tall), modes=("fwd",))


def test_grad_closed_forms(x64):
    rng = np.random.RandomState(6)
    q, _ = np.linalg.qr(rng.randn(4, 4))
    repeated = q @ np.diag([1.0, 1.0, 2.0, 5.0]) @ q.T
    # d w_k / dA = v_k v_k^T (symmetrized input: the same); finite where eigenvalues repeat.
    last, total = pyree.jit(lambda a: (pyree.grad(lambda a: jnp.linalg.eigvalsh(a)[3])(a),
                                       pyree.grad(lambda a: jnp.sum(jnp.linalg.eigvalsh(a)))(a))
                            )(repeated)
    close(last, np.outer(q[:, 3], q[:, 3]), rtol=1e-10, atol=1e-10)
    close(total, np.eye(4), rtol=1e-10, atol=1e-10)
    # d ||A||_* / dA = U V^T.
    tall = rng.randn(5, 3)
    u, _, vh = np.linalg.svd(tall, full_matrices=False)
    got = pyree.grad(lambda a: jnp.sum(jnp.linalg.svd(a, compute_uv=False)))(tall)
    close(got, u @ vh, rtol=1e-10, atol=1e-10)
    # The SVD's U with full_matrices for a non-square matrix has no derivative (as JAX).
    with pytest.raises(NotImplementedError, match="full_matrices"):
        pyree.grad(lambda a: jnp.sum(jnp.linalg.svd(a)[0]))(tall)
    with pytest.raises(NotImplementedError, match="QR"):
        pyree.grad(lambda a: jnp.sum(jnp.linalg.qr(a)[1]))(tall.T)


# -- vmap ------------------------------------------------------------------------------------------

def test_vmap():
    rng = np.random.RandomState(7)
    s = symmetric(rng, 3, 4, 4)
    a = (rng.randn(3, 4, 4) + 4 * np.eye(4)).astype(np.float32)
    b = rng.randn(4, 2).astype(np.float32)

    def f(s, a, b):
        w, v = jnp.linalg.eigh(s)
        u, sv, vh = jnp.linalg.svd(a)
        q, r = jnp.linalg.qr(a)
        return (w, jnp.abs(v), sv, q, r, L.expm(0.5 * a / 4), L.solve_triangular(a, b),
                L.lu(a)[2], L.cho_solve(L.cho_factor(s @ s.T + 4 * jnp.eye(4)), b),
                jnp.linalg.pinv(a))

    got = pyree.jit(pyree.vmap(f, (0, 0, None)))(s, a, b)
    want = []
    for i in range(3):
        w, v = np.linalg.eigh(f64(s[i]))
        q, r = np.linalg.qr(f64(a[i]))
        c = f64(s[i]) @ f64(s[i]).T + 4 * np.eye(4)
        want.append((w, np.abs(v), np.linalg.svd(f64(a[i]), compute_uv=False), q, r,
                     sl.expm(0.5 * f64(a[i]) / 4), sl.solve_triangular(a[i], b),
                     sl.lu(a[i])[2], np.linalg.solve(c, b), np.linalg.pinv(f64(a[i]))))
    for k, g in enumerate(got):
        close(g, np.stack([w[k] for w in want]), rtol=1e-3, atol=1e-4)
    # Per-example gradients through vmap.
    grads = pyree.jit(pyree.vmap(pyree.grad(lambda s: jnp.linalg.eigvalsh(s)[-1])))(s)
    for i in range(3):
        v = np.linalg.eigh(f64(s[i]))[1][:, -1]
        close(grads[i], np.outer(v, v), atol=1e-4)


# -- errors ----------------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.eigh(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="UPLO"):
        jnp.linalg.eigh(np.eye(2, dtype=np.float32), UPLO="X")
    with pytest.raises(ValueError, match="mode"):
        jnp.linalg.qr(np.eye(2, dtype=np.float32), mode="economic")
    with pytest.raises(ValueError, match="matrix"):
        jnp.linalg.qr(np.ones(3, np.float32), mode="raw")
    with pytest.raises(ValueError, match="matrix"):
        jnp.linalg.svd(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="match"):
        jnp.linalg.lstsq(np.ones((3, 2), np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="trans"):
        L.solve_triangular(np.eye(2, dtype=np.float32), np.ones(2, np.float32), trans=3)
    with pytest.raises(ValueError, match="rows"):
        L.solve_triangular(np.eye(2, dtype=np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="assume_a"):
        L.solve(np.eye(2, dtype=np.float32), np.ones(2, np.float32), assume_a="banded")
    with pytest.raises(ValueError, match="mode"):
        L.qr(np.eye(2, dtype=np.float32), mode="reduced")
    with pytest.raises(ValueError, match="mode"):
        L.qr(np.eye(2, dtype=np.float32), mode="raw", pivoting=True)     # (JAX: the same)
    with pytest.raises(ValueError, match="matrix"):
        L.qr(np.ones(3, np.float32), pivoting=True)
    with pytest.raises(ValueError, match="dimensions"):
        L.block_diag(np.ones((2, 2, 2), np.float32))
    with pytest.raises(ValueError, match="square"):
        L.expm(np.ones((2, 3), np.float32))
