"""Builds the PTX of pyree's CUDA kernels (transpiler/backend/cuda_gemm.cu) with NVIDIA's NVRTC,
after a change to the source (needs the ``cuda-kernels`` extra)::

    python -m pyree.transpiler.backend.build_cuda_kernels                     # the shipped build
    python -m pyree.transpiler.backend.build_cuda_kernels pad /tmp/pad.json.gz  # a tuning variant

(A module of its own: run as ``-m``, cuda_gemm would be imported twice, once by the package.)
"""
import sys

from pyree.transpiler.backend import cuda_gemm


def main(argv: list) -> None:
    if len(argv) not in (0, 2):
        sys.exit("usage: python -m pyree.transpiler.backend.build_cuda_kernels "
                 "[VARIANT OUT.json.gz]")
    variant, out = (argv[0], argv[1]) if argv else ("default", cuda_gemm.PTX_FILE)
    built = cuda_gemm.build(variant=variant, out=out)
    print(f"{len(built['kernels'])} kernels ({variant}) -> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
