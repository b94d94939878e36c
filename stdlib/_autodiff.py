"""``grad`` and friends, with JAX's signatures, on the IR transformations of
transpiler/interpreters/ad.py.

The function is traced to IR (converted by the transpiler, so Python control flow is fine),
then differentiated symbolically: forward mode by the JVP interpreter, reverse mode by
transposing the linear part of the JVP. Outside ``jit`` the derivative runs eagerly; inside, it
is traced into the enclosing program.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

import pyree.numpy  # noqa: F401 (installs the array operators traced functions use)
from pyree import dtypes, tree_util
from pyree.transpiler.interpreters import ad
from pyree.transpiler.core.ir import ClosedIR, ShapedArray
from pyree.transpiler.programs.jit import float0_in_structure
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import TypedScalar, get_aval, read_env, trace_to_ir

def _converted(fun: Callable) -> Callable:
    from pyree.transpiler.frontend.convert import converted
    return converted(fun)


class _Aux:
    """The auxiliary output of a ``has_aux`` function, traced along with the main output: its
    traced leaves are extra outputs of the IR (after the main ones), so that they come back as
    values rather than as tracers of a trace that has ended; other leaves are kept as they are."""

    def __init__(self, tree: Any, leaves: list, traced: list[bool]) -> None:
        self.tree = tree
        self.leaves = leaves
        self.traced = traced

    @property
    def num_traced(self) -> int:
        return sum(self.traced)

    def rebuild(self, values: Sequence[Any]) -> Any:
        """The aux pytree, given the values of the traced leaves (in order)."""
        it = iter(_materialize(list(values)))
        return tree_util.tree_unflatten(
            self.tree, [next(it) if t else leaf for leaf, t in zip(self.leaves, self.traced)])


def _of_argnums(fun: Callable, args: Sequence[Any], kwargs: dict, nums: Sequence[int]
                ) -> Callable:
    """``fun`` (converted) as a function of the arguments at ``nums``, the others fixed."""
    fun_converted = _converted(fun)

    def partial_fun(*dyn: Any) -> Any:
        full = list(args)
        for i, v in zip(nums, dyn):
            full[i] = v
        return fun_converted(*full, **kwargs)
    return partial_fun


def _trace(fun: Callable, flat_args: Sequence[Any], in_tree, has_aux: bool = False
           ) -> tuple[ClosedIR, Any, Optional[_Aux]]:
    """Trace ``fun`` on the flattened arguments: (IR, output tree, aux). With ``has_aux`` the
    IR's outputs are the main output's leaves followed by the aux's traced leaves."""
    from pyree.transpiler.frontend.convert import converted
    from pyree.transpiler.core.trace import Tracer
    fn = converted(fun)
    box: dict = {}

    def flat_fun(*xs):
        args = tree_util.tree_unflatten(in_tree, list(xs))
        out = fn(*args)
        aux_outs: list = []
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(f"has_aux=True: the function must return a pair (output, aux), "
                                f"got {type(out).__name__}{where(None)}")
            out, aux = out
            aux_leaves, aux_tree = tree_util.tree_flatten(aux)
            traced = [isinstance(leaf, Tracer) for leaf in aux_leaves]
            box["aux"] = _Aux(aux_tree, aux_leaves, traced)
            aux_outs = [leaf for leaf, t in zip(aux_leaves, traced) if t]
        # (float0 results, integer values' cotangents, are part of the structure: no data.)
        leaves, box["tree"] = tree_util.tree_flatten(float0_in_structure(out))
        return leaves + aux_outs

    avals = [get_aval(x) for x in flat_args]
    closed = trace_to_ir(flat_fun, avals, top_level=False)
    return closed, box["tree"], box.get("aux")


def _flatten_args(args: Any, what: str) -> tuple[list, Any]:
    leaves, tree = tree_util.tree_flatten(args)
    for leaf in leaves:
        try:
            get_aval(leaf)
        except TypeError:
            raise TypeError(f"{what} must be arrays, scalars or pytrees of them; got a "
                            f"{type(leaf).__name__}{where(None)}") from None
    return leaves, tree


def _flatten_tangents(tangents: Any, what: str) -> tuple[list, Any]:
    """``_flatten_args`` for tangents, whose leaves may also be float0 arrays (JAX's tangents
    of integer and boolean values)."""
    leaves, tree = tree_util.tree_flatten(tangents)
    _flatten_args([leaf for leaf in leaves if not dtypes._is_float0(leaf)], what)
    return leaves, tree


