"""What a Vulkan device can do, read from the Vulkan loader, and the IREE target that fits it.

IREE's Vulkan runtime does not say which shader features its device has, and its compiler's
default target (``vp_android_baseline_2022``: 32-bit arithmetic and storage only) gave wrong
values or compile failures on Mesa's lavapipe where a target naming the device compiled and ran
right (int16 ``x * 3 + 1`` gave 2032 for 13; float16 and float64 failed to compile; with
``--iree-vulkan-target=llvmpipe`` all three matched NumPy). So pyree asks the Vulkan loader
itself (``libvulkan.so.1`` through ctypes: one instance, created and destroyed here) for the
device's name, vendor and shader features, picks the IREE target from them, and refuses
programs whose types the device lacks, naming the missing feature (``missing_feature``).
"""
from __future__ import annotations

import ctypes
import dataclasses
import threading
from typing import Optional

import numpy as np

# PCI vendor ids (VkPhysicalDeviceProperties.vendorID).
NVIDIA_VENDOR_ID = 0x10DE

# IREE's default Vulkan target: the lowest common denominator of Android 2022 devices.
IREE_DEFAULT_VULKAN_TARGET = "vp_android_baseline_2022"


@dataclasses.dataclass(frozen=True)
class VulkanDeviceInfo:
    """A Vulkan physical device as its driver describes it. The boolean fields are Vulkan's
    feature names (``shaderFloat64`` ...), true where the device has the feature.

    Example::

        info = device_info()
        info.name, info.shader_float64     # ('llvmpipe (LLVM 15.0.6, 256 bits)', True)
    """
    name: str
    vendor_id: int
    device_type: int            # VkPhysicalDeviceType: 1 integrated, 2 discrete, 4 CPU
    api_version: tuple[int, int, int]
    shader_float64: bool
    shader_int64: bool
    shader_int16: bool
    shader_float16: bool
    shader_int8: bool
    storage_buffer_16bit_access: bool
    storage_buffer_8bit_access: bool
    cooperative_matrix: bool    # VK_KHR_cooperative_matrix (tensor cores, f16 products)


# Structure types and layouts from the Vulkan headers (vulkan_core.h).
_VK_STRUCTURE_TYPE_APPLICATION_INFO = 0
_VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 = 1000059000
_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES = 1000083000
_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES = 1000082000
_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES = 1000177000
# Indices of VkPhysicalDeviceFeatures' members (55 VkBool32s in the header's order).
_FEATURE_SHADER_FLOAT64, _FEATURE_SHADER_INT64, _FEATURE_SHADER_INT16 = 39, 40, 41
_VK_MAX_PHYSICAL_DEVICE_NAME_SIZE = 256
_VK_MAX_EXTENSION_NAME_SIZE = 256


class _ApplicationInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("pApplicationName", ctypes.c_char_p), ("applicationVersion", ctypes.c_uint32),
                ("pEngineName", ctypes.c_char_p), ("engineVersion", ctypes.c_uint32),
                ("apiVersion", ctypes.c_uint32)]


class _InstanceCreateInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                ("pApplicationInfo", ctypes.POINTER(_ApplicationInfo)),
                ("enabledLayerCount", ctypes.c_uint32), ("ppEnabledLayerNames", ctypes.c_void_p),
                ("enabledExtensionCount", ctypes.c_uint32),
                ("ppEnabledExtensionNames", ctypes.c_void_p)]


class _FeatureChain(ctypes.Structure):
    """The head of any ``VkPhysicalDevice*Features`` structure, followed by its VkBool32s."""
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32 * 64)]


def _make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


