"""pyree.config debug_nans / debug_infs: NaNs and infinities raise FloatingPointError naming
the user's line of the operation that produced them (transpiler/interpreters/nan_check.py)."""
import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.transpiler.interpreters import nan_check

HERE = os.path.basename(__file__)


@pytest.fixture
def config_restored():
    """Leaves debug_nans/debug_infs as the test found them."""
    saved = {name: getattr(pyree.config, name) for name in ("debug_nans", "debug_infs")}
    yield
    for name, value in saved.items():
        pyree.config.update(name, value)


@pytest.fixture
def nans(config_restored):
    pyree.config.update("debug_infs", False)
    pyree.config.update("debug_nans", True)


@pytest.fixture
def infs(config_restored):
    pyree.config.update("debug_nans", False)
    pyree.config.update("debug_infs", True)


def source_line(fun, text: str) -> tuple[int, str]:
    """The number and the stripped text of the first line of ``fun`` containing ``text``."""
    lines, first = inspect.getsourcelines(fun)
    for i, line in enumerate(lines):
        if text in line:
            return first + i, line.strip()
    raise AssertionError(f"{text!r} not in the source of {fun}")


def line_of(fun, text: str) -> int:
    return source_line(fun, text)[0]


def at(fun, text: str) -> str:
    """The regex of ``at FILE:LINE: CODE`` for the line of ``fun`` containing ``text``."""
    number, code = source_line(fun, text)
    return rf"at \S*{re.escape(HERE)}:{number}: {re.escape(code)}(?=\n|$)"


def test_jitted_log_of_negative_names_the_line(nans):
    def f(x):
        y = jnp.sin(x) * 2.0
        return jnp.log(y - 5.0) + 1.0

    with pytest.raises(FloatingPointError,
                       match=r"invalid value \(nan\) encountered in log " + at(f, "jnp.log(")):
        pyree.jit(f)(np.float32(1.0))
    # A clean call under the option returns the right values.
    x = np.array([10.0, 20.0], np.float32)
    np.testing.assert_allclose(np.asarray(pyree.jit(lambda v: jnp.log(v) + 1.0)(x)),
                               np.log(x) + 1, rtol=1e-6)


def test_nan_of_the_third_of_several_ops_names_that_op(nans):
    def f(x):
        a = x * 2.0
        b = a + 1.0
        c = jnp.sqrt(b - 10.0)
        d = c * 3.0
        return d.sum(), a

    with pytest.raises(FloatingPointError) as info:
        pyree.jit(f)(np.arange(4, dtype=np.float32))
    message = str(info.value)
    assert re.match(r"invalid value \(nan\) encountered in sqrt " + at(f, "jnp.sqrt("), message)
    line = int(re.search(rf"{re.escape(HERE)}:(\d+):", message).group(1))
    assert line == inspect.getsourcelines(f)[1] + 3
    # The message also names the call of the jitted function.
    assert "jitted function called at" in message and "pyree.jit(f)(np.arange(4" in message


def test_new_nan_next_to_an_inherited_one_is_found(nans):
    # x[0] is NaN already (it flows through `+ 1`); log makes a new NaN at x[1]: log is named.
    def f(x):
        y = x + 1.0
        return jnp.log(y)

    x = np.array([np.nan, -3.0, 1.0], np.float32)
    with pytest.raises(FloatingPointError, match=r"encountered in log " + at(f, "jnp.log(y)")):
        pyree.jit(f)(x)


def test_zero_over_zero_in_fori_loop_names_the_body_line(nans):
    def body(i, c):
        return c + (c - 3.0) / (c - 3.0) + 1.0

    def f(x):
        return lax.fori_loop(0, 5, body, x)

    with pytest.raises(FloatingPointError) as info:
        pyree.jit(f)(np.float32(1.0))
    lines = str(info.value).splitlines()
    assert re.match(r"invalid value \(nan\) encountered in div " + at(body, "(c - 3.0) /"),
                    lines[0])
    assert re.match(r"\s+inside scan " + at(f, "lax.fori_loop("), lines[1])


