"""``pyree.example_libraries.optimizers``: ``jax.example_libraries.optimizers``, first-order
optimizers written as pure functions over pytrees of parameters.

An optimizer is a triple ``(init_fun, update_fun, get_params)``:

* ``init_fun(params) -> opt_state`` builds the state from a pytree of initial parameters;
* ``update_fun(step, grads, opt_state) -> opt_state`` applies one step (``grads`` has the
  parameters' tree structure; ``step`` is the step number, a Python int or a traced integer);
* ``get_params(opt_state) -> params`` reads the parameters back.

``opt_state`` is an ``OptimizerState`` pytree, so it goes in and out of ``jit`` and
``lax.fori_loop``::

    import pyree as jax
    import pyree.numpy as jnp
    from pyree.example_libraries import optimizers

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init({"w": jnp.zeros(3)})

    @jax.jit
    def step(i, opt_state):
        loss = lambda p: jnp.sum((p["w"] - 1.0) ** 2)
        return opt_update(i, jax.grad(loss)(get_params(opt_state)), opt_state)

    for i in range(100):
        opt_state = step(i, opt_state)

Step sizes are numbers or schedules (functions of the step number, see ``exponential_decay``
and friends). New optimizers are written for a single array and lifted to pytrees by the
``optimizer`` decorator.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Sequence, Union

from pyree import numpy as jnp
from pyree.tree_util import (register_pytree_node, tree_flatten, tree_leaves, tree_map,
                             tree_unflatten)

__all__ = [
    "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "ParamsFn", "Schedule", "UpdateFn",
    "adagrad", "adam", "adamax", "clip_grads", "constant", "exponential_decay",
    "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov",
    "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop",
    "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state",
]

Step = Any          # the step number: a Python int or an integer array (traced under jit)
Schedule = Callable[[Step], Any]
Params = Any        # a pytree of arrays
State = Any         # one parameter's optimizer state: a pytree (tuple) of arrays
Updates = Any       # a pytree of gradients, shaped as Params
InitFn = Callable[[Params], "OptimizerState"]
UpdateFn = Callable[[Step, Updates, "OptimizerState"], "OptimizerState"]
ParamsFn = Callable[["OptimizerState"], Params]


class OptimizerState(NamedTuple):
    """The state of an optimizer over a pytree of parameters: ``packed_state`` holds, for each
    parameter leaf, the leaves of that parameter's own state; ``tree_def`` is the parameters'
    tree structure and ``subtree_defs`` the structure of each parameter's state. Only
    ``packed_state`` holds arrays: the structures are the pytree's static data.

    Example::

        opt_init, _, _ = optimizers.momentum(0.1, 0.9)
        state = opt_init((jnp.ones(2), jnp.ones(3)))
        len(tree_util.tree_leaves(state))     # 4: (x, velocity) for each parameter
    """

    packed_state: Any
    tree_def: Any
    subtree_defs: Any


register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     lambda aux, children: OptimizerState(children[0], *aux))


class Optimizer(NamedTuple):
    """What an optimizer factory returns; unpack it as ``opt_init, opt_update, get_params``.

    Example::

        opt = optimizers.sgd(0.1)
        opt.params_fn(opt.init_fn(jnp.ones(2)))   # [1., 1.]
    """

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _flatten_states(states: Sequence[State]) -> tuple[list, tuple]:
    """Each state's leaves and tree structure, as two sequences."""
    flat = [tree_flatten(s) for s in states]
    return [leaves for leaves, _ in flat], tuple(treedef for _, treedef in flat)


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]
              ) -> Callable[..., Optimizer]:
    """Decorator lifting an optimizer written for ONE array to pytrees of parameters.

    ``opt_maker(*hyperparameters)`` returns ``(init, update, get_params)`` with
    ``init(x0) -> state``, ``update(step, g, state) -> state`` and ``get_params(state) -> x``
    for a single array ``x``, where ``state`` is any pytree. The decorated factory returns an
    ``Optimizer`` whose functions map them over every leaf of the parameter pytree.

    Example::

        @optimizers.optimizer
        def sign_sgd(step_size):
            def init(x0): return x0
            def update(i, g, x): return x - step_size * jnp.sign(g)
            def get_params(x): return x
            return init, update, get_params

        opt_init, opt_update, get_params = sign_sgd(0.1)
    """
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Params) -> OptimizerState:
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i: Step, grad_tree: Updates, opt_state: OptimizerState
                        ) -> OptimizerState:
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(f"optimizer update: the gradient tree {grad_tree_def} does not "
                                f"match the parameter tree {tree} the optimizer was "
                                f"initialized with")
            states = [tree_unflatten(d, s) for d, s in zip(subtrees, states_flat)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
            new_flat, new_subtrees = _flatten_states(new_states)
            for old, new in zip(subtrees, new_subtrees):
                if new != old:
                    raise TypeError(f"optimizer update: a parameter's state changed structure "
                                    f"from {old} to {new}; update must return a state of "
                                    f"the structure init made")
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Params:
            states_flat, tree, subtrees = opt_state
            states = [tree_unflatten(d, s) for d, s in zip(subtrees, states_flat)]
            return tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# -- schedules -------------------------------------------------------------------------------------


def constant(step_size: float) -> Schedule:
    """The schedule ``i -> step_size``.

    Example::

        optimizers.constant(0.1)(1000)            # 0.1
    """
    def schedule(i: Step) -> Any:
        return step_size
    return schedule


def exponential_decay(step_size: float, decay_steps: float, decay_rate: float) -> Schedule:
    """``i -> step_size * decay_rate ** (i / decay_steps)``.

    Example::

        optimizers.exponential_decay(1.0, 10, 0.5)(20)   # 0.25
    """
    def schedule(i: Step) -> Any:
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size: float, decay_steps: float, decay_rate: float,
                       staircase: bool = False) -> Schedule:
    """``i -> step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase`` the ratio
    ``i / decay_steps`` is floored, so the step size drops every ``decay_steps`` steps.

    Example::

        optimizers.inverse_time_decay(1.0, 10, 1.0, staircase=True)(15)   # 0.5
    """
    if staircase:
        def schedule(i: Step) -> Any:
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:
        def schedule(i: Step) -> Any:
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size: float, decay_steps: float, final_step_size: float,
                     power: float = 1.0) -> Schedule:
    """From ``step_size`` at step 0 to ``final_step_size`` at ``decay_steps`` (and after)
    along ``(1 - i / decay_steps) ** power``.

    Example::

        optimizers.polynomial_decay(1.0, 10, 0.0)(5)     # 0.5
    """
    def schedule(step_num: Step) -> Any:
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[0]`` up to ``boundaries[0]`` (included), then ``values[1]`` up to
    ``boundaries[1]``, ..., ``values[-1]`` after the last boundary; ``values`` has one more
    entry than ``boundaries``.

    Example::

        sched = optimizers.piecewise_constant([100, 200], [1.0, 0.1, 0.01])
        sched(150)                                      # 0.1
    """
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("piecewise_constant: boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("piecewise_constant: boundaries must have one entry fewer than values")

    def schedule(i: Step) -> Any:
        return values[jnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule: Union[float, Schedule]) -> Schedule:
    """A schedule from a schedule (returned as is) or a scalar (made ``constant``).

    Example::

        optimizers.make_schedule(0.1)(7)                # 0.1
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"a step size must be a scalar or a schedule (a function of the step "
                    f"number), got {type(scalar_or_schedule).__name__}")


