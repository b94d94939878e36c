"""The background compile of common eager kernels (transpiler/eager_warmup.py): the recorded
kernels are eager kernels, compiling them fills the disk cache with exactly the entries eager
calls look up, and the background process starts once per cache directory."""
import numpy as np

import pyree
import pyree.numpy as jnp
from pyree.runtime import compile as rcompile
from pyree.runtime.device import Device
from pyree.transpiler import eager, eager_warmup

from conftest import cpu_only

pytestmark = cpu_only("eager kernels are compiled ahead for the CPU only")


def test_recorded_kernels_are_eager_kernels():
    texts = eager_warmup.kernels()
    assert len(texts) > 50
    for text in texts:
        signature = text.split("func.func", 1)[1].split("{", 1)[0]
        assert "?" in signature, signature   # shape-polymorphic


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


def test_background_start_once_per_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(pyree.config, "eager_warmup", True)
    started = []
    monkeypatch.setattr(eager_warmup.subprocess, "Popen",
                        lambda command, **kw: started.append((command, kw["env"])))
    assert eager_warmup.start_in_background()
    assert not eager_warmup.start_in_background()   # claimed: the marker file exists
    (command, env), = started
    assert command[1:] == ["-m", "pyree.transpiler.eager_warmup", "--background"]
    assert env["PYREE_EAGER_WARMUP"] == "0" and env["PYREE_CACHE_DIR"] == str(tmp_path)
    monkeypatch.setattr(pyree.config, "eager_warmup", False)
    monkeypatch.setattr(pyree.config, "cache_dir", str(tmp_path / "other"))
    assert not eager_warmup.start_in_background()
    assert Device("cpu").compile_flags   # (the flags compile_all uses)