def test_nan_in_python_for_loop_names_the_body_line(nans):
    def f(x, xs):
        for v in xs:
            x = x + v / v
        return x

    xs = np.array([1.0, 2.0, 0.0, 4.0], np.float32)
    with pytest.raises(FloatingPointError) as info:
        pyree.jit(f)(np.float32(1.0), xs)
    lines = str(info.value).splitlines()
    assert re.match(r"invalid value \(nan\) encountered in div " + at(f, "x = x + v / v"),
                    lines[0])
    assert re.match(r"\s+inside scan " + at(f, "for v in xs:"), lines[1])
    # Without a zero the loop runs and sums.
    assert float(pyree.jit(f)(np.float32(1.0), xs + 1)) == 5.0


def test_nan_in_while_loop_with_traced_bound(nans):
    def f(x, n):
        i = 0
        while i < n:
            i = i + 1
            x = x - jnp.sqrt(x - 3.0)
        return x

    # x: 5, 3.59, 2.82, then sqrt of a negative at the third step.
    with pytest.raises(FloatingPointError) as info:
        pyree.jit(f)(np.float32(5.0), np.int32(6))
    lines = str(info.value).splitlines()
    assert re.match(r"invalid value \(nan\) encountered in sqrt " + at(f, "jnp.sqrt("), lines[0])
    assert re.match(r"\s+inside while " + at(f, "while i < n:"), lines[1])
    expected = np.float32(5.0) - np.sqrt(np.float32(2.0))
    assert float(pyree.jit(f)(np.float32(5.0), np.int32(1))) == pytest.approx(expected)


def test_nan_in_lax_cond_branch(nans):
    def bad(x):
        return jnp.arccos(x * 2.0)

    def f(x):
        return lax.cond(x.sum() > 0, bad, lambda x: x, x)

    with pytest.raises(FloatingPointError) as info:
        pyree.jit(f)(np.array([0.25, 0.75], np.float32))
    lines = str(info.value).splitlines()
    assert "invalid value (nan) encountered in" in lines[0]
    assert re.search(at(bad, "jnp.arccos("), lines[0])
    assert re.search(r"inside cond " + at(f, "lax.cond("), "\n".join(lines[1:]))
    np.testing.assert_allclose(np.asarray(pyree.jit(f)(np.array([0.25, 0.1], np.float32))),
                               np.arccos([0.5, 0.2]), rtol=1e-6)


def test_nan_in_python_if_and_while_bodies_names_the_body_line(nans):
    def f(x):
        if x > 0:
            y = jnp.log(x - 2.0)
        else:
            y = x
        return y

    with pytest.raises(FloatingPointError, match=r"encountered in log " + at(f, "jnp.log(")):
        pyree.jit(f)(np.float32(1.0))

    def g(x, n):
        i = 0
        while i < n:
            x = x - jnp.sqrt(x - 3.0)
            i = i + 1
        return x

    with pytest.raises(FloatingPointError, match=r"encountered in sqrt " + at(g, "jnp.sqrt(")):
        pyree.jit(g)(np.float32(5.0), np.int32(6))


def test_complex_results_are_checked(nans):
    def f(z):
        return z / z

    z = np.array([1 + 1j, 0j], np.complex64)
    with pytest.raises(FloatingPointError, match=r"encountered in div " + at(f, "z / z")):
        pyree.jit(f)(z)


def test_eager_ops_raise_at_the_user_line(nans):
    x = jnp.asarray([-1.0, 4.0])
    with pytest.raises(FloatingPointError) as info:
        jnp.log(x)  # the line
    line = inspect.currentframe().f_lineno - 1
    assert re.match(rf"invalid value \(nan\) encountered in log at \S*{HERE}:{line}: "
                    rf"jnp.log\(x\)  # the line$", str(info.value))
    np.testing.assert_allclose(np.asarray(jnp.sqrt(x[1:])), [2.0])
    # A NaN in the operands raises too (as in JAX), saying it was not produced here.
    y = pyree.device_put(np.array([np.nan, 1.0], np.float32))
    with pytest.raises(FloatingPointError, match=r"encountered in add .*\n.*already held the "
                                                 r"nan: it was not produced here"):
        y + 1.0


