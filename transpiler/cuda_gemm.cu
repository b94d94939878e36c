// pyree's GEMM kernels for NVIDIA GPUs (sm_80 and newer): C[b] = A[b] @ B[b] on tensor cores,
// float32 accumulation. Compiled to PTX by cuda_gemm.py (`python -m pyree.transpiler.cuda_gemm
// --build`, with NVRTC) and dispatched from modules through hal.dispatch.extern; see
// cuda_gemm.py for when and why.
//
// One kernel per (input type, output type, A layout, B layout), named
//   pyree_gemm_<in>_<out>_<a><b>, in: f32 (TF32 products), bf16, f16; out: f32 or the input's;
//   a: r = A stored M x K (row-major), c = A stored K x M; b: r = B stored K x N, c = N x K.
// Arguments, in IREE's order for hand-written CUDA kernels (bindings, then 32-bit constants):
//   A, B, C, M, N, K, lda, ldb, ldc, batch strides of A, B and C (all in elements).
// Workgroups: x over N / 128, y over M / 128, z over the batch; 128 threads (4 warps).
// Tiles move into shared memory by 16-byte asynchronous copies when A and B and their rows
// are 16-byte aligned (cuda_gemm.py pads the contiguous extent of each to a multiple of 16
// bytes, so that a copy is all inside or all outside the matrix), element by element if not.
#include <mma.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

using namespace nvcuda;

namespace {

constexpr int BM = 128;      // rows of C per workgroup
constexpr int BN = 128;      // columns of C per workgroup
constexpr int WARP_M = 64;   // each of the 4 warps computes a 64 x 64 block: 4 x 4 fragments
constexpr int WARP_N = 64;
constexpr int THREADS = 128;
constexpr int STAGE_BYTES = 20480;  // one A tile and one B tile (10240 bytes each, padded)

// Per input type: the fragment element type, the k of one tensor-core step, the k of one tile
// held in shared memory (64 bytes of a row), and the padding of shared rows (16 bytes: rows
// then start in different banks, and fragment pointers stay 32-byte aligned).
template <typename T> struct Kind;
template <> struct Kind<float> {
  using Frag = wmma::precision::tf32;
  static constexpr int WK = 8, BK = 16, PAD = 4;
};
template <> struct Kind<__nv_bfloat16> {
  using Frag = __nv_bfloat16;
  static constexpr int WK = 16, BK = 32, PAD = 8;
};
template <> struct Kind<__half> {
  using Frag = __half;
  static constexpr int WK = 16, BK = 32, PAD = 8;
};

template <bool, typename IF, typename ELSE> struct Pick { using type = IF; };
template <typename IF, typename ELSE> struct Pick<false, IF, ELSE> { using type = ELSE; };

__device__ __forceinline__ void copy16_async(void* shared, const void* global, bool inside) {
  // Outside the matrix, 0 bytes are read and the 16 are zero-filled.
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :: "r"(address), "l"(global), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n"); }
template <int PENDING> __device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING));
}

__device__ __forceinline__ float to_out(float x, float) { return x; }
__device__ __forceinline__ __nv_bfloat16 to_out(float x, __nv_bfloat16) { return __float2bfloat16(x); }
__device__ __forceinline__ __half to_out(float x, __half) { return __float2half(x); }

// Shared-memory tile shapes: a tile stored like its matrix (rows of the contiguous extent).
template <typename T, bool ROWS_OF_K> struct Tile {
  // ROWS_OF_K: a row of the tile runs along k (A row-major, B column-major): BM x BK;
  // else a row runs along m or n: BK x BM.
  static constexpr int LD = ROWS_OF_K ? Kind<T>::BK + Kind<T>::PAD : BM + Kind<T>::PAD;
};

// Reads one tile of ``matrix`` element by element (the path for operands whose rows are not
// 16-byte aligned: an operand can be a view at any offset of a larger buffer).
template <typename T, int ROWS, int COLS, int LD>
__device__ __forceinline__ void read_tile(T* tile, const T* matrix, int ld, int row0, int rows,
                                          int col0, int cols) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
    int r = i / COLS, c = i % COLS;
    bool inside = row0 + r < rows && col0 + c < cols;
    tile[r * LD + c] = inside ? matrix[(long long)(row0 + r) * ld + col0 + c] : static_cast<T>(0.0f);
  }
}

// Issues the copies of one tile of ``matrix`` (rows of ``ld`` elements) into ``tile``: rows
// ``row0``.. of the stored matrix (``rows`` of them), columns ``col0``.. (``cols`` of them).
// A tile is (ROWS x COLS) elements of the stored orientation.
template <typename T, int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile(T* tile, const T* matrix, int ld, int row0, int rows,
                                          int col0, int cols) {
  constexpr int CHUNK = 16 / sizeof(T);
  constexpr int PER_ROW = COLS / CHUNK;
  constexpr int COUNT = ROWS * PER_ROW;
  static_assert(COUNT % THREADS == 0, "tile copies split evenly over the threads");
#pragma unroll
  for (int i = 0; i < COUNT / THREADS; ++i) {
    int chunk = threadIdx.x + i * THREADS;
    int r = chunk / PER_ROW, c = (chunk % PER_ROW) * CHUNK;
    bool inside = row0 + r < rows && col0 + c < cols;
    const T* source = inside ? matrix + (long long)(row0 + r) * ld + col0 + c : matrix;
    copy16_async(tile + r * LD + c, source, inside);
  }
}

