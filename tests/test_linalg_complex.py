"""Complex matrices through ``jnp.linalg`` and ``pyree.scipy.linalg``: values against NumPy
and SciPy (complex64, and complex128 under x64), jitted and eager, on stacks of matrices and
under vmap; derivatives in complex128 against central differences, forward mode along complex
directions and gradients of real-valued functions in JAX's convention: ``grad(f)`` is
``df/dx - i df/dy``, so that ``df = Re(sum(grad * dz))`` (``grad(|z|^2) = 2 conj(z)``).

Compiles are the cost: each test checks many functions in one jitted program, only a few
functions run eagerly, and the complex128 checks share one program (the forward derivatives
of everything, whose primal outputs are checked against NumPy and SciPy too).
"""
import numpy as np
import scipy.linalg as sl

import pyree
import pyree.numpy as jnp
from pyree.scipy import linalg as pl

C64 = dict(rtol=1e-4, atol=1e-5)
C128 = dict(rtol=1e-10, atol=1e-12)


def _ct(x):
    return np.conj(np.swapaxes(x, -1, -2))


def general(rng, *shape, dtype=np.complex64):
    """Random complex matrices with a dominant diagonal of varied phases."""
    n = shape[-1]
    phases = np.exp(2j * np.pi * rng.rand(n))
    a = rng.randn(*shape) + 1j * rng.randn(*shape) + n * np.eye(n) * phases
    return a.astype(dtype)


def hpd(rng, *shape, dtype=np.complex64):
    """Random Hermitian positive definite matrices."""
    m = rng.randn(*shape) + 1j * rng.randn(*shape)
    return (m @ _ct(m) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def vectors(rng, *shape, dtype=np.complex64):
    return (rng.randn(*shape) + 1j * rng.randn(*shape)).astype(dtype)


def close(got, want, dtype, tol):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, **tol)


# -- values ----------------------------------------------------------------------------------------

def _numpy_functions(a, b, h):
    sign, logabsdet = jnp.linalg.slogdet(a)
    return dict(
        inv=jnp.linalg.inv(a), det=jnp.linalg.det(a), sign=sign, logabsdet=logabsdet,
        solve=jnp.linalg.solve(a, b), cholesky=jnp.linalg.cholesky(h),
        cholesky_upper=jnp.linalg.cholesky(h, upper=True),
        power3=jnp.linalg.matrix_power(a, 3), power_minus2=jnp.linalg.matrix_power(a, -2),
        fro=jnp.linalg.norm(a, axis=(-2, -1)), norm1=jnp.linalg.norm(a, 1, axis=(-2, -1)),
        norm_minus1=jnp.linalg.norm(a, -1, axis=(-2, -1)),
        norm_inf=jnp.linalg.norm(a, np.inf, axis=(-2, -1)),
        norm_minus_inf=jnp.linalg.norm(a, -np.inf, axis=(-2, -1)),
        vector2=jnp.linalg.norm(b, axis=-2), vector1=jnp.linalg.norm(b, 1, axis=-2),
        vector_inf=jnp.linalg.norm(b, np.inf, axis=-2), vector3=jnp.linalg.norm(b, 3, axis=-2),
        flat=jnp.linalg.norm(a))


def _numpy_reference(a, b, h):
    sign, logabsdet = np.linalg.slogdet(a)
    up = np.linalg.cholesky(h)
    return dict(
        inv=np.linalg.inv(a), det=np.linalg.det(a), sign=sign, logabsdet=logabsdet,
        solve=np.linalg.solve(a, b), cholesky=up, cholesky_upper=_ct(up),
        power3=a @ a @ a, power_minus2=np.linalg.inv(a @ a),
        fro=np.linalg.norm(a, axis=(-2, -1)), norm1=np.linalg.norm(a, 1, axis=(-2, -1)),
        norm_minus1=np.linalg.norm(a, -1, axis=(-2, -1)),
        norm_inf=np.linalg.norm(a, np.inf, axis=(-2, -1)),
        norm_minus_inf=np.linalg.norm(a, -np.inf, axis=(-2, -1)),
        vector2=np.linalg.norm(b, axis=-2), vector1=np.linalg.norm(b, 1, axis=-2),
        vector_inf=np.linalg.norm(b, np.inf, axis=-2), vector3=np.linalg.norm(b, 3, axis=-2),
        flat=np.linalg.norm(a))


