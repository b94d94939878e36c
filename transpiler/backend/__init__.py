"""The backend's machinery: lowering IR to StableHLO (``lower``), eager mode (``eager``,
``eager_warmup``), pyree's CUDA kernels (``cuda_gemm``, ``build_cuda_kernels``), the float32 and
float64 numerics lowering rules build on (``float32_math``, ``float64_math``), and ``spmd``,
``pmap``'s interpreter (its device transfers are lowered here).

It imports no family, program or front end; the lowering and eager rules of each primitive are
its family's, registered in ``lower.lowering_rules`` and ``eager.EAGER_RULES``.

Example: ``from pyree.transpiler.backend.lower import lower_closed_ir``
"""