def query_vulkan_devices() -> list[VulkanDeviceInfo]:
    """Every Vulkan physical device the loader finds, in its order (empty without a loader or
    a driver).

    Example::

        [d.name for d in query_vulkan_devices()]   # ['llvmpipe (LLVM 15.0.6, 256 bits)']
    """
    try:
        vk = ctypes.CDLL("libvulkan.so.1")
    except OSError:
        return []
    vk.vkGetInstanceProcAddr.restype = ctypes.c_void_p
    # Vulkan 1.1: vkGetPhysicalDeviceFeatures2 and the feature structures above are core.
    app = _ApplicationInfo(_VK_STRUCTURE_TYPE_APPLICATION_INFO, None, b"pyree", 0, b"pyree", 0,
                           _make_version(1, 1))
    create = _InstanceCreateInfo(_VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, None, 0,
                                 ctypes.pointer(app), 0, None, 0, None)
    instance = ctypes.c_void_p()
    if vk.vkCreateInstance(ctypes.byref(create), None, ctypes.byref(instance)) != 0:
        return []
    try:
        count = ctypes.c_uint32()
        if vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None) != 0:
            return []
        handles = (ctypes.c_void_p * count.value)()
        if vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), handles) != 0:
            return []
        return [_describe(vk, ctypes.c_void_p(h)) for h in handles[:count.value]]
    finally:
        vk.vkDestroyInstance(instance, None)


def _describe(vk, handle) -> VulkanDeviceInfo:
    # VkPhysicalDeviceProperties: apiVersion, driverVersion, vendorID, deviceID, deviceType
    # (uint32 each), then deviceName[256]; the rest (limits ...) is not read. 1 KiB holds it.
    properties = (ctypes.c_uint32 * 256)()
    vk.vkGetPhysicalDeviceProperties(handle, properties)
    raw = bytes(properties)
    api, vendor, kind = properties[0], properties[2], properties[4]
    name = raw[20:20 + _VK_MAX_PHYSICAL_DEVICE_NAME_SIZE].split(b"\0")[0].decode(errors="replace")

    storage16 = _FeatureChain(_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, None)
    float16_int8 = _FeatureChain(_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
                                 ctypes.cast(ctypes.pointer(storage16), ctypes.c_void_p))
    storage8 = _FeatureChain(_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                             ctypes.cast(ctypes.pointer(float16_int8), ctypes.c_void_p))
    features2 = _FeatureChain(_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                              ctypes.cast(ctypes.pointer(storage8), ctypes.c_void_p))
    vk.vkGetPhysicalDeviceFeatures2(handle, ctypes.byref(features2))
    core = features2.flags   # VkPhysicalDeviceFeatures, embedded

    extensions = set()
    count = ctypes.c_uint32()
    if vk.vkEnumerateDeviceExtensionProperties(handle, None, ctypes.byref(count), None) == 0:
        # VkExtensionProperties: extensionName[256], specVersion (uint32).
        size = _VK_MAX_EXTENSION_NAME_SIZE + 4
        table = (ctypes.c_ubyte * (size * count.value))()
        if vk.vkEnumerateDeviceExtensionProperties(handle, None, ctypes.byref(count), table) == 0:
            data = bytes(table)
            extensions = {data[i * size:i * size + _VK_MAX_EXTENSION_NAME_SIZE].split(b"\0")[0]
                          .decode(errors="replace") for i in range(count.value)}
    return VulkanDeviceInfo(
        name=name, vendor_id=vendor, device_type=kind,
        api_version=(api >> 22 & 0x7F, api >> 12 & 0x3FF, api & 0xFFF),
        shader_float64=bool(core[_FEATURE_SHADER_FLOAT64]),
        shader_int64=bool(core[_FEATURE_SHADER_INT64]),
        shader_int16=bool(core[_FEATURE_SHADER_INT16]),
        shader_float16=bool(float16_int8.flags[0]), shader_int8=bool(float16_int8.flags[1]),
        storage_buffer_16bit_access=bool(storage16.flags[0]),
        storage_buffer_8bit_access=bool(storage8.flags[0]),
        cooperative_matrix="VK_KHR_cooperative_matrix" in extensions)


_info_lock = threading.Lock()
_infos: dict[str, Optional[VulkanDeviceInfo]] = {}