def _check_numpy(got, a, b, h, dtype, tol):
    want = _numpy_reference(a.astype(np.complex128), b.astype(np.complex128),
                            h.astype(np.complex128))
    real = np.dtype(dtype).type(0).real.dtype
    for name, value in want.items():
        kind = real if np.asarray(value).dtype.kind == "f" else dtype
        close(got[name], value.astype(kind), kind, tol)


def test_numpy_linalg_complex64():
    rng = np.random.RandomState(0)
    a, b, h = general(rng, 2, 3, 3), vectors(rng, 2, 3, 2), hpd(rng, 2, 3, 3)
    _check_numpy(pyree.jit(_numpy_functions)(a, b, h), a, b, h, np.complex64, C64)


def test_eager():
    # Each function called outside jit runs as its own compiled program: a few of them.
    rng = np.random.RandomState(1)
    a, b, h = general(rng, 3, 3), vectors(rng, 3, 2), hpd(rng, 3, 3)
    close(jnp.linalg.inv(a), np.linalg.inv(a), np.complex64, C64)
    sign, logabsdet = jnp.linalg.slogdet(a)
    want_sign, want_logabsdet = np.linalg.slogdet(a)
    close(sign, want_sign, np.complex64, C64)
    close(logabsdet, want_logabsdet, np.float32, C64)
    close(jnp.linalg.cholesky(h), np.linalg.cholesky(h), np.complex64, C64)
    # Hermitian, eigenvalues -1, 3 and 1: not positive definite, all NaN (as JAX).
    bad = np.array([[1, 2j, 0], [-2j, 1, 0], [0, 0, 1]], np.complex64)
    assert np.isnan(np.asarray(jnp.linalg.cholesky(bad))).all()
    close(pl.solve_triangular(a, b, trans="C"), sl.solve_triangular(a, b, trans="C"),
          np.complex64, C64)


def test_multi_dot_and_mixed_dtypes():
    rng = np.random.RandomState(2)
    x, y, z = vectors(rng, 3), vectors(rng, 3, 4), vectors(rng, 4, 2)
    a = general(rng, 3, 3)
    # complex a with a real b, and the reverse: promoted together
    got = pyree.jit(lambda x, y, z, a: (
        jnp.linalg.multi_dot([x, y, z]), jnp.linalg.solve(a, x.real),
        jnp.linalg.solve(a.real, x)))(x, y, z, a)
    want = (np.linalg.multi_dot([x, y, z]), np.linalg.solve(a, x.real),
            np.linalg.solve(a.real, x))
    for g, w in zip(got, want):
        close(g, w, np.complex64, C64)


def test_hermitian_and_symmetric_solves():
    # scipy's solve reads one triangle of a Hermitian ('her') or complex symmetric ('sym')
    # matrix. (A program of their own: with a third solve, or next to cholesky, the program
    # failed at run time, float32 alike, "indirect buffer reference slot 0 is out range".)
    rng = np.random.RandomState(4)
    a, h, y = general(rng, 3, 3), hpd(rng, 3, 3), vectors(rng, 3, 4)
    her, sym = pyree.jit(lambda a, h, y: (
        pl.solve(jnp.tril(h), y, assume_a="her", lower=True),
        pl.solve(jnp.triu(a), y, assume_a="sym")))(a, h, y)
    close(her, np.linalg.solve(h, y), np.complex64, C64)
    close(sym, np.linalg.solve(np.triu(a) + np.triu(a, 1).T, y), np.complex64, C64)


