"""The compilation cache: in memory, on disk across processes, and robust to bad entries."""
import glob
import json
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.runtime import compile as rcompile

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pyree, pyree.numpy as jnp
    from pyree.runtime.compile import CompileStats

    @pyree.jit
    def norm(x):
        return (x - x.mean(0)) / x.std(0)

    x = np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5
    out = np.asarray(norm(x))
    print(json.dumps({"compiled": CompileStats.compiled, "disk_hits": CompileStats.disk_hits,
                      "out": out.tolist()}))
""")


def run_program(cache_dir, extra_env=None):
    env = dict(os.environ, PYREE_CACHE_DIR=str(cache_dir))
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def expected_norm():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5
    return (x - x.mean(0)) / x.std(0)


def entries(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "*", "*.vmfb")))


def test_second_process_compiles_nothing(tmp_path):
    first = run_program(tmp_path)
    assert first["compiled"] == 1 and first["disk_hits"] == 0
    np.testing.assert_allclose(first["out"], expected_norm(), rtol=1e-5)
    second = run_program(tmp_path)
    assert second["compiled"] == 0 and second["disk_hits"] == 1
    np.testing.assert_allclose(second["out"], expected_norm(), rtol=1e-5)
    assert len(entries(tmp_path)) == 1
    assert not glob.glob(os.path.join(str(tmp_path), "*", ".tmp-*"))  # atomic writes


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "flipped"])
def test_damaged_entry_is_recompiled(tmp_path, damage):
    run_program(tmp_path)
    (path,) = entries(tmp_path)
    data = open(path, "rb").read()
    if damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    else:  # one flipped bit in the payload: the checksum catches it
        pos = len(data) - 100
        data = data[:pos] + bytes([data[pos] ^ 1]) + data[pos + 1:]
    open(path, "wb").write(data)
    again = run_program(tmp_path)
    assert again["compiled"] == 1 and again["disk_hits"] == 0
    np.testing.assert_allclose(again["out"], expected_norm(), rtol=1e-5)
    fixed = run_program(tmp_path)  # the bad entry was replaced
    assert fixed["compiled"] == 0 and fixed["disk_hits"] == 1


def test_disk_cache_can_be_switched_off(tmp_path):
    result = run_program(tmp_path, {"PYREE_DISK_CACHE": "0"})
    assert result["compiled"] == 1
    assert entries(tmp_path) == []


def test_unwritable_cache_dir_only_costs_recompiles(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = run_program(blocker)
    assert result["compiled"] == 1
    np.testing.assert_allclose(result["out"], expected_norm(), rtol=1e-5)


def test_memory_cache_key_ignores_source_locations(monkeypatch, tmp_path):
    monkeypatch.setattr(pyree.config, "_values", dict(pyree.config._values, cache_dir=str(tmp_path)))
    before = rcompile.CompileStats.compiled

    def f(x):
        return x * 41.5

    def g(x):
        # Same program written on other lines: the same module, no new compile.
        y = x * 41.5
        return y

    x = np.ones(3, np.float32)
    pyree.jit(f)(x)
    pyree.jit(g)(x)
    assert rcompile.CompileStats.compiled - before <= 1


def test_cache_key_depends_on_text_flags_and_version():
    a = rcompile.cache_key("module {}", ["--x"])
    assert a == rcompile.cache_key("module {}", ["--x"])
    assert a != rcompile.cache_key("module { }", ["--x"])
    assert a != rcompile.cache_key("module {}", ["--y"])
    assert rcompile.compiler_version() in ("none",) or ":" in rcompile.compiler_version()


def test_code_for_this_cpu_is_not_loaded_on_another(monkeypatch, tmp_path):
    # A cache directory that outlives its machine (or is shared between machines) must not hand
    # code compiled for one CPU (AVX-512, AMX...) to another: the key of a module compiled for
    # the host names the host's CPU; a CUDA module's does not depend on it.
    from pyree.runtime.device import Device
    cpu_flags = Device("cpu").compile_flags
    assert rcompile.HOST_CPU_FLAG in cpu_flags
    assert rcompile.host_cpu().startswith(platform.machine())
    monkeypatch.setattr(pyree.config, "_values",
                        dict(pyree.config._values, cache_dir=str(tmp_path)))
    x = np.arange(5, dtype=np.float32)
    key = rcompile.cache_key("module {}", cpu_flags)
    cuda_key = rcompile.cache_key("module {}", ["--iree-hal-target-device=cuda"])
    first = rcompile.CompileStats.compiled
    np.testing.assert_array_equal(pyree.jit(lambda v: v * 7.25 - 1)(x), x * 7.25 - 1)
    assert rcompile.CompileStats.compiled == first + 1
    monkeypatch.setattr(rcompile, "host_cpu", lambda: "x86_64 | another CPU | avx2")
    monkeypatch.setattr(rcompile, "_memory_cache", rcompile._BoundedCache(1 << 20))
    assert rcompile.cache_key("module {}", cpu_flags) != key
    assert rcompile.cache_key("module {}", ["--iree-hal-target-device=cuda"]) == cuda_key
    hits = rcompile.CompileStats.disk_hits
    np.testing.assert_array_equal(pyree.jit(lambda v: v * 7.25 - 1)(x), x * 7.25 - 1)
    assert rcompile.CompileStats.compiled == first + 2 and rcompile.CompileStats.disk_hits == hits


def test_compile_errors_are_collected_not_printed(capfd):
    flags = pyree.devices("cpu")[0].compile_flags
    with pytest.raises(rcompile.CompileError, match=r"source.mlir:1:\d+: error: "):
        rcompile._compile_now("module { func.func @f( }", flags)
    assert capfd.readouterr().err == ""


def test_module_iree_fails_on_compiles_again_without_multi_use_fusion(capfd, monkeypatch):
    # A module IREE 3.13 cannot compile as it first fuses it (see FALLBACK_FLAGS) is compiled
    # at the second try, printing nothing. The module that failed on an AVX-512 machine
    # (jit(grad) of mean(exp(a u - b v)) over 100k floats) compiles at once on AVX2 ones, so
    # the first try's failure is simulated here: the second try must carry the fallback flags.
    u = np.linspace(0.1, 1.0, 1000, dtype=np.float32)
    text = pyree.jit(lambda a: (jnp.sum(jnp.exp(a * u) * u), jnp.sum(-jnp.exp(a * u) * u))
                     ).lower(0.1).as_text()
    real = rcompile._run_compiler
    seen = []

    def first_try_fails(mlir_text, flags):
        seen.append(tuple(flags))
        if not set(rcompile.FALLBACK_FLAGS) <= set(flags):
            return None, ["error: exceeded stack allocation limit (simulated)"]
        return real(mlir_text, flags)

    monkeypatch.setattr(rcompile, "_run_compiler", first_try_fails)
    before = rcompile.CompileStats.fallbacks
    assert rcompile._compile_now(text, pyree.devices("cpu")[0].compile_flags)
    assert rcompile.CompileStats.fallbacks == before + 1 and len(seen) == 2
    assert capfd.readouterr().err == ""


def test_a_refused_module_is_remembered(monkeypatch, tmp_path):
    # Asked again, in this process or (from the disk cache) another, a module IREE refused
    # raises at once with the same diagnostics: the transpiler's fallbacks ask first for forms
    # IREE may refuse (jit._compiled_module, eager._kernel).
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path))
    flags = pyree.devices("cpu")[0].compile_flags
    runs = []
    real = rcompile._run_compiler
    monkeypatch.setattr(rcompile, "_run_compiler",
                        lambda text, flags: runs.append(1) or real(text, flags))
    text = "module { func.func @f( }"
    for attempt in range(3):
        with pytest.raises(rcompile.CompileError, match=r"source.mlir:1:\d+: error: "):
            rcompile.compile_mlir(text, flags)
        if attempt == 1:
            rcompile.clear_memory_cache()   # (then from the disk cache)
    assert len(runs) == 1 + len(rcompile.FALLBACK_FLAG_SETS)
    assert len(entries(tmp_path)) == 1


def test_an_entry_swapped_for_another_keys_is_recompiled(tmp_path):
    # The checksum covers the key: another program's valid entry under this key is not run.
    run_program(tmp_path)
    (path,) = entries(tmp_path)
    other = textwrap.dedent("""
        import numpy as np, pyree
        print(np.asarray(pyree.jit(lambda x: x * 100.0)(np.ones((4, 3), np.float32))).sum())
    """)
    env = dict(os.environ, PYREE_CACHE_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", other], env=env, check=True, capture_output=True,
                   timeout=300)
    (other_path,) = [p for p in entries(tmp_path) if p != path]
    with open(other_path, "rb") as f:
        foreign = f.read()
    with open(path, "wb") as f:
        f.write(foreign)
    again = run_program(tmp_path)
    assert again["compiled"] == 1 and again["disk_hits"] == 0
    np.testing.assert_allclose(again["out"], expected_norm(), rtol=1e-5)


def test_a_detached_compile_fills_the_disk_cache_this_process_then_reads(monkeypatch, tmp_path):
    """compile_detached (the compile of a hot eager function) runs in a process of its own
    under this process's cache key: once it is done this process loads the module from disk
    and compiles nothing; with the module cached, no process starts."""
    monkeypatch.setattr(pyree.config, "_values", dict(pyree.config._values, cache_dir=str(tmp_path)))
    device = pyree.devices()[0]
    fn = pyree.jit(lambda x: jnp.tanh(x) * 40.25)
    module = fn.lower(np.ones(5, np.float32)).as_text()
    process = rcompile.compile_detached(module, device.compile_flags)
    assert process is not None and process.wait(timeout=300) == 0
    rcompile.clear_memory_cache()
    compiled, hits = rcompile.CompileStats.compiled, rcompile.CompileStats.disk_hits
    rcompile.compile_mlir(module, device.compile_flags)
    assert rcompile.CompileStats.compiled == compiled
    assert rcompile.CompileStats.disk_hits == hits + 1
    assert rcompile.compile_detached(module, device.compile_flags) is None
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(fn(x)), np.tanh(x) * 40.25, rtol=1e-6)
    assert rcompile.CompileStats.compiled == compiled
