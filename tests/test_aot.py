"""Ahead-of-time export: pyree.export -> .vmfb -> pyree.runtime.load, the `pyree` command, IREE's
own iree-run-module, cuda/vulkan targets, the loader's isolation from the compiler, bad input."""
import collections
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.runtime import InvalidModuleError, load, read_signatures

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
Stats = collections.namedtuple("Stats", ["mean", "total"])
TABLE = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)  # closed over: embedded


def model(params, x, *, scale):
    hidden = jnp.tanh(x @ params["w"] + params["b"])
    logits = hidden @ TABLE
    return {"logits": logits * scale, "stats": Stats(jnp.mean(logits), jnp.sum(logits))}


def model_numpy(params, x, scale):
    logits = np.tanh(x @ params["w"] + params["b"]) @ TABLE
    return logits * scale, logits.mean(), logits.sum()


PARAMS = {"w": np.random.RandomState(0).randn(5, 3).astype(np.float32),
          "b": np.float32([0.1, -0.2, 0.3])}
X = np.random.RandomState(1).rand(2, 5).astype(np.float32)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = tmp_path_factory.mktemp("aot") / "model.vmfb"
    vmfb = pyree.export_functions(
        {"model": (model, (PARAMS, "f32[2,5]"), {"scale": "f32[]"}),
         "double": (lambda v: (v * 2, None), ("i32[3]",))}, path=path)
    assert path.read_bytes() == vmfb
    return path


def test_round_trip_keeps_structure_and_values(exported):
    m = load(exported)
    assert sorted(m.functions) == ["double", "model"]
    out = m.model(PARAMS, X, scale=np.float32(2.0))
    logits, mean, total = model_numpy(PARAMS, X, 2.0)
    assert set(out) == {"logits", "stats"} and type(out["stats"]).__name__ == "Stats"
    np.testing.assert_allclose(np.asarray(out["logits"]), logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(out["stats"].mean), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(out["stats"].total), total, rtol=1e-5, atol=1e-5)
    doubled, nothing = m["double"]([1, 2, 3])  # a list takes the declared dtype
    assert nothing is None and np.asarray(doubled).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(doubled), [2, 4, 6])
    sig = read_signatures(exported)["model"]
    assert [a.str_short() for a in sig["inputs"]["avals"]] == ["f32[3]", "f32[5,3]", "f32[2,5]",
                                                               "f32[]"]
    assert sig["target"] == "cpu" and sig["pyree"] == pyree.__version__


def test_export_accepts_jit_statics_and_writes_one_function(tmp_path):
    scaled = pyree.jit(lambda x, n: x * n, static_argnames="n")
    vmfb = pyree.export(scaled, "f32[4]", 3, name="scaled")
    got = load(vmfb).scaled(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(got), np.arange(4) * 3.0)


def test_bad_arguments_are_clear_errors(exported):
    m = load(exported)
    one = np.float32(1.0)
    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        m.model(PARAMS, scale=one)
    with pytest.raises(TypeError, match="argument 1 has dtype float64"):
        m.model(PARAMS, X.astype(np.float64), scale=one)
    with pytest.raises(ValueError, match=r"argument 1 has shape \(1, 5\), expected f32\[2,5\]"):
        m.model(PARAMS, X[:1], scale=one)
    with pytest.raises(TypeError, match="expected a dict with keys"):
        m.model((PARAMS["w"], PARAMS["b"]), X, scale=one)
    with pytest.raises(TypeError, match="cannot be read as i32"):
        m.double([1.5, 2.0, 3.0])
    with pytest.raises(AttributeError, match="has no function 'predict'"):
        m.predict
    # the module still works after all that
    np.testing.assert_array_equal(np.asarray(m.double(np.int32([1, 1, 1]))[0]), [2, 2, 2])