# -- optimizers ------------------------------------------------------------------------------------


@optimizer
def sgd(step_size: Union[float, Schedule]) -> tuple[Callable, Callable, Callable]:
    """Stochastic gradient descent: ``x -= step_size(i) * g``. The state is ``x``.

    Example::

        opt_init, opt_update, get_params = optimizers.sgd(0.1)
        get_params(opt_update(0, jnp.ones(2), opt_init(jnp.zeros(2))))   # [-0.1, -0.1]
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0

    def update(i: Step, g: Any, x: Any) -> Any:
        return x - step_size(i) * g

    def get_params(x: Any) -> Any:
        return x

    return init, update, get_params


@optimizer
def momentum(step_size: Union[float, Schedule], mass: float
             ) -> tuple[Callable, Callable, Callable]:
    """Heavy-ball momentum: ``v = mass * v + g; x -= step_size(i) * v`` (``v`` starts at 0).

    Example::

        opt_init, opt_update, get_params = optimizers.momentum(0.1, mass=0.9)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


@optimizer
def nesterov(step_size: Union[float, Schedule], mass: float
             ) -> tuple[Callable, Callable, Callable]:
    """Nesterov momentum: ``v = mass * v + g; x -= step_size(i) * (mass * v + g)``.

    Example::

        opt_init, opt_update, get_params = optimizers.nesterov(0.1, mass=0.9)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


@optimizer
def adagrad(step_size: Union[float, Schedule], momentum: float = 0.9
            ) -> tuple[Callable, Callable, Callable]:
    """Adagrad with momentum: ``G += g ** 2; m = (1 - momentum) * g / sqrt(G) + momentum * m;
    x -= step_size(i) * m`` (entries with ``G == 0`` get no step rather than a NaN).

    Example::

        opt_init, opt_update, get_params = optimizers.adagrad(0.1)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        # A parameter that has only ever seen zero gradients has G == 0: it must not move.
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop(step_size: Union[float, Schedule], gamma: float = 0.9, eps: float = 1e-8
            ) -> tuple[Callable, Callable, Callable]:
    """RMSProp: ``a = gamma * a + (1 - gamma) * g ** 2; x -= step_size(i) * g / sqrt(a + eps)``.

    Example::

        opt_init, opt_update, get_params = optimizers.rmsprop(1e-3)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop_momentum(step_size: Union[float, Schedule], gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """RMSProp with momentum: ``a = gamma * a + (1 - gamma) * g ** 2;
    m = momentum * m + step_size(i) * g / sqrt(a + eps); x -= m``.

    Example::

        opt_init, opt_update, get_params = optimizers.rmsprop_momentum(1e-3)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


