"""A VAE training step: reparameterized ELBO, stax and optimizers (the style of JAX's mnist_vae)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import jit, grad, random, lax
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, FanOut, Relu, Softplus


def gaussian_kl(mu, sigmasq):
    return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu ** 2. - sigmasq)


def gaussian_sample(rng, mu, sigmasq):
    return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)


def bernoulli_logpdf(logits, x):
    return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))


encoder_init, encode = stax.serial(
    Dense(64), Relu, Dense(64), Relu, FanOut(2), stax.parallel(Dense(8), stax.serial(Dense(8), Softplus)))
decoder_init, decode = stax.serial(Dense(64), Relu, Dense(64), Relu, Dense(49))


def elbo(rng, params, images):
    enc_params, dec_params = params
    mu_z, sigmasq_z = encode(enc_params, images)
    logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
    return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)


def batch_elbo(rng, params, images):
    rngs = random.split(rng, images.shape[0])
    return jnp.mean(jax.vmap(elbo, in_axes=(0, None, 0))(rngs, params, images))


rng = np.random.default_rng(0)
data = (rng.uniform(size=(64, 49)) > 0.5).astype(np.float32)
enc_key, dec_key = random.split(random.PRNGKey(0))
_, enc_params = encoder_init(enc_key, (32, 49))
_, dec_params = decoder_init(dec_key, (32, 8))
opt_init, opt_update, get_params = optimizers.momentum(1e-3, 0.9)
opt_state = opt_init((enc_params, dec_params))


@jit
def run_epoch(rng, opt_state):
    def body_fun(i, opt_state):
        elbo_rng, data_rng = random.split(random.fold_in(rng, i))
        batch = lax.dynamic_slice_in_dim(data, (i % 2) * 32, 32)
        g = grad(lambda p: -batch_elbo(elbo_rng, p, batch))(get_params(opt_state))
        return opt_update(i, g, opt_state)
    return lax.fori_loop(0, 4, body_fun, opt_state)


for epoch in range(2):
    opt_state = run_epoch(random.PRNGKey(epoch), opt_state)
print("elbo", float(batch_elbo(random.PRNGKey(9), get_params(opt_state), data[:32])))
