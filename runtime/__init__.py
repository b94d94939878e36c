"""pyree's runtime: devices, Arrays, compiled executables and the compilation cache.

It needs only NumPy and IREE's runtime (``iree.compiler`` is imported only to compile), and it
never imports ``pyree.transpiler``: a service that runs prebuilt modules needs nothing more.
"""
from .aval import ShapedArray
from .array import Array, device_put_numpy
from .device import Device, default_device, devices, live_arrays
from .executable import Executable
from .loader import InvalidModuleError, LoadedFunction, LoadedModule, load, read_signatures

__all__ = ["Array", "Device", "Executable", "InvalidModuleError", "LoadedFunction", "LoadedModule",
           "ShapedArray", "default_device", "device_put_numpy", "devices", "live_arrays", "load",
           "read_signatures"]