def _check_tangent(primal: Any, tangent: Any) -> None:
    """A tangent's shape is its primal's; its dtype too for a float primal, and float0 (or,
    more leniently than JAX, any number dtype) for an integer or boolean one."""
    pa = get_aval(primal)
    if dtypes._is_float0(tangent):
        if tangent.shape != pa.shape:
            raise ValueError(f"jvp called with different primal and tangent shapes: "
                             f"{pa.str_short()} and float0{list(tangent.shape)}{where(None)}")
        if ad.is_differentiable(pa):
            raise TypeError(f"a float0 tangent was given for a primal of dtype "
                            f"{pa.dtype.name}: float0 is the tangent of integer and boolean "
                            f"values only{where(None)}")
        return
    ta = get_aval(tangent)
    if pa.shape != ta.shape:
        raise ValueError(f"jvp called with different primal and tangent shapes: "
                         f"{pa.str_short()} and {ta.str_short()}{where(None)}")
    if ad.is_differentiable(pa) and pa.dtype != ta.dtype:
        raise TypeError(f"primal and tangent arguments to jvp do not match; dtypes must be "
                        f"equal: {pa.dtype.name} and {ta.dtype.name}{where(None)}")


def _output_tangents(outs: Sequence[Any], touts: Sequence[Any]) -> list:
    """The tangents of ``outs``: integer and boolean outputs get JAX's float0 zeros."""
    return [ad.instantiate(t) if ad.is_differentiable(get_aval(o)) or not isinstance(t, ad.Zero)
            else dtypes._float0_zeros(get_aval(o).shape) for o, t in zip(outs, touts)]


def _check_float_inputs(leaves: Sequence[Any], name: str, allow_int: bool) -> None:
    if allow_int:
        return
    for leaf in leaves:
        aval = get_aval(leaf)
        if not ad.is_differentiable(aval):
            raise TypeError(
                f"{name} requires real- or complex-valued inputs (input dtype that is a "
                f"sub-dtype of np.inexact), but got {aval.dtype.name}. If you want to use "
                f"Boolean- or integer-valued inputs, use vjp or set allow_int to True."
                f"{where(None)}")


def _zeros_for(leaf: Any) -> Any:
    from pyree import lax
    aval = get_aval(leaf)
    return lax.full(aval.shape, 0, aval.dtype)


# -- forward mode ------------------------------------------------------------------------------------

def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> Any:
    """Evaluate ``fun`` and its directional derivative: ``(fun(*primals), J @ tangents)``.
    As in JAX, an integer or boolean primal's tangent is float0 zeros
    (``np.zeros(shape, pyree.dtypes.float0)``; zeros of a number dtype are taken too), and
    integer and boolean outputs' tangents are float0 zeros.

    Example::

        y, dy = pyree.jvp(jnp.sin, (x,), (jnp.ones_like(x),))   # dy == cos(x)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp's primals and tangents must be tuples (or lists) of arguments")
    p_leaves, p_tree = _flatten_args(tuple(primals), "jvp primals")
    t_leaves, t_tree = _flatten_tangents(tuple(tangents), "jvp tangents")
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jvp must have the same tree structure;"
                        f" primals have {p_tree}, tangents have {t_tree}{where(None)}")
    for p, t in zip(p_leaves, t_leaves):
        _check_tangent(p, t)
    closed, out_tree, aux = _trace(fun, p_leaves, p_tree, has_aux)
    ts = [t if ad.is_differentiable(get_aval(p)) else ad.Zero(get_aval(p))
          for p, t in zip(p_leaves, t_leaves)]
    outs, touts = ad.jvp_eval(closed, p_leaves, ts)
    n_out = out_tree.num_leaves
    aux_values, outs, touts = outs[n_out:], outs[:n_out], touts[:n_out]
    result = (tree_util.tree_unflatten(out_tree, _materialize(outs)),
              tree_util.tree_unflatten(out_tree, _output_tangents(outs, touts)))
    return result + (aux.rebuild(aux_values),) if has_aux else result


def _materialize(values: Sequence[Any]) -> list:
    from pyree import lax
    return [lax.broadcast_in_dim(v, (), ()) if isinstance(v, TypedScalar) else v
            for v in values]


def linearize(fun: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``fun(*primals)`` and its linear approximation as a function of tangents.

    Example::

        y, f_jvp = pyree.linearize(jnp.sin, x)
        f_jvp(jnp.ones_like(x))          # cos(x)
    """
    p_leaves, p_tree = _flatten_args(primals, "linearize primals")
    closed, out_tree, _ = _trace(fun, p_leaves, p_tree)
    nonzero = [ad.is_differentiable(get_aval(p)) for p in p_leaves]
    lin, out_nonzero = ad.linearize_closed(closed, nonzero)
    env = ad.forward_pass(lin, p_leaves)
    outs = _materialize([read_env(env, a) for a in lin.primal_out])

    def f_jvp(*tangents: Any) -> Any:
        t_leaves, t_tree = _flatten_tangents(tangents, "linearized function's tangents")
        if t_tree != p_tree:
            raise TypeError(f"expected tangents with structure {p_tree}, got {t_tree}")
        for p, t in zip(p_leaves, t_leaves):
            _check_tangent(p, t)
        ts = [t for t, nz in zip(t_leaves, nonzero) if nz]
        touts = iter(ad.linear_eval(lin, env, ts))
        full = [next(touts) if ad.is_differentiable(get_aval(o))
                else dtypes._float0_zeros(get_aval(o).shape) for o in outs]
        return tree_util.tree_unflatten(out_tree, full)

    return tree_util.tree_unflatten(out_tree, outs), f_jvp


