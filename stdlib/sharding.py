"""``jax.sharding``: how arrays are placed on devices. pyree places each array whole on one
device (``SingleDeviceSharding``); meshes and partitioned arrays come with ``pmap``.

    x = jnp.ones(3)
    x.sharding            # SingleDeviceSharding(device=CpuDevice(id=0))
"""
from __future__ import annotations

from pyree.runtime.array import Shard, SingleDeviceSharding

__all__ = ["Shard", "SingleDeviceSharding"]
