"""Corpus: a variational autoencoder step, written as JAX's examples/mnist_vae.py writes it:
stax encoder with ``FanOut(2)`` into a mean head and a softplus variance head, a stax decoder
producing Bernoulli logits, the reparameterisation ``mu + sqrt(sigmasq) * random.normal(rng,
mu.shape)``, the ELBO as Bernoulli log-likelihood minus the Gaussian KL, images binarised with
``random.bernoulli``, and a jitted momentum step on ``-elbo / batch_size``.

Checked: the ELBO (jitted and eager) against a float64 NumPy forward pass fed the same noise,
drawn again with ``random.normal`` on the same key and converted to NumPy; the gradient along
unit directions against central differences of the float64 ELBO; one momentum step equals
``params - step_size * grad``; a few jitted steps raise the ELBO at a fixed key."""
import numpy as np

import pyree as jax
import pyree.numpy as jnp
from pyree import random
from pyree.example_libraries import optimizers, stax
from pyree.tree_util import tree_flatten, tree_leaves, tree_unflatten

BATCH, IMAGE, HIDDEN, LATENT = 16, 64, 32, 4


def gaussian_kl(mu, sigmasq):
    """KL divergence from a diagonal Gaussian to the standard Gaussian."""
    return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu ** 2. - sigmasq)


def gaussian_sample(rng, mu, sigmasq):
    """Sample a diagonal Gaussian."""
    return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)


def bernoulli_logpdf(logits, x):
    """Bernoulli log pdf of data x given logits."""
    return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))


encoder_init, encode = stax.serial(
    stax.Dense(HIDDEN), stax.Softplus,
    stax.FanOut(2),
    stax.parallel(stax.Dense(LATENT), stax.serial(stax.Dense(LATENT), stax.Softplus)),
)

decoder_init, decode = stax.serial(
    stax.Dense(HIDDEN), stax.Softplus, stax.Dense(IMAGE),
)


def elbo(rng, params, images):
    """Monte Carlo estimate of the negative free energy."""
    enc_params, dec_params = params
    mu_z, sigmasq_z = encode(enc_params, images)
    logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
    return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)


# ---- NumPy reference ---------------------------------------------------------------------------

def np_elbo(params, images, eps):
    f64 = lambda a: np.asarray(a, np.float64)
    softplus = lambda x: np.logaddexp(0.0, x)
    (enc, dec) = params
    (w1, b1), _, _, ((wm, bm), ((ws, bs), _)) = enc
    (w2, b2), _, (w3, b3) = dec
    h = softplus(images @ f64(w1) + f64(b1))
    mu = h @ f64(wm) + f64(bm)
    sigmasq = softplus(h @ f64(ws) + f64(bs))
    z = mu + np.sqrt(sigmasq) * eps
    logits = softplus(z @ f64(w2) + f64(b2)) @ f64(w3) + f64(b3)
    loglik = -np.sum(np.logaddexp(0.0, np.where(images > 0, -1.0, 1.0) * logits))
    kl = -0.5 * np.sum(1.0 + np.log(sigmasq) - mu ** 2 - sigmasq)
    return loglik - kl


def binarized_digits(key):
    from sklearn.datasets import load_digits
    probs = (load_digits().data[:BATCH] / 16.0).astype(np.float32)
    images = random.bernoulli(key, probs)
    images_np = np.asarray(images)
    assert images_np.dtype == np.bool_ and images_np.shape == probs.shape
    # pixels that are always off stay off, always-on pixels stay on
    assert not images_np[probs == 0].any() and images_np[probs == 1].all()
    return jnp.asarray(images, jnp.float32), probs


def test_vae_elbo_gradient_and_step():
    enc_rng, dec_rng, data_rng, elbo_rng = random.split(random.PRNGKey(0), 4)
    images, _ = binarized_digits(data_rng)
    _, init_encoder_params = encoder_init(enc_rng, (BATCH, IMAGE))
    _, init_decoder_params = decoder_init(dec_rng, (BATCH, LATENT))
    params = (init_encoder_params, init_decoder_params)
    images_np = np.asarray(images, np.float64)

    # the ELBO against NumPy with the same noise
    eps = np.asarray(random.normal(elbo_rng, (BATCH, LATENT)), np.float64)
    want = np_elbo(params, images_np, eps)
    got_jit = float(jax.jit(elbo)(elbo_rng, params, images))
    got_eager = float(elbo(elbo_rng, params, images))
    np.testing.assert_allclose(got_jit, want, rtol=1e-5)
    np.testing.assert_allclose(got_eager, want, rtol=1e-5)

    step_size = 1e-3
    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=0.9)

    @jax.jit
    def update(i, rng, opt_state, images):
        loss = lambda params: -elbo(rng, params, images) / BATCH
        value, g = jax.value_and_grad(loss)(get_params(opt_state))
        return value, g, opt_update(i, g, opt_state)

    opt_state = opt_init(params)
    value, g, opt_state = update(0, elbo_rng, opt_state, images)
    np.testing.assert_allclose(float(value), -want / BATCH, rtol=1e-5)
    assert tree_flatten(g)[1] == tree_flatten(params)[1]
    # momentum's first step is a plain gradient step
    for p, dp, new in zip(tree_leaves(params), tree_leaves(g), tree_leaves(get_params(opt_state))):
        np.testing.assert_allclose(np.asarray(new), np.asarray(p) - step_size * np.asarray(dp),
                                   rtol=1e-6, atol=1e-8)

    # the gradient along unit directions against central differences of the float64 ELBO
    leaves, treedef = tree_flatten(params)
    leaves64 = [np.asarray(l, np.float64) for l in leaves]
    rs = np.random.RandomState(1)
    for _ in range(2):
        d = [rs.randn(*l.shape) for l in leaves64]
        norm = np.sqrt(sum(np.sum(di ** 2) for di in d))
        d = [di / norm for di in d]
        at = lambda s: tree_unflatten(treedef, [l + s * di for l, di in zip(leaves64, d)])
        h = 1e-5
        fd = -(np_elbo(at(h), images_np, eps) - np_elbo(at(-h), images_np, eps)) / (2 * h) / BATCH
        analytic = sum(float(np.vdot(np.asarray(gi, np.float64), di))
                       for gi, di in zip(tree_leaves(g), d))
        np.testing.assert_allclose(analytic, fd, rtol=1e-3, atol=1e-5)

    # a few more steps (fresh noise each step) raise the ELBO measured at a fixed key
    eval_elbo = jax.jit(elbo)
    before = float(eval_elbo(elbo_rng, get_params(opt_state), images))
    for i in range(1, 40):
        _, _, opt_state = update(i, random.fold_in(elbo_rng, i), opt_state, images)
    after = float(eval_elbo(elbo_rng, get_params(opt_state), images))
    assert after > before + 0.1 * abs(before), (before, after)