# -- reverse mode ------------------------------------------------------------------------------------

def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """``fun(*primals)`` and a function mapping output cotangents to input cotangents. The
    cotangent of an integer or boolean input is, as in JAX, a NumPy array of zeros of dtype
    ``pyree.dtypes.float0`` (it holds no data) of the input's shape.

    Example::

        y, f_vjp = pyree.vjp(lambda x: (x ** 2).sum(), x)
        (g,) = f_vjp(1.0)                # 2 * x
        _, f_vjp = pyree.vjp(lambda x, n: x * n, 2.0, 3)
        f_vjp(1.0)                       # (3.0, float0 zeros of shape ())
    """
    return _vjp(fun, primals, has_aux, integer_cotangents="float0")


def _vjp(fun: Callable, primals: tuple, has_aux: bool, integer_cotangents: str) -> Any:
    """``vjp``; ``integer_cotangents`` is what integer and boolean inputs get: "float0" (JAX's
    float0 zeros) or "zeros" (zeros of their own dtype: jacrev stacks them, as JAX's does)."""
    p_leaves, p_tree = _flatten_args(primals, "vjp primals")
    closed, out_tree, aux = _trace(fun, p_leaves, p_tree, has_aux)
    nonzero = [ad.is_differentiable(get_aval(p)) for p in p_leaves]
    lin, _ = ad.linearize_closed(closed, nonzero)
    env = ad.forward_pass(lin, p_leaves)
    all_outs = _materialize([read_env(env, a) for a in lin.primal_out])
    n_out = out_tree.num_leaves
    outs, aux_values = all_outs[:n_out], all_outs[n_out:]
    out_avals = [get_aval(o) for o in outs]
    # The aux outputs are outputs of the linearized IR too; no cotangent flows into them.
    aux_cts = [ad.Zero(ad.tangent_aval(get_aval(a))) for a in aux_values
               if ad.is_differentiable(get_aval(a))]

    def f_vjp(cotangents: Any) -> tuple:
        ct_leaves, ct_tree = tree_util.tree_flatten(cotangents)
        if ct_tree != out_tree:   # float0 outputs are part of the structure (see _trace)
            ct_leaves, ct_tree = tree_util.tree_flatten(float0_in_structure(cotangents))
        if ct_tree != out_tree:
            raise TypeError(f"the cotangent must have the output's structure {out_tree}, got "
                            f"{ct_tree}{where(None)}")
        cts = []
        for ct, aval in zip(ct_leaves, out_avals):
            # (An integer output's cotangent may be JAX's float0 zeros, or zeros.)
            shape = ct.shape if dtypes._is_float0(ct) else get_aval(ct).shape
            if shape != aval.shape:
                raise ValueError(f"the cotangent has shape {shape} but the output has "
                                 f"shape {aval.shape}{where(None)}")
            if dtypes._is_float0(ct) and ad.is_differentiable(aval):
                raise TypeError(f"a float0 cotangent was given for an output of dtype "
                                f"{aval.dtype.name}: float0 is the cotangent of integer and "
                                f"boolean outputs only{where(None)}")
            if ad.is_differentiable(aval):  # non-differentiable outputs have no tangent
                cts.append(_cast(ct, aval.dtype))
        in_cts = ad.backward_pass(lin, env, cts + aux_cts)
        it = iter(in_cts)
        result = []
        for p, nz in zip(p_leaves, nonzero):
            ct = next(it) if nz else None
            p_aval = get_aval(p)
            if ct is not None:
                ct = ad.instantiate(ct)
            elif not nz and integer_cotangents == "float0":
                result.append(dtypes._float0_zeros(p_aval.shape))
                continue
            else:
                ct = _zeros_for(p)
            if (p_aval.weak_type and get_aval(ct).dtype == p_aval.dtype
                    and p_aval.dtype.kind == "f"):
                # As in JAX, the cotangent of a Python float is weakly typed too (grad at 3.0
                # plus a bfloat16 array stays bfloat16). Not a complex one: JAX builds those
                # from real and imaginary parts with a strong zero.
                from pyree.numpy._util import convert
                ct = convert(ct, p_aval.dtype, True)
            result.append(ct)
        return tree_util.tree_unflatten(p_tree, _materialize(result))

    result = (tree_util.tree_unflatten(out_tree, outs), f_vjp)
    return result + (aux.rebuild(aux_values),) if has_aux else result