@optimizer
def adam(step_size: Union[float, Schedule], b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> tuple[Callable, Callable, Callable]:
    """Adam (Kingma & Ba): moving averages ``m`` of ``g`` and ``v`` of ``g ** 2`` with
    rates ``b1``, ``b2``, bias-corrected by ``1 - b ** (i + 1)``;
    ``x -= step_size(i) * m_hat / (sqrt(v_hat) + eps)``.

    Example::

        opt_init, opt_update, get_params = optimizers.adam(1e-3)
        get_params(opt_update(0, jnp.ones(2), opt_init(jnp.zeros(2))))   # [-1e-3, -1e-3]
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        # b ** (i + 1) in the moments' dtype: with a traced integer step, a float64 power
        # would widen the update under x64 (and b as a Python float rounds differently).
        m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


@optimizer
def adamax(step_size: Union[float, Schedule], b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> tuple[Callable, Callable, Callable]:
    """AdaMax (Adam with the infinity norm): ``m = b1 * m + (1 - b1) * g;
    u = max(b2 * u, |g|); x -= step_size(i) / (1 - b1 ** (i + 1)) * m / (u + eps)``.

    Example::

        opt_init, opt_update, get_params = optimizers.adamax(2e-3)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Step, g: Any, state: Any) -> Any:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    def get_params(state: Any) -> Any:
        return state[0]

    return init, update, get_params


class _SM3State(NamedTuple):
    """SM3's state for one parameter. The parameter's original shape is static data rather
    than a leaf, so that it stays a Python tuple under ``jit``."""

    x: Any
    m: Any
    vs: list
    x_shape: tuple