def _scipy_functions(a, b, h):
    out = dict(
        cholesky=pl.cholesky(h), cholesky_lower=pl.cholesky(h, lower=True),
        cho_solve=pl.cho_solve(pl.cho_factor(h), b),
        cho_solve_lower=pl.cho_solve(pl.cho_factor(h, lower=True), b),
        lu=pl.lu(a), lu_factor=pl.lu_factor(a), inv=pl.inv(a), det=pl.det(a),
        solve=pl.solve(a, b), solve_pos=pl.solve(h, b, assume_a="pos"))
    # (assume_a 'her' and 'sym': see test_hermitian_and_symmetric_solves)
    for trans in (0, 1, 2, "C"):
        out[f"tri_lower_{trans}"] = pl.solve_triangular(a, b, trans=trans, lower=True)
        out[f"tri_upper_{trans}"] = pl.solve_triangular(a, b, trans=trans, unit_diagonal=True)
        out[f"lu_solve_{trans}"] = pl.lu_solve(pl.lu_factor(a), b, trans=trans)
    return out


def _scipy_reference(a, b, h):
    out = dict(
        cholesky=sl.cholesky(h), cholesky_lower=sl.cholesky(h, lower=True),
        cho_solve=sl.cho_solve(sl.cho_factor(h), b),
        cho_solve_lower=sl.cho_solve(sl.cho_factor(h, lower=True), b),
        lu=sl.lu(a), lu_factor=sl.lu_factor(a), inv=sl.inv(a), det=sl.det(a),
        solve=sl.solve(a, b), solve_pos=sl.solve(h, b, assume_a="pos"))
    for trans in (0, 1, 2, "C"):
        out[f"tri_lower_{trans}"] = sl.solve_triangular(a, b, trans=trans, lower=True)
        out[f"tri_upper_{trans}"] = sl.solve_triangular(a, b, trans=trans, unit_diagonal=True)
        # (SciPy's lu_solve takes no letters)
        out[f"lu_solve_{trans}"] = sl.lu_solve(sl.lu_factor(a), b, trans={"C": 2}.get(trans, trans))
    return out


def _check_scipy(got, a, b, h, dtype, tol):
    want = _scipy_reference(a, b, h)
    for name, value in want.items():
        values = value if isinstance(value, tuple) else (value,)
        gots = got[name] if isinstance(value, tuple) else (got[name],)
        for g, w in zip(gots, values):
            # (lu's permutation matrix is real, as SciPy's and JAX's)
            kind = {"i": np.int32, "f": np.finfo(dtype).dtype}.get(np.asarray(w).dtype.kind,
                                                                  dtype)
            close(g, np.asarray(w).astype(kind), kind, tol)


def test_scipy_linalg_complex64():
    # LAPACK's pivots (by |re| + |im|): p, l, u and lu_factor's pivots equal SciPy's.
    rng = np.random.RandomState(3)
    a, b, h = vectors(rng, 4, 4), vectors(rng, 4, 2), hpd(rng, 4, 4)
    a = a + 2 * np.eye(4, dtype=a.dtype)   # (triangular solves stay well conditioned)
    _check_scipy(pyree.jit(_scipy_functions)(a, b, h), a, b, h, np.complex64, C64)


def test_vmap():
    rng = np.random.RandomState(5)
    a, b = general(rng, 3, 3, 3), vectors(rng, 3, 3)
    got = pyree.jit(pyree.vmap(lambda a, b: (jnp.linalg.inv(a), jnp.linalg.solve(a, b),
                                             jnp.linalg.det(a))))(a, b)
    want = (np.linalg.inv(a), np.linalg.solve(a, b[..., None])[..., 0], np.linalg.det(a))
    for g, w in zip(got, want):
        close(g, w, np.complex64, C64)


# -- QR, eigh, SVD ---------------------------------------------------------------------------------

