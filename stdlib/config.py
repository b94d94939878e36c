"""Global settings, read by every layer at the moment they matter.

This module is the settings object: each option has a default, an environment variable that
overrides the default when pyree is imported, and ``update`` for changes at run time::

    import pyree
    pyree.config.update("enable_x64", True)
    pyree.config.enable_x64        # -> True
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

# name -> (default, environment variable, parser of the environment value; None = boolean)
_OPTIONS: dict[str, tuple[Any, str, Callable[[str], Any] | None]] = {
    "enable_x64": (False, "PYREE_ENABLE_X64", None),
    "debug_nans": (False, "PYREE_DEBUG_NANS", None),
    "debug_infs": (False, "PYREE_DEBUG_INFS", None),
    # Where compiled modules are kept between processes; None = the user's cache directory.
    "cache_dir": (None, "PYREE_CACHE_DIR", str),
    # False switches the on-disk compilation cache off (the in-memory cache stays).
    "disk_cache": (True, "PYREE_DISK_CACHE", None),
    "platform": ("cpu", "PYREE_PLATFORM", str),
    # How many CPU devices ``pyree.devices("cpu")`` has (each its own IREE device; like JAX's
    # jax_num_cpu_devices, for programs and tests that place arrays on several devices).
    "num_cpu_devices": (1, "PYREE_NUM_CPU_DEVICES", int),
}


def _parse_bool(text: str) -> bool:
    return text.strip().lower() not in ("", "0", "false", "no", "off")


def _initial_values() -> dict[str, Any]:
    values = {}
    for name, (default, env, parse) in _OPTIONS.items():
        value = default
        if env in os.environ:
            value = (parse or _parse_bool)(os.environ[env])
        values[name] = value
    return values


_values: dict[str, Any] = _initial_values()
_lock = threading.Lock()
_listeners: list[Callable[[str, Any], None]] = []


def update(name: str, value: Any) -> None:
    """Set one option.

    Example::

        pyree.config.update("debug_nans", True)
    """
    if name not in _OPTIONS:
        known = ", ".join(sorted(_OPTIONS))
        raise AttributeError(f"pyree.config has no option {name!r} (options: {known})")
    with _lock:
        _values[name] = value
    for listener in list(_listeners):
        listener(name, value)


def on_update(listener: Callable[[str, Any], None]) -> None:
    """Call ``listener(name, value)`` after every ``update`` (used to drop stale caches)."""
    _listeners.append(listener)


def __getattr__(name: str) -> Any:
    try:
        return _values[name]
    except KeyError:
        raise AttributeError(f"pyree.config has no option {name!r}") from None
