"""Fixtures shared by the test files."""
import os

import pytest

# No background compiles of common eager kernels while the suite runs (tests with caches of
# their own would each start one); tests/test_eager_warmup.py checks that machinery.
os.environ["PYREE_EAGER_WARMUP"] = "0"

import pyree  # noqa: E402


@pytest.fixture
def x64():
    """64-bit types on for the test, restored after it."""
    saved = pyree.config.enable_x64
    pyree.config.update("enable_x64", True)
    yield
    pyree.config.update("enable_x64", saved)