def test_qr_matches_numpy():
    # Complex Householder reflectors as LAPACK's: Q and R equal NumPy's, R's diagonal real.
    rng = np.random.RandomState(6)
    a = vectors(rng, 2, 4, 3)
    got = pyree.jit(lambda a: (jnp.linalg.qr(a), jnp.linalg.qr(a, "complete"),
                               jnp.linalg.qr(jnp.swapaxes(a, -1, -2)), pl.qr(a[0])))(a)
    want = (np.linalg.qr(a), np.linalg.qr(a, "complete"), np.linalg.qr(np.swapaxes(a, -1, -2)),
            sl.qr(a[0]))
    for g, w in zip(got, want):
        close(g[0], w[0], np.complex64, C64)
        close(g[1], w[1], np.complex64, C64)


def _unitary(v, tol):
    """v's columns are orthonormal."""
    eye = np.eye(v.shape[-1])
    np.testing.assert_allclose(_ct(v) @ v, np.broadcast_to(eye, v.shape[:-2] + eye.shape),
                               **tol)


def test_eigh_hermitian():
    rng = np.random.RandomState(7)
    m = vectors(rng, 2, 4, 4)
    a = m + _ct(m)
    # a's lower triangle alone (the other one's values must not matter; scipy's eigh
    # symmetrizes, as JAX's), and a matrix with a repeated eigenvalue.
    u = np.linalg.qr(vectors(rng, 4, 4, dtype=np.complex128))[0]
    repeated = ((u * np.array([2.0, 2.0, 5.0, 5.0])) @ _ct(u)).astype(np.complex64)
    (w, v), lower, upper, (w_rep, v_rep) = pyree.jit(lambda a, r: (
        jnp.linalg.eigh(a), jnp.linalg.eigvalsh(jnp.tril(a[0]), symmetrize_input=False),
        pl.eigh(a[0], lower=False, eigvals_only=True), jnp.linalg.eigh(r)))(
            a, repeated)
    close(w, np.linalg.eigvalsh(a), np.float32, C64)
    w, v = np.asarray(w), np.asarray(v)
    _unitary(v, C64)
    np.testing.assert_allclose((v * w[..., None, :]) @ _ct(v), a, rtol=1e-4, atol=1e-4)
    close(lower, np.linalg.eigvalsh(a[0]), np.float32, C64)
    close(upper, np.linalg.eigvalsh(a[0]), np.float32, C64)
    close(w_rep, np.linalg.eigvalsh(repeated), np.float32, C64)
    w_rep, v_rep = np.asarray(w_rep), np.asarray(v_rep)
    _unitary(v_rep, C64)
    np.testing.assert_allclose((v_rep * w_rep) @ _ct(v_rep), repeated, rtol=1e-4, atol=1e-4)