def test_debug_infs(infs):
    def f(x):
        y = x * 2.0
        return 1.0 / y

    x = np.array([1.0, 0.0], np.float32)
    with pytest.raises(FloatingPointError,
                       match=r"invalid value \(inf\) encountered in div " + at(f, "1.0 / y")):
        pyree.jit(f)(x)
    with pytest.raises(FloatingPointError, match=r"\(inf\) encountered in exp"):
        jnp.exp(jnp.asarray([100.0]))
    # debug_infs alone lets NaNs through.
    assert np.isnan(np.asarray(pyree.jit(jnp.log)(np.float32(-1.0))))


def test_both_options_name_the_first_bad_op(config_restored):
    pyree.config.update("debug_nans", True)
    pyree.config.update("debug_infs", True)

    def f(x):
        big = x * 1e30
        huge = big * 1e30
        return huge - huge

    with pytest.raises(FloatingPointError,
                       match=r"\(inf\) encountered in mul " + at(f, "huge = big * 1e30")):
        pyree.jit(f)(np.float32(1.0))


def test_option_off_returns_nans(config_restored):
    pyree.config.update("debug_nans", False)
    pyree.config.update("debug_infs", False)
    assert not nan_check.enabled
    f = pyree.jit(lambda x: (jnp.log(x), 1.0 / x))
    logs, inverse = f(np.array([-1.0, 0.0, 1.0], np.float32))
    assert np.isnan(np.asarray(logs)[0]) and np.asarray(logs)[2] == 0
    assert np.asarray(inverse)[1] == np.inf
    assert np.isnan(np.asarray(jnp.log(jnp.asarray(-1.0))))


def test_option_toggles_without_recompiling(config_restored):
    f = pyree.jit(lambda x: jnp.sqrt(x) + 1.0)
    x = np.array([-1.0, 4.0], np.float32)
    pyree.config.update("debug_nans", False)
    text_off = f.lower(x).as_text()
    assert np.isnan(np.asarray(f(x))[0])
    pyree.config.update("debug_nans", True)
    assert nan_check.enabled
    assert f.lower(x).as_text() == text_off  # the compiled program is the same
    with pytest.raises(FloatingPointError, match="encountered in sqrt"):
        f(x)
    assert len(f._cache) == 1  # one trace and compile served both
    pyree.config.update("debug_nans", False)
    assert not nan_check.enabled
    np.testing.assert_array_equal(np.asarray(f(x)), [np.nan, 3.0])


def test_nan_argument_flowing_through_raises_like_jax(nans):
    # JAX 0.10.2 under debug_nans raises FloatingPointError for jit(lambda x: x + 1) of a NaN
    # argument (its op-by-op re-run finds no culprit, and it raises a generic error); pyree
    # raises too, saying that the NaN came in with the arguments.
    f = pyree.jit(lambda x: x + 1.0)
    with pytest.raises(FloatingPointError) as info:
        f(np.array([np.nan, 1.0], np.float32))
    message = str(info.value)
    assert "encountered in" not in message
    assert re.match(r"invalid value \(nan\) in the results of the jitted function called at "
                    rf"\S*{HERE}:\d+: f\(np.array", message)
    assert "it was in the arguments" in message
    # NaN-free arguments: fine.
    np.testing.assert_array_equal(np.asarray(f(np.array([0.0, 1.0], np.float32))), [1.0, 2.0])


def test_nan_constant_in_function(nans):
    with pytest.raises(FloatingPointError, match=r"comes from a constant in the function"):
        pyree.jit(lambda x: x + jnp.nan)(np.float32(1.0))


def test_pytree_results_and_integer_leaves(nans):
    def f(x):
        return {"count": jnp.sum(x > 0), "mean": x.mean(), "bad": [x, jnp.arcsin(x)]}

    out = pyree.jit(f)(np.array([0.5, -0.5], np.float32))
    np.testing.assert_allclose(np.asarray(out["bad"][1]), np.arcsin([0.5, -0.5]), rtol=1e-6)
    assert int(out["count"]) == 1
    with pytest.raises(FloatingPointError, match=r"encountered in asin|encountered in "):
        pyree.jit(f)(np.array([0.5, -1.5], np.float32))