def test_bad_files_are_clear_errors(exported, tmp_path):
    data = exported.read_bytes()
    cases = {
        "truncated": (data[: len(data) // 2], "damaged at its end"),
        "empty": (b"", "empty"),
        "random": (np.random.RandomState(0).bytes(4096), "not an IREE module"),
        "corrupted": (data[:200] + bytes(64) + data[264:], "do not match the checksum"),
    }
    zipped = tmp_path / "other.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("a.txt", "hello")
    cases["zip"] = (zipped.read_bytes(), "no pyree checksum")
    for name, (content, message) in cases.items():
        path = tmp_path / f"{name}.vmfb"
        path.write_bytes(content)
        with pytest.raises(InvalidModuleError, match=message):
            load(path)
    with pytest.raises(InvalidModuleError, match="cannot read"):
        load(tmp_path / "missing.vmfb")
    # an IREE module that pyree did not make
    from iree.compiler import compile_str
    foreign = compile_str("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                          "  return %x : tensor<2xf32>\n}", target_backends=["llvm-cpu"])
    with pytest.raises(InvalidModuleError, match="not made by pyree.export"):
        load(foreign)


def test_export_errors():
    with pytest.raises(pyree._export.ExportError, match="unknown dtype"):
        pyree.export(lambda x: x, "q7[3]")
    with pytest.raises(pyree._export.ExportError, match="unknown target"):
        pyree.export(lambda x: x, "f32[3]", target="tpu")
    with pytest.raises(pyree._export.ExportError, match="identifiers"):
        pyree.export(lambda x: x, "f32[3]", name="my model")

    @pyree.tree_util.register_pytree_node_class
    class Box:
        def __init__(self, v):
            self.v = v

        def tree_flatten(self):
            return (self.v,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    with pytest.raises(pyree._export.ExportError, match="custom pytree node"):
        pyree.export(lambda x: Box(x), "f32[3]")


def test_parse_spec():
    from pyree._export import parse_spec
    spec = parse_spec("{w: (f32[2,3], bf16[]), 'b': [i32[4]], 3: u8[0]}")
    assert spec["w"][0].shape == (2, 3) and spec["w"][1].dtype == pyree.dtypes.bfloat16
    assert spec["b"][0].dtype == np.int32 and spec[3].shape == (0,)
    assert parse_spec("float32[5]").dtype == np.float32
    for bad in ("f32[3", "f32[a]", "(f32[3]", "f32[3] f32[2]", "{: f32[3]}"):
        with pytest.raises(pyree._export.ExportError):
            parse_spec(bad)


def test_cuda_and_vulkan_targets_compile():
    f = lambda x: jnp.sin(x) * 2.0 + x @ x.T
    for target in ("cuda", "vulkan"):
        vmfb = pyree.export(f, "f32[4,4]", target=target)
        assert read_signatures(vmfb)["main"]["target"] == target
        with pytest.raises(InvalidModuleError, match=f"compiled for {target}"):
            load(vmfb, device="cpu")


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pyree.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_cli_round_trip_and_iree_run_module(tmp_path):
    mlp = os.path.join(EXAMPLES, "train_mlp.py")
    out = tmp_path / "mlp.vmfb"
    done = _cli("compile", f"{mlp}:predict", "--arg",
                "[(f32[64,16], f32[16]), (f32[16,10], f32[10])]", "--arg", "f32[3,64]",
                "-o", str(out))
    assert done.returncode == 0, done.stderr
    shown = _cli("inspect", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "predict(f32[64,16], f32[16], f32[16,10], f32[10], f32[3,64]) -> (f32[3,10])" \
        in shown.stdout
    rng = np.random.RandomState(0)
    arrays = [rng.randn(*s).astype(np.float32) for s in [(64, 16), (16,), (16, 10), (10,), (3, 64)]]
    inputs = []
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"in{i}.npy", a)
        inputs += ["--input", str(tmp_path / f"in{i}.npy")]
    ran = _cli("run", str(out), "predict", *inputs, "-o", str(tmp_path / "out.npz"))
    assert ran.returncode == 0, ran.stderr
    w1, b1, w2, b2, x = arrays
    want = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["result"], want, rtol=1e-4,
                               atol=1e-4)
    # IREE's own tool runs the file
    tool = shutil.which("iree-run-module") or os.path.join(os.path.dirname(sys.executable),
                                                           "iree-run-module")
    if not os.path.exists(tool):
        pytest.skip("iree-run-module is not installed")
    np.save(tmp_path / "in4.npy", arrays[4])
    done = subprocess.run([tool, f"--module={out}", "--function=predict"]
                          + [f"--input=@{tmp_path / f'in{i}.npy'}" for i in range(5)]
                          + [f"--output=@{tmp_path / 'iree.npy'}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "iree.npy"), want, rtol=1e-4, atol=1e-4)


def test_cli_errors_and_help(tmp_path):
    assert "compile" in _cli("--help").stdout and "--arg" in _cli("compile", "--help").stdout
    broken = tmp_path / "broken.py"
    broken.write_text("import numpy\nraise RuntimeError('no model here')\n")
    good = tmp_path / "good.py"
    good.write_text("def f(x):\n    return x + 1\n")
    cases = [
        (("compile", f"{good}:g", "--arg", "f32[3]"), "has no function 'g'; it defines: f"),
        (("compile", f"{broken}:f", "--arg", "f32[3]"), "no model here"),
        (("compile", f"{tmp_path}/nope.py:f", "--arg", "f32[3]"), "no such file"),
        (("compile", f"{good}:f", "--arg", "f32[3"), "spec"),
        (("compile", f"{good}", "--arg", "f32[3]"), "MODULE:FUNCTION"),
        (("inspect", str(good)), "not an IREE module"),
    ]
    for args, message in cases:
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr.split("failed:")[0], \
            (args, done.stderr)
    out = tmp_path / "f.vmfb"
    assert _cli("compile", f"{good}:f", "--arg", "i32[2]", "-o", str(out)).returncode == 0
    bad_run = _cli("run", str(out), "f", "--input", "[1, 2, 3]")
    assert bad_run.returncode == 2 and "shape (3,), expected i32[2]" in bad_run.stderr
    assert "[2 3]" in _cli("run", str(out), "f", "--input", "[1, 2]").stdout


def test_cli_several_functions_statics_and_generic_cpu(tmp_path):
    source = tmp_path / "fns.py"
    source.write_text("import pyree.numpy as jnp\n\n"
                      "def scale(x, *, factor):\n    return x * factor\n\n"
                      "def shift(x, *, factor):\n    return {'y': x + factor}\n")
    out = tmp_path / "two.vmfb"
    done = _cli("compile", f"{source}:scale", f"{source}:shift", "--arg", "f32[3]",
                "--static", "factor=2.5", "--cpu", "generic", "-o", str(out))
    assert done.returncode == 0, done.stderr
    m = load(out)
    x = np.float32([1, 2, 3])
    np.testing.assert_array_equal(np.asarray(m.scale(x)), x * 2.5)
    np.testing.assert_array_equal(np.asarray(m.shift(x)["y"]), x + 2.5)
    assert read_signatures(out)["scale"]["cpu"] == "generic"


def test_console_script_is_declared():
    from importlib.metadata import entry_points
    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts.get("pyree") == "pyree.cli:main"


ISOLATED = r"""
import sys, importlib.abc
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "iree.compiler" or name.startswith("iree.compiler.") or \
                name == "pyree.transpiler" or name.startswith("pyree.transpiler."):
            raise ImportError("refused in this test: " + name)
sys.meta_path.insert(0, Refuse())
import numpy as np
from pyree.runtime import load
m = load(sys.argv[1])
out = m.model({"w": np.load(sys.argv[2]), "b": np.load(sys.argv[3])}, np.load(sys.argv[4]),
              scale=np.float32(2.0))
np.save(sys.argv[5], np.asarray(out["logits"]))
bad = [k for k in sys.modules if k.startswith(("iree.compiler", "pyree.transpiler"))]
print("LOADED", bad)
"""


def test_loader_needs_neither_compiler_nor_transpiler(exported, tmp_path):
    files = []
    for name, value in (("w", PARAMS["w"]), ("b", PARAMS["b"]), ("x", X)):
        np.save(tmp_path / f"{name}.npy", value)
        files.append(str(tmp_path / f"{name}.npy"))
    script = tmp_path / "serve.py"
    script.write_text(ISOLATED)
    done = subprocess.run([sys.executable, str(script), str(exported), *files,
                           str(tmp_path / "out.npy")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), model_numpy(PARAMS, X, 2.0)[0],
                               rtol=1e-5, atol=1e-6)


def test_flipped_bytes_never_reach_iree(exported, tmp_path):
    # IREE's loader trusts a module's offsets: flipped bytes crashed the interpreter. Each
    # damaged copy must fail with InvalidModuleError; a crash of the subprocess fails the test.
    script = textwrap.dedent(f"""
        import random
        from pyree.runtime import load
        from pyree.runtime.loader import InvalidModuleError
        data = open({str(exported)!r}, "rb").read()
        rng = random.Random(7)
        for trial in range(100):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
            try:
                load(bytes(damaged))
            except InvalidModuleError:
                continue
            raise SystemExit(f"trial {{trial}}: a damaged module loaded")
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_tampered_signature_is_caught_when_called(exported):
    from pyree.runtime.loader import seal
    data = exported.read_bytes()
    unsealed = data[:-42] + b"\0\0"   # the comment (checksum) removed
    assert seal(unsealed) == data
    old = b'"avals": [["int32", [3]]]'
    at = unsealed.rindex(old)               # the last one: double's outputs
    assert unsealed.index(b'"outputs"', 0, at) < at
    forged = load(seal(unsealed[:at] + old.replace(b"[3]", b"[9]") + unsealed[at + len(old):]))
    with pytest.raises(InvalidModuleError, match="signature was altered"):
        forged.double(np.arange(3, dtype=np.int32))