register_pytree_node(_SM3State, lambda s: ((s.x, s.m, s.vs), s.x_shape),
                     lambda shape, children: _SM3State(*children, shape))


@optimizer
def sm3(step_size: Union[float, Schedule], momentum: float = 0.9
        ) -> tuple[Callable, Callable, Callable]:
    """SM3 (Anil et al., "Memory-Efficient Adaptive Optimization"): Adagrad whose accumulator
    for an ``(n1, ..., nk)`` parameter is a cover of k vectors (one per axis) instead of a full
    array. Each step takes ``acc = min over axes of the broadcast vectors + g ** 2``, moves
    ``m = (1 - momentum) * g / sqrt(acc) + momentum * m; x -= step_size(i) * m``, and keeps the
    maximum of ``acc`` along every other axis in each vector.

    Example::

        opt_init, opt_update, get_params = optimizers.sm3(0.1)
    """
    step_size = make_schedule(step_size)

    def init(x0: Any) -> Any:
        x0 = jnp.asarray(x0)
        x = jnp.atleast_1d(x0)  # a scalar gets one accumulator entry
        vs = [jnp.zeros(n, x.dtype) for n in x.shape]
        return _SM3State(x, jnp.zeros_like(x), vs, tuple(x0.shape))

    def update(i: Step, g: Any, state: _SM3State) -> _SM3State:
        x, m, vs, x_shape = state
        g = jnp.reshape(g, x.shape)
        ndim = x.ndim
        # The vector of axis j, broadcast along the other axes.
        covers = [jnp.reshape(v, tuple(-1 if a == j else 1 for a in range(ndim)))
                  for j, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, covers) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0.0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(ndim) if a != j)) if ndim > 1
              else accum for j in range(ndim)]
        return _SM3State(x, m, vs, x_shape)

    def get_params(state: _SM3State) -> Any:
        return jnp.reshape(state.x, state.x_shape)

    return init, update, get_params


# -- utilities -------------------------------------------------------------------------------------


def l2_norm(tree: Any) -> Any:
    """The Euclidean norm of all the leaves of a pytree taken together.

    Example::

        optimizers.l2_norm((jnp.array([3.0]), {"b": jnp.array([4.0])}))   # 5.0
    """
    leaves = tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: float) -> Any:
    """``grad_tree`` scaled down so that its ``l2_norm`` is at most ``max_norm`` (unchanged if
    it already is).

    Example::

        optimizers.clip_grads(jnp.array([3.0, 4.0]), 1.0)   # [0.6, 0.8]
    """
    norm = l2_norm(grad_tree)

    def normalize(g: Any) -> Any:
        return jnp.where(norm < max_norm, g, g * (max_norm / norm))

    return tree_map(normalize, grad_tree)


class JoinPoint:
    """Marks, in ``unpack_optimizer_state``'s result, where the parameter tree ends and one
    parameter's state begins (a leaf holding that state as ``subtree``).

    Example::

        JoinPoint((jnp.ones(2), jnp.zeros(2))).subtree[0]     # [1., 1.]
    """

    def __init__(self, subtree: Any):
        self.subtree = subtree

    def __iter__(self):  # iterable like the containers around it; yields the state once
        yield self.subtree

    def __repr__(self) -> str:
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """``opt_state`` as a pytree of ordinary containers, for saving (pickle, ``np.savez``):
    the parameters' tree with a ``JoinPoint`` holding each parameter's state at each leaf.

    Example::

        marked = optimizers.unpack_optimizer_state(opt_state)
        opt_state = optimizers.pack_optimizer_state(marked)    # the same state back
    """
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tree_unflatten(d, s) for d, s in zip(subtree_defs, states_flat)]
    return tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of ``unpack_optimizer_state``.

    Example::

        opt_state = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(s))
    """
    sentinels, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state expects the result of unpack_optimizer_state: "
                        "a pytree whose leaves are all JoinPoints")
    states_flat, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