def test_generalized_eigh():
    rng = np.random.RandomState(8)
    m = vectors(rng, 3, 3)
    a, b = m + _ct(m), hpd(rng, 3, 3)
    w, v = pl.eigh(a, b)
    close(w, sl.eigh(a, b, eigvals_only=True), np.float32, C64)
    v = np.asarray(v)
    np.testing.assert_allclose(_ct(v) @ b @ v, np.eye(3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a @ v, b @ v * np.asarray(w), rtol=1e-4, atol=1e-4)


def test_svd_pinv_lstsq():
    rng = np.random.RandomState(9)
    a = vectors(rng, 5, 3)
    b = vectors(rng, 5, 2)

    def f(a, b):
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
        return (u, s, vh, jnp.linalg.svd(jnp.swapaxes(a, -1, -2), compute_uv=False),
                jnp.linalg.pinv(a), jnp.linalg.lstsq(a, b), jnp.linalg.norm(a, 2),
                jnp.linalg.norm(a, "nuc"))

    u, s, vh, s_t, p, (x, resid, rank, sv), n2, nuc = pyree.jit(f)(a, b)
    want_s = np.linalg.svd(a, compute_uv=False)
    close(s, want_s, np.float32, C64)
    close(s_t, want_s, np.float32, C64)
    u, vh = np.asarray(u), np.asarray(vh)
    _unitary(u, C64)
    _unitary(_ct(vh), C64)
    np.testing.assert_allclose((u * np.asarray(s)) @ vh, a, rtol=1e-4, atol=1e-4)
    close(p, np.linalg.pinv(a), np.complex64, C64)
    want_x, want_resid, want_rank, _ = np.linalg.lstsq(a, b, rcond=None)
    close(x, want_x, np.complex64, C64)
    close(resid, want_resid, np.float32, dict(rtol=1e-4, atol=1e-4))
    assert int(rank) == want_rank
    close(n2, want_s[0], np.float32, C64)
    close(nuc, want_s.sum(), np.float32, C64)


def test_expm():
    rng = np.random.RandomState(10)
    a = vectors(rng, 3, 3) * 2
    close(pl.expm(a), sl.expm(a), np.complex64, dict(rtol=1e-4, atol=1e-4))


# -- complex128: values and derivatives ------------------------------------------------------------

def _smooth_functions(a, b, h, t):
    """Holomorphic and non-holomorphic functions of complex matrices, at generic points
    (distinct eigenvalues and singular values). Eigen- and singular vectors enter through
    quantities that do not depend on their phases."""
    sign, logabsdet = jnp.linalg.slogdet(a)
    w, v = jnp.linalg.eigh(h)
    u, s, vh = jnp.linalg.svd(t, full_matrices=False)
    q, r = jnp.linalg.qr(t)
    p, low, up = pl.lu(a)
    return dict(
        inv=jnp.linalg.inv(a), solve=jnp.linalg.solve(a, b), sign=sign, logabsdet=logabsdet,
        cholesky=jnp.linalg.cholesky(h), cho_solve=pl.cho_solve(pl.cho_factor(h), b),
        tri=pl.solve_triangular(a, b, trans=2, lower=True),
        lu_solve=pl.lu_solve(pl.lu_factor(a), b, trans=2), lu=(low, up),
        fro=jnp.linalg.norm(a), eigvals=w, eigvec_moduli=jnp.abs(v) ** 2, svals=s,
        # (multi_dot, not @: a complex jnp.matmul in a jitted program meets IREE 3.13's data
        # tiling bugs, see pyree.numpy.linalg._matmul)
        polar=jnp.linalg.multi_dot([u, vh]), qr=(q, r))


def _smooth_reference(a, b, h, t):
    u, s, vh = np.linalg.svd(t, full_matrices=False)
    sign, logabsdet = np.linalg.slogdet(a)
    p, low, up = sl.lu(a)
    return dict(
        inv=np.linalg.inv(a), solve=np.linalg.solve(a, b), sign=sign, logabsdet=logabsdet,
        cholesky=np.linalg.cholesky(h), cho_solve=sl.cho_solve(sl.cho_factor(h), b),
        tri=sl.solve_triangular(a, b, trans=2, lower=True),
        lu_solve=sl.lu_solve(sl.lu_factor(a), b, trans=2), lu=(low, up),
        fro=np.linalg.norm(a), eigvals=np.linalg.eigvalsh(h), svals=s, polar=u @ vh,
        qr=np.linalg.qr(t))


def _points(rng):
    a = general(rng, 3, 3, dtype=np.complex128)
    b = vectors(rng, 3, 2, dtype=np.complex128)
    m = vectors(rng, 3, 3, dtype=np.complex128)
    h = m + _ct(m) + 8 * np.eye(3)          # Hermitian positive definite, distinct eigenvalues
    t = vectors(rng, 4, 3, dtype=np.complex128)
    return a, b, h, t


def _directions(rng, args):
    d = [vectors(rng, *np.shape(x), dtype=np.complex128) for x in args]
    d[2] = (d[2] + _ct(d[2])) / 2           # h is read as Hermitian: only such directions
    return tuple(d)


# One compiled program for every complex128 check: the primal outputs are f's values (at the
# points, and at the points moved for finite differences), the tangents its derivatives.
_jvp = pyree.jit(lambda args, dirs: pyree.jvp(_smooth_functions, args, dirs))


def _leaves(tree):
    return [np.asarray(x) for x in pyree.tree_util.tree_leaves(tree)]


def test_complex128_values(x64):
    rng = np.random.RandomState(11)
    args = _points(rng)
    got, _ = _jvp(args, _directions(rng, args))
    for name, want in _smooth_reference(*args).items():
        for g, w in zip(_leaves(got[name]), _leaves(want)):
            assert g.dtype == (np.float64 if w.dtype.kind == "f" else np.complex128), name
            np.testing.assert_allclose(g, w, **C128, err_msg=name)


def _central_difference(args, dirs, eps=1e-6):
    plus, _ = _jvp(tuple(x + eps * d for x, d in zip(args, dirs)), dirs)
    minus, _ = _jvp(tuple(x - eps * d for x, d in zip(args, dirs)), dirs)
    return {name: [(p - m) / (2 * eps) for p, m in zip(_leaves(plus[name]),
                                                         _leaves(minus[name]))]
            for name in plus}


def test_jvp_against_finite_differences(x64):
    rng = np.random.RandomState(11)
    args = _points(rng)
    dirs = _directions(rng, args)
    _, tangent = _jvp(args, dirs)
    for name, want in _central_difference(args, dirs).items():
        for got, w in zip(_leaves(tangent[name]), want):
            assert got.dtype == w.dtype, name
            np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6, err_msg=name)


