"""A pytest plugin for the GPU session (benchmarks/gpu_check.sh): appends each failing test's
id and the end of its report to ``$PYREE_FAILURE_LOG`` the moment it fails, so that a run
stopped by its time limit still says what failed and why.

    PYREE_FAILURE_LOG=failures.txt python -m pytest -p pytest_failure_log tests
"""
from __future__ import annotations

import os


# A failed CUDA launch leaves IREE's device failing every later call in the process; the
# worker that saw one exits (pytest-xdist starts a fresh one), so that each such failure is
# reported once, by the test that caused it.
_DEVICE_LOST = ("CUDA error", "synchronous fence failure", "Failed to allocate buffer")
_in_worker = []


def pytest_configure(config) -> None:
    _in_worker.append(hasattr(config, "workerinput"))


def pytest_runtest_logreport(report) -> None:
    path = os.environ.get("PYREE_FAILURE_LOG")
    if not path or not report.failed:
        return
    text = str(report.longrepr or "")
    lost = any(marker in text for marker in _DEVICE_LOST)
    if _in_worker and _in_worker[0]:
        if lost:  # the controller hears of it as a crashed worker
            with open(path, "a") as log:
                log.write(f"=== {report.nodeid} ({report.when}) DEVICE LOST\n"
                          f"{chr(10).join(text.splitlines()[-25:])}\n\n")
            os._exit(3)
        return
    if "worker" in text and "crashed" in text:
        return
    tail = "\n".join(text.splitlines()[-25:])
    with open(path, "a") as log:
        log.write(f"=== {report.nodeid} ({report.when})\n{tail}\n\n")
