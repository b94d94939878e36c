"""A small CNN with stax and optimizers.adam (the style of JAX's mnist_classifier)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import jit, grad, random
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu

init_random_params, predict = stax.serial(
    Conv(8, (3, 3), padding="SAME"), Relu, MaxPool((2, 2)),
    Conv(16, (3, 3), padding="SAME"), Relu, MaxPool((2, 2)),
    Flatten, Dense(32), Relu, Dense(10), LogSoftmax)


def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))


rng = np.random.default_rng(0)
images = rng.normal(size=(128, 16, 16, 1)).astype(np.float32)
labels = np.eye(10, dtype=np.float32)[(images[:, :4, :4, 0].sum((1, 2)) > 0).astype(int) * 3]
opt_init, opt_update, get_params = optimizers.adam(1e-3)
_, params = init_random_params(random.PRNGKey(0), (-1, 16, 16, 1))
opt_state = opt_init(params)


@jit
def update(i, opt_state, batch):
    return opt_update(i, grad(loss)(get_params(opt_state), batch), opt_state)


for i in range(8):
    batch = (images[i * 16:(i + 1) * 16], labels[i * 16:(i + 1) * 16])
    opt_state = update(i, opt_state, batch)
print("loss", float(loss(get_params(opt_state), (images, labels))))
