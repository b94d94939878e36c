"""``pyree.ad_checkpoint``: JAX's ``jax.ad_checkpoint`` module (``checkpoint``, ``remat``,
``checkpoint_name``, ``checkpoint_policies`` and the policies' answers, ``print_saved_residuals``).

Example::

    from pyree.ad_checkpoint import checkpoint, checkpoint_name

    @checkpoint
    def layer(w, x):
        return checkpoint_name(jnp.tanh(x @ w), "hidden")
"""
from ._checkpoint import (Offloadable, Recompute, Saveable, checkpoint, checkpoint_name,
                          checkpoint_policies, print_saved_residuals, remat, saved_residuals)

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "print_saved_residuals", "remat", "saved_residuals"]