def test_grad_backward_nan(nans):
    # d/dx (sqrt(x) * 0) at 0 is 0 * inf in the backward pass: NaN (as in JAX). AD re-binds
    # each equation under the location of the one it differentiates (trace.located), so the
    # backward operation names sqrt's line, not the line that called grad.
    def loss(x):
        y = jnp.sqrt(x)
        return (y * 0.0).sum()

    grad = pyree.grad(loss)
    sqrt_at = r"invalid value \(nan\) encountered in (mul|div) " + at(loss, "jnp.sqrt(")
    with pytest.raises(FloatingPointError, match=sqrt_at):
        grad(jnp.zeros(2))  # eager
    with pytest.raises(FloatingPointError, match=sqrt_at):
        pyree.jit(grad)(jnp.zeros(2))
    np.testing.assert_allclose(np.asarray(pyree.jit(grad)(jnp.ones(2))), [0.0, 0.0])


def test_backward_nan_inside_a_while_loop_names_the_body_line(nans):
    # Reverse mode turns the while loop into loops of its own (a counted forward pass, then
    # the steps backwards): the search runs those step by step too.
    def g(x):
        y = x
        while y < 5.0:
            y = jnp.sqrt(y * y) * 0.0 + y + 1.0  # d sqrt at 0: inf * 0
        return y

    with pytest.raises(FloatingPointError, match=r"encountered in (mul|div) " +
                       at(g, "jnp.sqrt(y * y)") + r"\n  inside \w+ " + at(g, "while y <")):
        pyree.jit(pyree.grad(g))(0.0)
    assert float(pyree.jit(pyree.grad(g))(1.0)) == pytest.approx(1.0)


def test_custom_jvp_rule_keeps_its_own_lines(nans):
    # Equations a user's custom JVP rule binds carry the rule's lines, not the function's.
    @pyree.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), t * jnp.log(x - 1.0)  # NaN below 1

    with pytest.raises(FloatingPointError, match=at(f_jvp, "jnp.log(x - 1.0)")):
        pyree.jit(pyree.grad(lambda x: f(x) * 2.0))(0.5)
    assert float(pyree.jit(pyree.grad(lambda x: f(x) * 2.0))(3.0)) == pytest.approx(
        2 * np.log(2.0), rel=1e-6)


def test_environment_variables(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import numpy as np, pyree, pyree.numpy as jnp\n"
        "assert pyree.config.debug_nans is True and pyree.config.debug_infs is True\n"
        "f = pyree.jit(lambda x: x * 2.0)\n"
        "try:\n"
        "    f(np.float32(1.0)), jnp.log(jnp.asarray(-2.0))\n"
        "except FloatingPointError as e:\n"
        "    print(e)\n")
    env = dict(os.environ, PYREE_DEBUG_NANS="1", PYREE_DEBUG_INFS="true")
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"invalid value (nan) encountered in log at {script}:5: f(np.float32(1.0)), jnp.log(")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_floats_are_checked(nans, dtype):
    def f(x):
        return jnp.sqrt(x) * 2

    x = jnp.asarray([4.0, -1.0], dtype=getattr(jnp, dtype))
    with pytest.raises(FloatingPointError, match=r"encountered in sqrt " + at(f, "jnp.sqrt(")):
        pyree.jit(f)(x)
    with pytest.raises(FloatingPointError, match=r"encountered in sqrt"):
        jnp.sqrt(x)
    np.testing.assert_array_equal(np.asarray(pyree.jit(f)(x[:1]), np.float32), [4.0])


def test_programs_with_runtime_checks_and_prints(nans, capfd):
    def f(x):
        print("x is", x)
        assert x > 0, "x must be positive"
        return jnp.log(x - 2.0)

    g = pyree.jit(f)
    with pytest.raises(FloatingPointError, match=r"encountered in log " + at(f, "jnp.log(")):
        g(np.float32(1.0))
    # The re-run does not print again.
    assert capfd.readouterr().out.count("x is") == 1
    with pytest.raises(AssertionError, match="x must be positive"):
        g(np.float32(-1.0))
    assert float(g(np.float32(3.0))) == 0.0
