"""The background compile of common eager kernels (transpiler/backend/eager_warmup.py): the
recorded kernels are eager kernels, compiling them fills the disk cache with exactly the entries
eager calls look up, and the background process starts once per cache directory."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.runtime import compile as rcompile
from pyree.runtime.device import Device
from pyree.transpiler.backend import eager, eager_warmup

from conftest import cpu_only

pytestmark = cpu_only("eager kernels are compiled ahead for the CPU only")


def test_recorded_kernels_are_eager_kernels():
    texts = eager_warmup.kernels()
    assert len(texts) > 50 and len(set(texts)) == len(texts)
    polymorphic = 0
    for text in texts:
        assert rcompile._can_bundle(text), text   # one function, @main
        polymorphic += "?" in text.split("func.func", 1)[1].split("{", 1)[0]
    assert polymorphic > len(texts) / 2   # most of them shape-polymorphic (scalars are not)


def test_compiled_kernels_are_what_eager_calls_find(tmp_path, monkeypatch):
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path))
    rcompile.clear_memory_cache()
    monkeypatch.setattr(eager, "_kernels", {})
    # The kernel of an elementwise float32 tanh, as eager mode builds it.
    texts = [t for t in eager_warmup.kernels() if "stablehlo.tanh" in t and "xf32>" in t]
    assert texts
    monkeypatch.setattr(eager_warmup, "kernels", lambda: texts[:1])
    assert eager_warmup.compile_all() == 1
    rcompile.clear_memory_cache()
    before = (rcompile.CompileStats.compiled, rcompile.CompileStats.disk_hits)
    x = np.linspace(0, 1, 7, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(jnp.tanh(jnp.asarray(x))), np.tanh(x), rtol=1e-6)
    assert rcompile.CompileStats.disk_hits == before[1] + 1   # found, not compiled again
    assert rcompile.CompileStats.compiled == before[0]


def test_recorded_kernels_are_current(monkeypatch):
    # The recorded texts must be what eager mode builds today: a lowering change makes them
    # stale, and the warm-up then compiles kernels nobody asks for (36 of 178 were, which cost
    # the cold start of benchmarks/cold_start.py 2.22x JAX against 1.73-1.76x re-recorded).
    # After such a change: python -m pyree.transpiler.backend.eager_warmup --record
    # transpiler/eager_kernels.json.gz --min-users 1 -- pytest -q tests/corpus
    asked = []
    compile_function = rcompile.compile_function

    def recording(text, flags, function, *, cache_text=None):
        asked.append(cache_text or text)
        return compile_function(text, flags, function, cache_text=cache_text)
    monkeypatch.setattr(rcompile, "compile_function", recording)
    monkeypatch.setattr(eager, "_kernels", {})
    x = jnp.asarray(np.linspace(0.5, 1, 8, dtype=np.float32))
    m = jnp.asarray(np.ones((4, 6), np.float32))
    for result in (x + x, x * 2.0, jnp.exp(x), jnp.log(x), m[:, 1:], jnp.sum(x),
                   jnp.maximum(x, 0.0)):
        result.block_until_ready()
    recorded = set(eager_warmup.kernels())
    stale = [text for text in asked if text not in recorded]
    assert asked and not stale, [t.split("func.func", 1)[1][:160] for t in stale]


def _unary_float32_kernels(*ops: str) -> list[str]:
    """The recorded eager kernels of these elementwise float32 operations."""
    return [next(t for t in eager_warmup.kernels() if f"stablehlo.{op} %arg0 : tensor<?xf32>" in t)
            for op in ops]


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A fresh disk cache, nothing compiled in memory, no eager kernel loaded."""
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path))
    rcompile.clear_memory_cache()
    monkeypatch.setattr(eager, "_kernels", {})


def test_kernels_compiled_in_one_bundle_are_found_one_by_one(empty_cache):
    texts = _unary_float32_kernels("tanh", "log")
    flags = Device("cpu").compile_flags
    assert rcompile.compile_bundle(texts, flags) == 2
    assert rcompile.compile_bundle(texts, flags) == 0   # in the cache already
    rcompile.clear_memory_cache()
    before = (rcompile.CompileStats.compiled, rcompile.CompileStats.disk_hits)
    x = np.linspace(0.5, 1, 7, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(jnp.tanh(jnp.asarray(x))), np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.log(jnp.asarray(x))), np.log(x), rtol=1e-6)
    assert rcompile.CompileStats.disk_hits == before[1] + 2
    assert rcompile.CompileStats.compiled == before[0]
    # compile_mlir answers with a module whose function is the caller's @main, not the bundle.
    bundle, name = rcompile.compile_function(texts[1], flags, "main")
    assert name == "k1"
    assert rcompile.compile_mlir(texts[1], flags) != bundle
    assert rcompile.compile_function(texts[1], flags, "main")[1] == "main"


def test_damaged_bundle_is_recompiled(empty_cache):
    texts = _unary_float32_kernels("tanh", "log")
    flags = Device("cpu").compile_flags
    rcompile.compile_bundle(texts, flags)
    prepared = [rcompile.prepare_module(t, flags) for t in texts]
    bundle = rcompile._disk_path(rcompile.cache_key(
        rcompile.bundle_text([t for t, _ in prepared]), prepared[0][1]))
    with open(bundle, "r+b") as f:
        f.seek(100)
        f.write(b"garbage")
    rcompile.clear_memory_cache()
    before = rcompile.CompileStats.compiled
    x = np.linspace(0.5, 1, 7, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(jnp.log(jnp.asarray(x))), np.log(x), rtol=1e-6)
    assert rcompile.CompileStats.compiled == before + 1


def test_background_start_once_per_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(pyree.config, "eager_warmup", True)
    started = []
    monkeypatch.setattr(eager_warmup.subprocess, "Popen",
                        lambda command, **kw: started.append((command, kw["env"])))
    assert eager_warmup.start_in_background()
    assert not eager_warmup.start_in_background()   # claimed: the marker file exists
    (command, env), = started
    assert command[1:] == ["-m", "pyree.transpiler.backend.eager_warmup", "--background"]
    assert env["PYREE_EAGER_WARMUP"] == "0" and env["PYREE_CACHE_DIR"] == str(tmp_path)
    monkeypatch.setattr(pyree.config, "eager_warmup", False)
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path / "other"))
    assert not eager_warmup.start_in_background()
    assert Device("cpu").compile_flags   # (the flags compile_all uses)


def test_recording_the_kernels_programs_use(tmp_path):
    import gzip
    import json
    import subprocess
    import sys
    program = "import pyree.numpy as jnp; print(float(jnp.sin(jnp.ones(3) * 2.0).sum()))"
    out = tmp_path / "kernels.json.gz"
    done = subprocess.run([sys.executable, "-m", "pyree.transpiler.backend.eager_warmup",
                           "--record", str(out), "--min-users", "1", "--", sys.executable, "-c",
                           program],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    texts = json.load(gzip.open(out, "rt"))
    # sin is computed by its own float32 polynomial (float32_math.py), then summed
    assert any("stablehlo.round_nearest_even" in t for t in texts)
    assert any("stablehlo.reduce" in t for t in texts) and all(map(rcompile._can_bundle, texts))