def _cast(x: Any, dtype: np.dtype) -> Any:
    from pyree.numpy._util import convert
    aval = get_aval(x)
    if aval.dtype == dtype and not isinstance(x, (int, float, complex, np.generic)):
        return x
    return convert(x, dtype)


def _argnums(argnums: Union[int, Sequence[int]]) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, int):
        return (argnums,), True
    return tuple(operator.index(a) for a in argnums), False


def value_and_grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """A function returning ``(fun(*args), gradient of fun at args)``; ``fun`` must return a
    real scalar.

    Example::

        loss, grads = pyree.value_and_grad(loss_fn)(params, batch)
    """
    nums, single = _argnums(argnums)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        if max(nums, default=-1) >= len(args):
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at "
                            f"least {max(nums) + 1} positional arguments, got {len(args)}")
        diff_args = [args[i] for i in nums]
        leaves, _ = _flatten_args(tuple(diff_args), "differentiated arguments")
        _check_float_inputs(leaves, "grad", allow_int)

        partial_fun = _of_argnums(fun, args, kwargs, nums)

        if has_aux:
            ans, f_vjp, aux = vjp(partial_fun, *diff_args, has_aux=True)
        else:
            ans, f_vjp = vjp(partial_fun, *diff_args)
        aval = get_aval(ans) if not isinstance(ans, (tuple, list, dict)) else None
        if aval is None or aval.shape != ():
            shape = aval.shape if aval is not None else type(ans).__name__
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had "
                            f"shape: {shape}{where(None)}")
        if not ad.is_differentiable(aval):
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype "
                            f"of np.floating), but got {aval.dtype.name}{where(None)}")
        from pyree import lax
        grads = f_vjp(lax.full((), 1, aval.dtype))
        g = grads[0] if single else tuple(grads)
        return ((ans, aux), g) if has_aux else (ans, g)

    return value_and_grad_fun


def grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The gradient of a real scalar function, with respect to argument ``argnums``. With
    ``allow_int=True`` integer and boolean arguments are allowed, and their gradients are, as
    in JAX, NumPy arrays of zeros of dtype ``pyree.dtypes.float0`` (no data) of their shapes.

    Example::

        df = pyree.grad(lambda x: jnp.sin(x) * x)
        df(1.0)                          # cos(1) + sin(1)
        pyree.grad(lambda x, n: x * n, argnums=1, allow_int=True)(2.0, 3).dtype   # float0
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_fun


# -- Jacobians ---------------------------------------------------------------------------------------

def _basis(aval: ShapedArray) -> Any:
    """The one-hot arrays of ``aval``'s shape, one per element (row-major), stacked: shape
    ``(size,) + aval.shape``."""
    from pyree import lax
    import pyree.numpy as jnp
    return lax.reshape(jnp.eye(aval.size, dtype=aval.dtype), (aval.size,) + aval.shape)


def _jacobian_block(stacked: Any, first: tuple, second: tuple, dtype: np.dtype,
                    swap: bool) -> Any:
    """Per-element results stacked along axis 0 (one per element of ``first``, each of shape
    ``second``) as an array of shape ``first + second``, or ``second + first`` if ``swap``."""
    from pyree import lax
    if stacked is None:  # no elements to stack
        return _zeros_for(jnp_empty(second + first if swap else first + second, dtype))
    block = lax.reshape(stacked, first + second)
    if not swap:
        return block
    n1, n2 = len(first), len(second)
    return lax.transpose(block, tuple(range(n1, n1 + n2)) + tuple(range(n1)))


