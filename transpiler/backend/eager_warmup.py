"""Eager kernels compiled ahead of need, in the background, on a new user's first run.

Eager mode runs each primitive as a shape-polymorphic kernel compiled once per (primitive,
parameters, dtypes, ranks) and kept in the disk cache, so a user's second program finds most of
them compiled. The first program pays for them one by one, about half a second each, and a
program that starts with random initialisers and a few eager steps needs dozens: with an empty
cache the programs of benchmarks/cold_start.py took 2.2-4.5x JAX's wall time, nearly all of it
compiling. This module knows the kernels that programs commonly need (``eager_kernels.json.gz``,
recorded from tests/corpus and examples/; a list of the 581 kernels two or more of the whole
suite's test files use made the cold start of benchmarks/cold_start.py slower, 2.3-2.5x JAX
against 1.6-1.8x, as its compiling competes with the program's own) and compiles them
into the disk cache in a background process, started when the first module no cache holds is
compiled, once per cache directory. The program compiles what it needs meanwhile, on another
core, and finds the rest ready. The background process runs at low priority and compiles the
kernels several to a module (runtime/compile.py's bundles: a third of the time each); each
kernel's cache key (same text, flags and key as the program's own compile) names its bundle.

    python -m pyree.transpiler.backend.eager_warmup      # compile them all now, in the foreground
    python -m pyree.transpiler.backend.eager_warmup --record out.json.gz --min-users 1 \
        -- pytest -q tests/corpus

``PYREE_EAGER_WARMUP=0`` (or ``config.update("eager_warmup", False)``) turns it off.
"""
from __future__ import annotations

import argparse
import collections
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
    start = 0
    for size in _bundle_sizes(len(texts)):
        try:
            rcompile.compile_bundle(texts[start:start + size], flags)
        except Exception:  # kernels that no longer compile must not stop the others
            pass
        start += size
    return len(texts)


# Kernels per bundle (runtime/compile.py: 0.55 s a kernel alone, 0.18 s in bundles of 16, 0.17 s
# of 32). The first bundles are small: a program waits for the kernels it needs first, and a
# bundle's kernels are ready only when all of it is.
_FIRST_BUNDLE_SIZES = (4, 8)
_BUNDLE_SIZE = 16


def _bundle_sizes(count: int) -> list[int]:
    sizes = []
    while count > 0:
        size = (_FIRST_BUNDLE_SIZES + (_BUNDLE_SIZE,))[min(len(sizes), len(_FIRST_BUNDLE_SIZES))]
        sizes.append(min(size, count))
        count -= sizes[-1]
    return sizes


def _marker() -> Optional[str]:
    """The file whose creation claims this cache directory's warm-up (for this kernel list,
    compiler and process-wide compiler options: what the kernels' cache keys depend on), or
    None when the disk cache is off."""
    if not config.disk_cache:
        return None
    try:
        with open(KERNELS_FILE, "rb") as f:
            digest = hashlib.sha256(f.read() + rcompile.compiler_version().encode() + "\0".join(
                rcompile.GLOBAL_COMPILER_OPTIONS).encode()).hexdigest()
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
    subprocess.Popen([sys.executable, "-m", "pyree.transpiler.backend.eager_warmup",
                      "--background"], env=env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return True


def _record(path: str, command: list[str], min_users: int = 2) -> None:
    """Run ``command`` (a pytest or Python command line) with eager kernel compiles recorded,
    and write to ``path`` the kernels that at least ``min_users`` test files (or programs)
    use, those used by most first, in order of first use among equals. (A kernel one test
    file alone uses is what that test is about, not what programs commonly need.)"""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "kernels.jsonl")
        with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
            f.write(_RECORDER)
        env = dict(os.environ, PYREE_RECORD_EAGER_KERNELS=log, PYREE_EAGER_WARMUP="0",
                   PYTHONPATH=os.pathsep.join([tmp] + os.environ.get("PYTHONPATH", "").split(
                       os.pathsep)))
        subprocess.run(command, env=env, check=False)
        users: dict[str, set] = {}   # kernel text -> the files that used it, in order of first use
        with open(log, "a+") as f:   # (created if the command used no eager kernel)
            f.seek(0)
            for line in f:
                try:
                    source, text = json.loads(line)
                except ValueError:  # two workers' lines interleaved: lose that one
                    continue
                users.setdefault(text, set()).add(source)
    common = [text for text in users if len(users[text]) >= min_users]
    ordered = sorted(common, key=lambda text: -len(users[text]))   # stable: first use next
    with gzip.open(path, "wt") as f:
        json.dump(ordered, f)
    print(f"{len(ordered)} of {len(users)} eager kernels (those {min_users} or more files use) "
          f"recorded in {path}")
    histogram = collections.Counter(min(len(u), 10) for u in users.values())
    print("files using a kernel: kernels", dict(sorted(histogram.items())))


# Installed as sitecustomize in the recorded processes: logs the text of every eager kernel
# each test file (or program) uses, once per file. eager.py keeps a process's kernels, so the
# text is taken when compile_function is asked for it and remembered for later uses.
_RECORDER = """
import json, os, sys, threading
try:
    import pyree.runtime.compile as _compile
    import pyree.transpiler.backend.eager as _eager
    _compile_function, _kernel = _compile.compile_function, _eager._kernel
    _asked = threading.local()
    _texts, _logged = {}, set()

    def _recording_compile(text, flags, function, *, cache_text=None):
        _asked.text = cache_text or text
        return _compile_function(text, flags, function, cache_text=cache_text)

    def _recording_kernel(*args):
        _asked.text = None
        kernel = _kernel(*args)
        if _asked.text is not None:
            _texts[id(kernel)] = _asked.text
        source = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[0] or sys.argv[0]
        text = _texts.get(id(kernel))
        if text is not None and (source, id(kernel)) not in _logged:
            _logged.add((source, id(kernel)))
            with open(os.environ["PYREE_RECORD_EAGER_KERNELS"], "a") as f:
                f.write(json.dumps([source, text]) + "\\n")
        return kernel

    _compile.compile_function, _eager._kernel = _recording_compile, _recording_kernel
except Exception:
    pass
"""


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--record"]:
        if "--" not in argv:
            print("usage: python -m pyree.transpiler.backend.eager_warmup --record OUT "
                  "[--min-users N] -- COMMAND...")
            return 2
        split = argv.index("--")
        parser = argparse.ArgumentParser(prog="python -m pyree.transpiler.backend.eager_warmup")
        parser.add_argument("--record", required=True, metavar="OUT")
        parser.add_argument("--min-users", type=int, default=2)
        options = parser.parse_args(argv[:split])
        _record(options.record, argv[split + 1:], options.min_users)
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