def device_info(iree_name: str = "") -> Optional[VulkanDeviceInfo]:
    """The Vulkan loader's description of the device IREE calls ``iree_name`` (IREE names a
    device "<deviceName> (<driver info>)"), or of the first device where no name is given or
    none matches; None without a Vulkan loader or device. Read once per process.

    Example::

        device_info("llvmpipe (LLVM 15.0.6, 256 bits) (llvmpipe Mesa 22.3.6 (LLVM 15.0.6))")
    """
    with _info_lock:
        if iree_name not in _infos:
            found = query_vulkan_devices()
            named = [d for d in found if iree_name and iree_name.startswith(d.name)]
            _infos[iree_name] = (named or found or [None])[0]
        return _infos[iree_name]


def vulkan_target_for(info: Optional[VulkanDeviceInfo],
                      cuda_capability: Optional[tuple[int, int]] = None) -> str:
    """The IREE ``--iree-vulkan-target`` for a device.

    Mesa's lavapipe (a CPU driver; its devices are named "llvmpipe ...") gets IREE's
    ``llvmpipe`` target (64-bit and 16-bit types, subgroup operations). An NVIDIA GPU gets the
    CUDA architecture of its compute capability (``cuda_capability``, read from the CUDA
    driver; the same table as ``device.cuda_target_for``: Hopper and later take ``sm_80``,
    whose code uses cooperative matrices for float16 products). Anything else, or an NVIDIA
    GPU without a CUDA driver to ask, gets IREE's default, ``vp_android_baseline_2022``.

    Example::

        vulkan_target_for(device_info())   # "llvmpipe" on lavapipe
    """
    if info is None:
        return IREE_DEFAULT_VULKAN_TARGET
    if info.name.startswith("llvmpipe"):
        return "llvmpipe"
    if info.vendor_id == NVIDIA_VENDOR_ID and cuda_capability is not None:
        from .device import cuda_target_for
        return cuda_target_for(cuda_capability)
    return IREE_DEFAULT_VULKAN_TARGET


# Per IREE Vulkan target: the element types it cannot compile or computes wrong (measured on
# lavapipe with IREE 3.13, see the module docstring), each with what it lacks.
_TARGET_LACKS = {
    IREE_DEFAULT_VULKAN_TARGET: {
        "float64": "64-bit floats", "complex128": "64-bit floats",
        "float16": "16-bit floats", "bfloat16": "16-bit storage",
        "int16": "16-bit integers", "uint16": "16-bit integers"},
}


def missing_feature(dtype, info: Optional[VulkanDeviceInfo], target: str) -> Optional[str]:
    """Why a program with values of ``dtype`` cannot run on the Vulkan device ``info`` compiled
    for IREE target ``target``: a phrase naming the device feature it lacks (Vulkan's name) or
    the target's limit, or None where it can.

    Example::

        missing_feature(np.float64, info, "llvmpipe")   # None on lavapipe (it has shaderFloat64)
    """
    dtype = np.dtype(dtype)
    name = dtype.name
    needs = {"float64": ("shader_float64", "shaderFloat64"),
             "complex128": ("shader_float64", "shaderFloat64"),
             "int64": ("shader_int64", "shaderInt64"), "uint64": ("shader_int64", "shaderInt64"),
             "int16": ("shader_int16", "shaderInt16"), "uint16": ("shader_int16", "shaderInt16"),
             "float16": ("shader_float16", "shaderFloat16"),
             "int8": ("shader_int8", "shaderInt8"), "uint8": ("shader_int8", "shaderInt8")}
    lacking = _TARGET_LACKS.get(target, {}).get(name)
    if lacking is not None:
        return (f"IREE's Vulkan target {target!r} has no {lacking} (set "
                f"pyree.config.vulkan_target / PYREE_VULKAN_TARGET to the device's)")
    if info is None or name not in needs:
        return None
    # int64 without shaderInt64: IREE emulates it with 32-bit pairs where its target lacks
    # 64-bit integers, but the targets pyree picks for such devices say they have them.
    field, feature = needs[name]
    if not getattr(info, field):
        return f"the Vulkan device {info.name!r} lacks {feature}"
    if dtype.itemsize == 2 and not info.storage_buffer_16bit_access:
        return f"the Vulkan device {info.name!r} lacks storageBuffer16BitAccess"
    if dtype.itemsize == 1 and not info.storage_buffer_8bit_access:
        return f"the Vulkan device {info.name!r} lacks storageBuffer8BitAccess"
    return None