def jacfwd(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` by forward mode: the JVPs along every input direction, batched
    by ``vmap`` into one program; output dimensions first, then input dimensions.

    Example::

        pyree.jacfwd(lambda x: x ** 2)(jnp.arange(3.0))   # diag(2 * x)
    """
    from pyree._vmap import vmap
    nums, single = _argnums(argnums)

    def jac_fun(*args: Any, **kwargs: Any) -> Any:
        diff = [args[i] for i in nums]
        d_leaves, d_tree = _flatten_args(tuple(diff), "jacfwd arguments")
        _check_float_inputs(d_leaves, "jacfwd", False)

        partial_fun = _of_argnums(fun, args, kwargs, nums)

        closed, out_tree, aux = _trace(partial_fun, d_leaves, d_tree, has_aux)
        n_out = out_tree.num_leaves
        out_avals = closed.ir.out_avals[:n_out]
        per_input = []
        for k, leaf in enumerate(d_leaves):
            aval = get_aval(leaf)

            def column(e: Any, k: int = k) -> list:
                ts = [e if j == k else ad.Zero(get_aval(d)) for j, d in enumerate(d_leaves)]
                _, touts = ad.jvp_eval(closed, d_leaves, ts)
                return [ad.instantiate(t) for t in touts[:n_out]]

            columns = vmap(column)(_basis(aval)) if aval.size else [None] * n_out
            per_input.append([_jacobian_block(c, aval.shape, o.shape, o.dtype, swap=True)
                              for c, o in zip(columns, out_avals)])
        jac = _assemble(per_input, out_tree, d_tree, single)
        if not has_aux:
            return jac
        outs, _ = ad.jvp_eval(closed, d_leaves, [ad.Zero(get_aval(d)) for d in d_leaves])
        return jac, aux.rebuild(outs[n_out:])

    return jac_fun


def jnp_empty(shape: tuple, dtype: np.dtype) -> Any:
    import pyree.numpy as jnp
    return jnp.zeros(shape, dtype)


def _assemble(per_input: list, out_tree, in_tree, single: bool) -> Any:
    """Jacobian blocks [input leaf][output leaf] arranged as JAX does: the output's structure,
    each leaf holding the structure of the differentiated arguments."""
    n_out = out_tree.num_leaves
    out_leaves = []
    for o in range(n_out):
        in_part = tree_util.tree_unflatten(in_tree, [blocks[o] for blocks in per_input])
        out_leaves.append(in_part[0] if single else tuple(in_part))
    return tree_util.tree_unflatten(out_tree, out_leaves)


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` by reverse mode: the VJPs of every output direction, batched by
    ``vmap`` into one program.

    Example::

        pyree.jacrev(lambda x: jnp.sin(x))(jnp.arange(3.0))   # diag(cos(x))
    """
    from pyree._vmap import vmap
    nums, single = _argnums(argnums)

    def jac_fun(*args: Any, **kwargs: Any) -> Any:
        diff = [args[i] for i in nums]
        d_leaves, d_tree = _flatten_args(tuple(diff), "jacrev arguments")
        _check_float_inputs(d_leaves, "jacrev", allow_int)

        partial_fun = _of_argnums(fun, args, kwargs, nums)

        if has_aux:
            ans, f_vjp, aux = _vjp(partial_fun, diff, True, integer_cotangents="zeros")
        else:
            ans, f_vjp = _vjp(partial_fun, diff, False, integer_cotangents="zeros")
        out_leaves, out_tree = tree_util.tree_flatten(ans)
        per_input: list = [[None] * len(out_leaves) for _ in d_leaves]
        for o, out in enumerate(out_leaves):
            o_aval = get_aval(out)

            def row(e: Any, o: int = o) -> list:
                cts = [e if j == o else _zeros_for(x) for j, x in enumerate(out_leaves)]
                return tree_util.tree_leaves(f_vjp(tree_util.tree_unflatten(out_tree, cts)))

            rows = vmap(row)(_basis(o_aval)) if o_aval.size else [None] * len(d_leaves)
            for k, leaf in enumerate(d_leaves):
                aval = get_aval(leaf)
                per_input[k][o] = _jacobian_block(rows[k], o_aval.shape, aval.shape,
                                                  aval.dtype, swap=False)
        jac = _assemble(per_input, out_tree, d_tree, single)
        return (jac, aux) if has_aux else jac

    return jac_fun


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar function: ``jacfwd(jacrev(fun))``.

    Example::

        pyree.hessian(lambda x: (x ** 3).sum())(jnp.arange(3.0))   # diag(6 * x)
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


jacobian = jacrev  # jax.jacobian: reverse mode, as in JAX


# -- transposes and closures ---------------------------------------------------------------------

def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence[Any] = ()) -> Callable:
    """The transpose of a linear function ``fun`` (``jax.linear_transpose``): a function of
    a cotangent shaped like ``fun``'s output that returns a tuple of cotangents shaped like
    ``primals`` (arrays or ``ShapeDtypeStruct``; only their shapes and dtypes count). It is
    ``fun``'s VJP, which for a linear function does not depend on the point.

    Example::

        t = pyree.linear_transpose(lambda x: 2.0 * x[::-1], jnp.zeros(3))
        t(jnp.array([1.0, 2.0, 3.0]))     # (Array([6., 4., 2.]),)
    """
    from pyree import lax
    if reduce_axes:
        raise NotImplementedError("linear_transpose: reduce_axes is not supported")
    leaves, tree = tree_util.tree_flatten(primals)
    zeros = []
    for leaf in leaves:
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        aval = get_aval(leaf) if shape is None or dtype is None else ShapedArray(shape, dtype)
        zeros.append(lax.full(aval.shape, 0, aval.dtype))
    zero_primals = tree_util.tree_unflatten(tree, zeros)
    out, f_vjp = _vjp(fun, tuple(zero_primals), False, integer_cotangents="zeros")
    out_leaves, out_tree = tree_util.tree_flatten(out)
    in_float = [ad.is_differentiable(get_aval(z)) for z in zeros]
    out_float = [ad.is_differentiable(get_aval(o)) for o in out_leaves]
    if any(in_float) and not all(out_float) or any(out_float) and not all(in_float):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        "complex], and integer -> integer functions")
    out_avals = [get_aval(o) for o in out_leaves]

    def transposed(out_cotangent: Any) -> tuple:
        ct_leaves, ct_tree = tree_util.tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output: expected "
                            f"{out_tree}, got {ct_tree}{where(None)}")
        for ct, aval in zip(ct_leaves, out_avals):
            ct_aval = get_aval(ct)
            if ct_aval.shape != aval.shape or ct_aval.dtype != aval.dtype:
                raise TypeError(f"cotangent type does not match function output: expected "
                                f"{aval.str_short()}, got {ct_aval.str_short()}{where(None)}")
        return tuple(f_vjp(out_cotangent))

    return transposed


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list]:
    """``fun`` with the traced values it closes over made explicit (``jax.closure_convert``):
    returns ``(converted, consts)`` where ``converted(*args, *consts)`` computes
    ``fun(*args)``. Only values that may carry derivatives are hoisted: closed-over floating
    tracers of an enclosing ``jit``, ``grad`` or ``vmap`` trace; concrete arrays and integer
    tracers stay inside (so outside any trace ``consts`` is empty). Used to give
    ``custom_vjp`` functions closures' values as arguments.

    Example::

        def outer(x):
            g = lambda y: jnp.sin(x * y)            # closes over x
            g2, consts = pyree.closure_convert(g, 1.0)
            return g2(2.0, *consts)                 # == g(2.0)
    """
    from pyree.transpiler.core.trace import Tracer, eval_ir
    from pyree.transpiler.core.ir import ClosedIR
    leaves, in_tree = _flatten_args(example_args, "closure_convert example arguments")
    closed, out_tree, _ = _trace(fun, leaves, in_tree)
    hoisted = [i for i, c in enumerate(closed.consts)
               if isinstance(c, Tracer) and ad.is_differentiable(c.aval)]
    consts = [closed.consts[i] for i in hoisted]

    def converted(*args_and_consts: Any) -> Any:
        n_args = len(args_and_consts) - len(hoisted)
        args, given = args_and_consts[:n_args], args_and_consts[n_args:]
        values = list(closed.consts)
        for i, v in zip(hoisted, given):
            values[i] = v
        flat, tree = tree_util.tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted function was traced for "
                            f"arguments of structure {in_tree}, got {tree}{where(None)}")
        outs = eval_ir(ClosedIR(closed.ir, values), *flat)
        return tree_util.tree_unflatten(out_tree, _materialize(outs))

    return converted, consts
