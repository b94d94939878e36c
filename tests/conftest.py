"""Fixtures shared by the test files."""
import pytest

import pyree


@pytest.fixture
def x64():
    """64-bit types on for the test, restored after it."""
    saved = pyree.config.enable_x64
    pyree.config.update("enable_x64", True)
    yield
    pyree.config.update("enable_x64", saved)
