"""Host callbacks from compiled code, through IREE's trace sink.

A compiled program hands tensors to the host with ``flow.tensor.trace "<key>"``; the HAL module
of every device is created with a debug sink that passes them, as NumPy arrays, to the handler
registered under that key. Handlers run on IREE's threads, in program order.
"""
from __future__ import annotations

import sys
import threading
import traceback
from typing import Callable

import numpy as np

from .device import iree_runtime

_handlers: dict[str, Callable[[list], None]] = {}
_lock = threading.Lock()
_sink = None


def register(key: str, handler: Callable[[list], None]) -> None:
    """Call ``handler(arrays)`` whenever compiled code traces tensors under ``key``."""
    with _lock:
        _handlers[key] = handler


def _to_numpy(buffer_view) -> np.ndarray:
    rt = iree_runtime()
    dtype = np.dtype(rt.HalElementType.map_to_dtype(buffer_view.element_type))
    shape = list(buffer_view.shape)
    if 0 in shape:
        return np.zeros(shape, dtype)
    mapping = buffer_view.map()
    value = np.array(mapping.asarray(shape, dtype), copy=True)
    del mapping
    return value


def _dispatch(key: str, buffer_views: list) -> None:
    handler = _handlers.get(key)
    try:
        arrays = [_to_numpy(bv) for bv in buffer_views]
        if handler is None:
            print(f"[trace {key}]", *arrays, file=sys.stderr)
        else:
            handler(arrays)
    except Exception:  # an error in a handler must not take the program down
        traceback.print_exc()


def debug_sink():
    """The process's one ``HalModuleDebugSink`` (given to every HAL module pyree creates)."""
    global _sink
    if _sink is None:
        with _lock:
            if _sink is None:
                _sink = iree_runtime().HalModuleDebugSink(_dispatch)
    return _sink
