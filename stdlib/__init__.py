"""pyree: JAX's programming model, compiled by IREE.

    import pyree as jax
    import pyree.numpy as jnp

    @jax.jit
    def f(x):
        return jnp.sin(x) ** 2 + jnp.cos(x) ** 2

Attributes load on first use, so that ``import pyree.runtime`` (what a deployed service
needs) imports neither the compiler nor the transpiler.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> module that defines it. Modules in _SUBMODULES are returned themselves.
_ATTRIBUTES = {
    "jit": "pyree._api", "make_ir": "pyree._api", "make_jaxpr": "pyree._api", "disable_jit": "pyree._api", "eval_shape": "pyree._api",
    "device_put": "pyree._api", "device_get": "pyree._api", "block_until_ready": "pyree._api",
    "ShapeDtypeStruct": "pyree._api", "Array": "pyree._api",
    "devices": "pyree._api", "local_devices": "pyree._api", "default_backend": "pyree._api",
    "device_count": "pyree._api", "live_arrays": "pyree._api",
    "local_device_count": "pyree._api", "process_index": "pyree._api",
    "process_count": "pyree._api", "process_indices": "pyree._api", "host_id": "pyree._api",
    "host_count": "pyree._api", "host_ids": "pyree._api", "default_device": "pyree._api",
    "typeof": "pyree._api", "clear_caches": "pyree._api", "effects_barrier": "pyree._api",
    "print_environment_info": "pyree._api", "named_call": "pyree._api",
    "named_scope": "pyree._api", "ensure_compile_time_eval": "pyree._api",
    "enable_x64": "pyree._api", "debug_nans": "pyree._api", "debug_infs": "pyree._api",
    "default_matmul_precision": "pyree._api", "numpy_rank_promotion": "pyree._api",
    "checkpoint": "pyree._checkpoint", "remat": "pyree._checkpoint",
    "checkpoint_policies": "pyree._checkpoint",
    "linear_transpose": "pyree._autodiff", "closure_convert": "pyree._autodiff",
    "grad": "pyree._autodiff", "value_and_grad": "pyree._autodiff", "jvp": "pyree._autodiff",
    "vjp": "pyree._autodiff", "linearize": "pyree._autodiff", "jacfwd": "pyree._autodiff",
    "jacrev": "pyree._autodiff", "hessian": "pyree._autodiff", "jacobian": "pyree._autodiff",
    "vmap": "pyree._vmap", "pmap": "pyree._pmap",
    "make_mesh": "pyree.sharding", "NamedSharding": "pyree.sharding", "P": "pyree.sharding",
    "set_mesh": "pyree.sharding",
    "export": "pyree._export", "export_functions": "pyree._export",
    "custom_jvp": "pyree._custom_derivatives", "custom_vjp": "pyree._custom_derivatives",
    "custom_gradient": "pyree._custom_derivatives",
    "tree_map": "pyree.tree_util", "tree_flatten": "pyree.tree_util",
    "tree_unflatten": "pyree.tree_util", "tree_leaves": "pyree.tree_util",
    "tree_structure": "pyree.tree_util",
    "pure_callback": "pyree.transpiler.families.host_callbacks", "float0": "pyree.dtypes",
}
_SUBMODULES = {"numpy", "lax", "nn", "tree_util", "tree", "errors", "config", "dtypes", "runtime",
               "core", "test_util", "random", "debug", "scipy", "example_libraries", "sharding",
               "transpiler", "ad_checkpoint", "distributed"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"pyree.{name}")
    module = _ATTRIBUTES.get(name)
    if module is None:
        raise AttributeError(f"module 'pyree' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ATTRIBUTES) | _SUBMODULES)
