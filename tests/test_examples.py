"""The example scripts run and their own checks hold (each asserts its comparisons)."""
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("script", ["quickstart.py", "control_flow.py", "numpy_vs_jax.py"])
def test_example_runs(script):
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                            text=True, timeout=600, env=dict(os.environ))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    if script == "numpy_vs_jax.py":
        assert "all comparisons hold" in result.stdout