def _weights(out):
    rng = np.random.RandomState(12)
    return [rng.randn(*np.shape(x)) + 1j * rng.randn(*np.shape(x))
            for x in pyree.tree_util.tree_leaves(out)]


# The gradient program's functions: (reverse mode transposes the forward rules; each family
# once, to keep the compile short.)
_GRADED = ("solve", "sign", "logabsdet", "cholesky", "tri", "lu_solve", "eigvals", "svals",
           "qr", "fro")


def _loss(a, b, h, t):
    """A real-valued function of _GRADED's functions, with fixed weights."""
    out = {k: v for k, v in _smooth_functions(a, b, h, t).items() if k in _GRADED}
    return sum(jnp.sum(jnp.real(x * w))
               for x, w in zip(pyree.tree_util.tree_leaves(out), _weights(out)))


def test_grad_convention(x64):
    # JAX's convention: df = Re(sum(grad * dz)) along any complex direction dz. The
    # derivative along each argument's direction comes from the forward derivatives (checked
    # against finite differences above).
    rng = np.random.RandomState(13)
    args = _points(rng)
    grads = pyree.jit(pyree.grad(_loss, argnums=(0, 1, 2, 3)))(*args)
    dirs = _directions(rng, args)
    for i in range(4):
        only = tuple(d if j == i else np.zeros_like(d) for j, d in enumerate(dirs))
        out, tangent = _jvp(args, only)
        out = {k: v for k, v in out.items() if k in _GRADED}
        tangent = {k: v for k, v in tangent.items() if k in _GRADED}
        want = sum(np.sum(np.real(x * w))
                   for x, w in zip(_leaves(tangent), _weights(out)))
        got = np.sum(np.real(np.asarray(grads[i]) * dirs[i]))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_grad_closed_forms(x64):
    rng = np.random.RandomState(14)
    a = general(rng, 3, 3, dtype=np.complex128)
    logabsdet, norm2 = pyree.jit(lambda a: (
        pyree.grad(lambda a: jnp.linalg.slogdet(a).logabsdet)(a),
        pyree.grad(lambda a: jnp.linalg.norm(a) ** 2)(a)))(a)
    # d logabsdet = Re tr(a^-1 da): the gradient is a^-T (JAX gives the same).
    close(logabsdet, np.linalg.inv(a).T, np.complex128, C128)
    # |a|_F^2 = sum |a_ij|^2: the gradient is 2 conj(a) (as JAX's grad of |z|^2).
    close(norm2, 2 * np.conj(a), np.complex128, C128)