template <typename T, typename OutT, bool A_COL, bool B_COL>
__device__ __forceinline__ void gemm(const T* __restrict__ A, const T* __restrict__ B,
                                     OutT* __restrict__ C, int M, int N, int K, int lda,
                                     int ldb, int ldc, int strideA, int strideB, int strideC) {
  using K_ = Kind<T>;
  constexpr int BK = K_::BK, WK = K_::WK;
  constexpr int A_LD = Tile<T, !A_COL>::LD, B_LD = Tile<T, B_COL>::LD;
  using ALayout = typename Pick<A_COL, wmma::col_major, wmma::row_major>::type;
  using BLayout = typename Pick<B_COL, wmma::col_major, wmma::row_major>::type;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, WK, typename K_::Frag, ALayout>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, WK, typename K_::Frag, BLayout>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, WK, float>;

  __shared__ __align__(128) unsigned char shared[2 * STAGE_BYTES];
  const int batch = blockIdx.z;
  A += (long long)batch * strideA;
  B += (long long)batch * strideB;
  C += (long long)batch * strideC;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / 2) * WARP_M, wn = (warp % 2) * WARP_N;

  auto a_tile = [&](int stage) { return reinterpret_cast<T*>(shared + stage * STAGE_BYTES); };
  auto b_tile = [&](int stage) {
    return reinterpret_cast<T*>(shared + stage * STAGE_BYTES + STAGE_BYTES / 2);
  };
  constexpr int CHUNK = 16 / sizeof(T);
  const bool aligned =
      ((reinterpret_cast<unsigned long long>(A) | reinterpret_cast<unsigned long long>(B)) & 15) == 0
      && lda % CHUNK == 0 && ldb % CHUNK == 0;
  auto load_stage = [&](int stage, int k0) {
    if (aligned) {
      if (A_COL) load_tile<T, BK, BM, A_LD>(a_tile(stage), A, lda, k0, K, m0, M);
      else load_tile<T, BM, BK, A_LD>(a_tile(stage), A, lda, m0, M, k0, K);
      if (B_COL) load_tile<T, BN, BK, B_LD>(b_tile(stage), B, ldb, n0, N, k0, K);
      else load_tile<T, BK, BN, B_LD>(b_tile(stage), B, ldb, k0, K, n0, N);
    } else {
      if (A_COL) read_tile<T, BK, BM, A_LD>(a_tile(stage), A, lda, k0, K, m0, M);
      else read_tile<T, BM, BK, A_LD>(a_tile(stage), A, lda, m0, M, k0, K);
      if (B_COL) read_tile<T, BN, BK, B_LD>(b_tile(stage), B, ldb, n0, N, k0, K);
      else read_tile<T, BK, BN, B_LD>(b_tile(stage), B, ldb, k0, K, n0, N);
    }
    commit_copies();
  };

  FragC acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int tiles = (K + BK - 1) / BK;
  if (tiles > 0) load_stage(0, 0);
  for (int t = 0; t < tiles; ++t) {
    // Two stages: the next tile's copies run while this one is multiplied.
    if (t + 1 < tiles) {
      load_stage((t + 1) & 1, (t + 1) * BK);
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    __syncthreads();
    const T* as = a_tile(t & 1);
    const T* bs = b_tile(t & 1);
#pragma unroll
    for (int kk = 0; kk < BK; kk += WK) {
      FragA a[4];
      FragB b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int m = wm + i * 16;
        wmma::load_matrix_sync(a[i], A_COL ? as + kk * A_LD + m : as + m * A_LD + kk, A_LD);
        if (sizeof(T) == 4) {
#pragma unroll
          for (int e = 0; e < a[i].num_elements; ++e) a[i].x[e] = wmma::__float_to_tf32(a[i].x[e]);
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int n = wn + j * 16;
        wmma::load_matrix_sync(b[j], B_COL ? bs + n * B_LD + kk : bs + kk * B_LD + n, B_LD);
        if (sizeof(T) == 4) {
#pragma unroll
          for (int e = 0; e < b[j].num_elements; ++e) b[j].x[e] = wmma::__float_to_tf32(b[j].x[e]);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // before the next iteration's copies overwrite this stage
  }

  // Each warp writes its fragments through 1 KB of shared memory of its own, bounds-checked.
  float* scratch = reinterpret_cast<float*>(shared) + warp * 256;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int row0 = m0 + wm + i * 16, col = n0 + wn + j * 16 + lane % 16;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int r = e * 2 + lane / 16;
        if (row0 + r < M && col < N)
          C[(long long)(row0 + r) * ldc + col] = to_out(scratch[r * 16 + lane % 16], OutT());
      }
      __syncwarp();
    }
  }
}

}  // namespace

// Types by the names used in kernel names: f32, bf16, f16.
typedef float f32;
typedef __nv_bfloat16 bf16;
typedef __half f16;

#define PYREE_GEMM(NAME, T, OUT, A_COL, B_COL)                                                \
  extern "C" __global__ void __launch_bounds__(THREADS)                                       \
  NAME(const T* __restrict__ A, const T* __restrict__ B, OUT* __restrict__ C, int M, int N,   \
       int K, int lda, int ldb, int ldc, int strideA, int strideB, int strideC) {             \
    gemm<T, OUT, A_COL, B_COL>(A, B, C, M, N, K, lda, ldb, ldc, strideA, strideB, strideC);   \
  }

// The kernels built (cuda_gemm.KERNELS) are instances of this, one per PTX module:
// PYREE_GEMM(pyree_gemm_f32_f32_rc, float, float, false, true) and so on.
