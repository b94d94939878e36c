"""``jax.sharding``: how arrays are placed on devices. Most arrays are whole on one device
(``SingleDeviceSharding``); ``pmap`` results are split along one axis over several devices
(``PmapSharding``, on a ``ShardedArray``).

    x = jnp.ones(3)
    x.sharding            # SingleDeviceSharding(device=CpuDevice(id=0))
    pyree.pmap(lambda v: v * 2)(np.ones((1, 3))).sharding   # PmapSharding(devices=[...], ...)
"""
from __future__ import annotations

from pyree.runtime.array import PmapSharding, Shard, ShardedArray, SingleDeviceSharding

__all__ = ["PmapSharding", "Shard", "ShardedArray", "SingleDeviceSharding"]
