"""Eager kernels compiled ahead of need, in the background, on a new user's first run.

Eager mode runs each primitive as a shape-polymorphic kernel compiled once per (primitive,
parameters, dtypes, ranks) and kept in the disk cache, so a user's second program finds most of
them compiled. The first program pays for them one by one, about half a second each, and a
program that starts with random initialisers and a few eager steps needs dozens: with an empty
cache the programs of benchmarks/cold_start.py took 2.2-4.5x JAX's wall time, nearly all of it
compiling. This module knows the kernels that programs commonly need (``eager_kernels.json.gz``,
recorded from the corpus of tests/corpus and examples/, in order of first use) and compiles them
into the disk cache in a background process, started when the first module no cache holds is
compiled, once per cache directory. The program compiles what it needs meanwhile, on another
core, and finds the rest ready. The background process runs at low priority, and what it
compiles is exactly what the program would have compiled (same text, flags and cache key).

    python -m pyree.transpiler.eager_warmup            # compile them all now, in the foreground
    python -m pyree.transpiler.eager_warmup --record out.json.gz -- pytest -q tests/corpus

``PYREE_EAGER_WARMUP=0`` (or ``config.update("eager_warmup", False)``) turns it off.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from typing import Optional

from pyree import config
from pyree.runtime import compile as rcompile

KERNELS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eager_kernels.json.gz")


def kernels() -> list[str]:
    """The recorded eager kernels' module texts (without locations), in order of first use."""
    try:
        with gzip.open(KERNELS_FILE, "rt") as f:
            return list(json.load(f))
    except (OSError, ValueError):
        return []


def compile_all(limit: Optional[int] = None) -> int:
    """Compile the recorded kernels for the CPU into the caches; returns how many there were.

    Example::

        compile_all()
    """
    from pyree.runtime.device import Device
    flags = Device("cpu").compile_flags
    texts = kernels()[:limit]
    for text in texts:
        try:
            rcompile.compile_mlir(text, flags, cache_text=text)
        except Exception:  # one kernel that no longer compiles must not stop the others
            pass
    return len(texts)


def _marker() -> Optional[str]:
    """The file whose creation claims this cache directory's warm-up (for this kernel list
    and compiler), or None when the disk cache is off."""
    if not config.disk_cache:
        return None
    try:
        with open(KERNELS_FILE, "rb") as f:
            digest = hashlib.sha256(f.read() + rcompile.compiler_version().encode()).hexdigest()
    except OSError:
        return None
    return os.path.join(rcompile.cache_dir(), f"eager-warmup-{digest[:16]}")


def start_in_background() -> bool:
    """Start the background warm-up unless it is off, or this cache directory had one already;
    returns whether one started."""
    if not config.eager_warmup or config.platform != "cpu":
        return False
    marker = _marker()
    if marker is None:
        return False
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # claimed by another process already (or the directory is not writable)
        return False
    env = dict(os.environ, PYREE_EAGER_WARMUP="0", PYREE_CACHE_DIR=rcompile.cache_dir())
    subprocess.Popen([sys.executable, "-m", "pyree.transpiler.eager_warmup", "--background"],
                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    return True


def _record(path: str, command: list[str]) -> None:
    """Run ``command`` (a pytest or Python command line) with eager kernel compiles recorded,
    and write the kernels, in order of first use, to ``path``."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "kernels.jsonl")
        with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
            f.write(_RECORDER)
        env = dict(os.environ, PYREE_RECORD_EAGER_KERNELS=log, PYREE_EAGER_WARMUP="0",
                   PYTHONPATH=os.pathsep.join([tmp] + os.environ.get("PYTHONPATH", "").split(
                       os.pathsep)))
        subprocess.run(command, env=env, check=False)
        seen, ordered = set(), []
        with open(log) as f:
            for line in f:
                text = json.loads(line)
                if text not in seen:
                    seen.add(text)
                    ordered.append(text)
    with gzip.open(path, "wt") as f:
        json.dump(ordered, f)
    print(f"{len(ordered)} eager kernels recorded in {path}")


# Installed as sitecustomize in the recorded processes: logs the text of every shape-polymorphic
# eager kernel that pyree compiles.
_RECORDER = """
import json, os
try:
    import pyree.runtime.compile as _compile
    _compile_mlir = _compile.compile_mlir

    def _recording(text, flags, *, cache_text=None):
        key_text = cache_text or text
        signature = key_text.split("func.func", 1)[-1].split("{", 1)[0]
        if "?" in signature:   # shape-polymorphic: an eager kernel, not a per-shape program
            with open(os.environ["PYREE_RECORD_EAGER_KERNELS"], "a") as f:
                f.write(json.dumps(key_text) + "\\n")
        return _compile_mlir(text, flags, cache_text=cache_text)

    _compile.compile_mlir = _recording
except Exception:
    pass
"""


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--record"]:
        if len(argv) < 3 or "--" not in argv:
            print("usage: python -m pyree.transpiler.eager_warmup --record OUT -- COMMAND...")
            return 2
        _record(argv[1], argv[argv.index("--") + 1:])
        return 0
    if argv[:1] == ["--background"] and hasattr(os, "nice"):
        os.nice(10)   # behind the program that started it
    count = compile_all()
    marker = _marker()
    if marker is not None:   # (benchmarks wait for this before timing a warm cache)
        with open(marker + ".done", "w"):
            pass
    if argv[:1] != ["--background"]:
        print(f"{count} eager kernels compiled into {rcompile.cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
