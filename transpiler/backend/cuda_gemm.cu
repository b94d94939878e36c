// pyree's matrix-product kernels for NVIDIA GPUs (sm_80 and newer): C[b] = A[b] @ B[b] on tensor
// cores with float32 accumulation (WMMA), exact float32 on the CUDA cores (sgemm), and 2-D
// convolutions as implicit GEMMs. Compiled to PTX by cuda_gemm.py (`python -m
// pyree.transpiler.build_cuda_kernels`, with NVRTC) and dispatched from modules through
// hal.dispatch.extern; see cuda_gemm.py for when and why.
//
// One kernel per (input type, output type, A layout, B layout), named
//   pyree_gemm_<in>_<out>_<a><b>, in: f32 (TF32 products), bf16, f16; out: f32 or the input's;
//   a: r = A stored M x K (row-major), c = A stored K x M; b: r = B stored K x N, c = N x K.
// Arguments, in IREE's order for hand-written CUDA kernels (bindings, then 32-bit constants):
//   A, B, C, M, N, K, lda, ldb, ldc, batch strides of A, B and C (all in elements).
// Workgroups: x over N / 128, y over M / 128, z over the batch; 128 threads (4 warps; the
// PYREE_WARPS=8 build: 256, cuda_gemm.threads).
// (PYREE_DYNAMIC_SHARED builds take their shared memory as dynamic: cuda_gemm.shared_bytes.)
// Tiles move into shared memory by 16-byte asynchronous copies when A and B and their rows
// are 16-byte aligned (cuda_gemm.py pads the contiguous extent of each to a multiple of 16
// bytes, so that a copy is all inside or all outside the matrix), element by element if not.
#include <mma.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

using namespace nvcuda;

namespace {

// Tuning knobs (cuda_gemm.VARIANTS builds experiments with other values; the defaults are
// what runs): tiles in flight, bytes of k per tile row, padding of tile rows that run along
// m or n for float32, row groups of the workgroup order (0: row by row), and how far the
// tensor-core steps of a tile and the copies of a tile are unrolled.
#ifndef PYREE_STAGES
#define PYREE_STAGES 2
#endif
#ifndef PYREE_K_BYTES
#define PYREE_K_BYTES 64
#endif
#ifndef PYREE_F32_MN_PAD_BYTES
#define PYREE_F32_MN_PAD_BYTES 16
#endif
#ifndef PYREE_GROUP_M
#define PYREE_GROUP_M 0
#endif
#ifndef PYREE_STEP_UNROLL
#define PYREE_STEP_UNROLL 16
#endif
#ifndef PYREE_COPY_UNROLL
#define PYREE_COPY_UNROLL 16
#endif
#ifndef PYREE_WARPS
#define PYREE_WARPS 4          // 4: each warp 64 x 64 of C; 8: 64 x 32
#endif
#ifndef PYREE_MIN_BLOCKS
#define PYREE_MIN_BLOCKS 1     // workgroups per SM the registers are budgeted for
#endif

constexpr int BM = 128;      // rows of C per workgroup
constexpr int BN = 128;      // columns of C per workgroup
constexpr int WARP_M = 64;   // each warp computes WARP_M x WARP_N of C: FM x FN fragments
constexpr int WARP_N = PYREE_WARPS == 8 ? 32 : 64;
constexpr int FM = WARP_M / 16, FN = WARP_N / 16;
constexpr int WARPS_N = BN / WARP_N;  // warps side by side along n
constexpr int THREADS = 32 * PYREE_WARPS;
constexpr int STAGES = PYREE_STAGES;

// Per input type: the fragment element type, the k of one tensor-core step, the k of one tile
// held in shared memory (PYREE_K_BYTES of a row), and the padding of shared rows (16 bytes:
// rows then start in different banks, and fragment pointers stay 32-byte aligned).
template <typename T> struct Kind;
template <> struct Kind<float> {
  using Frag = wmma::precision::tf32;
  static constexpr int WK = 8, BK = PYREE_K_BYTES / 4, PAD = 4, MN_PAD = PYREE_F32_MN_PAD_BYTES / 4;
};
template <> struct Kind<__nv_bfloat16> {
  using Frag = __nv_bfloat16;
  static constexpr int WK = 16, BK = PYREE_K_BYTES / 2, PAD = 8, MN_PAD = 8;
};
template <> struct Kind<__half> {
  using Frag = __half;
  static constexpr int WK = 16, BK = PYREE_K_BYTES / 2, PAD = 8, MN_PAD = 8;
};

template <bool, typename IF, typename ELSE> struct Pick { using type = IF; };
template <typename IF, typename ELSE> struct Pick<false, IF, ELSE> { using type = ELSE; };

__device__ __forceinline__ void copy16_async(void* shared, const void* global, bool inside) {
  // Outside the matrix, 0 bytes are read and the 16 are zero-filled.
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :: "r"(address), "l"(global), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void copy4_async(void* shared, const void* global, bool inside) {
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
               :: "r"(address), "l"(global), "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n"); }
template <int PENDING> __device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING));
}

// TF32 products read float32 fragments rounded to TF32's 10 explicit significand bits.
template <typename Frag> __device__ __forceinline__ void round_to_tf32(Frag& fragment) {
#pragma unroll
  for (int e = 0; e < fragment.num_elements; ++e)
    fragment.x[e] = wmma::__float_to_tf32(fragment.x[e]);
}

__device__ __forceinline__ float to_out(float x, float) { return x; }
__device__ __forceinline__ __nv_bfloat16 to_out(float x, __nv_bfloat16) {
  return __float2bfloat16(x);
}
__device__ __forceinline__ __half to_out(float x, __half) { return __float2half(x); }

// Shared-memory tile shapes: a tile stored like its matrix (rows of the contiguous extent).
template <typename T, bool ROWS_OF_K> struct Tile {
  // ROWS_OF_K: a row of the tile runs along k (A row-major, B column-major): BM x BK;
  // else a row runs along m or n: BK x BM.
  static constexpr int LD = ROWS_OF_K ? Kind<T>::BK + Kind<T>::PAD : BM + Kind<T>::MN_PAD;
  static constexpr int BYTES = (ROWS_OF_K ? BM : Kind<T>::BK) * LD * sizeof(T);
};

// Shared memory of one stage: the larger of the two tile forms for A and for B (BM == BN).
template <typename T> struct Stage {
  static constexpr int HALF = (Tile<T, true>::BYTES > Tile<T, false>::BYTES
                                   ? Tile<T, true>::BYTES : Tile<T, false>::BYTES) + 127 & ~127;
  static constexpr int BYTES = 2 * HALF;
};

// Reads one tile of ``matrix`` element by element (the path for operands whose rows are not
// 16-byte aligned: an operand can be a view at any offset of a larger buffer).
template <typename T, int ROWS, int COLS, int LD, int NT = THREADS>
__device__ __forceinline__ void read_tile(T* tile, const T* matrix, int ld, int row0, int rows,
                                          int col0, int cols) {
  for (int i = threadIdx.x; i < ROWS * COLS; i += NT) {
    int r = i / COLS, c = i % COLS;
    bool inside = row0 + r < rows && col0 + c < cols;
    tile[r * LD + c] =
        inside ? matrix[(long long)(row0 + r) * ld + col0 + c] : static_cast<T>(0.0f);
  }
}

// Issues the copies of one tile of ``matrix`` (rows of ``ld`` elements) into ``tile``: rows
// ``row0``.. of the stored matrix (``rows`` of them), columns ``col0``.. (``cols`` of them).
// A tile is (ROWS x COLS) elements of the stored orientation.
template <typename T, int ROWS, int COLS, int LD, int NT = THREADS>
__device__ __forceinline__ void load_tile(T* tile, const T* matrix, int ld, int row0, int rows,
                                          int col0, int cols) {
  constexpr int CHUNK = 16 / sizeof(T);
  constexpr int PER_ROW = COLS / CHUNK;
  constexpr int COUNT = ROWS * PER_ROW;
  static_assert(COUNT % NT == 0, "tile copies split evenly over the threads");
#pragma unroll PYREE_COPY_UNROLL
  for (int i = 0; i < COUNT / NT; ++i) {
    int chunk = threadIdx.x + i * NT;
    int r = chunk / PER_ROW, c = (chunk % PER_ROW) * CHUNK;
    bool inside = row0 + r < rows && col0 + c < cols;
    const T* source = inside ? matrix + (long long)(row0 + r) * ld + col0 + c : matrix;
    copy16_async(tile + r * LD + c, source, inside);
  }
}

// Fills ``tile`` with one k-tile of an operand: BK x BMN when stored with k along its rows
// (K_ROWS: A stored K x M, B stored K x N), else BMN x BK; by 16-byte asynchronous copies when
// the operand and its rows are 16-byte aligned, element by element otherwise.
template <typename T, int BK, int BMN, int LD, int NT, bool K_ROWS>
__device__ __forceinline__ void stage_operand(T* tile, const T* matrix, int ld, bool aligned,
                                              int k0, int K, int mn0, int MN) {
  if constexpr (K_ROWS) {
    if (aligned) load_tile<T, BK, BMN, LD, NT>(tile, matrix, ld, k0, K, mn0, MN);
    else read_tile<T, BK, BMN, LD, NT>(tile, matrix, ld, k0, K, mn0, MN);
  } else {
    if (aligned) load_tile<T, BMN, BK, LD, NT>(tile, matrix, ld, mn0, MN, k0, K);
    else read_tile<T, BMN, BK, LD, NT>(tile, matrix, ld, mn0, MN, k0, K);
  }
}

// A 2-D convolution read as the B operand of a product (implicit GEMM): B[k, p] is the input
// element under filter tap k = (channel, kh, kw) for output pixel p = (oh, ow) of one image
// (channels x H x W, NCHW), zero in the padding.
struct Image {
  int channels, height, width, kernel_h, kernel_w, out_w;
  int stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

// Issues the 4-byte copies of one BK x BN tile of an image's B operand: thread t keeps one
// pixel (column t % BN) and walks taps down the column.
template <int BK, int LD>
__device__ __forceinline__ void load_image_tile(float* tile, const float* image, int k0, int K,
                                                int p0, int P, const Image& g) {
  constexpr int ROW_STEP = THREADS / BN;
  const int column = threadIdx.x % BN, p = p0 + column;
  const int oh = p / g.out_w, ow = p - oh * g.out_w;
  const int ih0 = oh * g.stride_h - g.pad_top, iw0 = ow * g.stride_w - g.pad_left;
  const int taps = g.kernel_h * g.kernel_w;
  int k = k0 + threadIdx.x / BN;
  int channel = k / taps, kh = (k - channel * taps) / g.kernel_w;
  int kw = k - channel * taps - kh * g.kernel_w;
  for (int r = threadIdx.x / BN; r < BK; r += ROW_STEP) {
    const int ih = ih0 + kh * g.dilation_h, iw = iw0 + kw * g.dilation_w;
    const bool inside = p < P && k < K && ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
    const float* source =
        inside ? image + ((long long)channel * g.height + ih) * g.width + iw : image;
    copy4_async(tile + r * LD + column, source, inside);
    k += ROW_STEP;
    kw += ROW_STEP;
    while (kw >= g.kernel_w) {
      kw -= g.kernel_w;
      if (++kh == g.kernel_h) { kh = 0; ++channel; }
    }
  }
}

template <typename T, typename OutT, bool A_COL, bool B_COL, bool IMAGE = false>
__device__ __forceinline__ void gemm(const T* __restrict__ A, const T* __restrict__ B,
                                     OutT* __restrict__ C, int M, int N, int K, int lda,
                                     int ldb, int ldc, int strideA, int strideB, int strideC,
                                     const Image& image = Image()) {
  using K_ = Kind<T>;
  constexpr int BK = K_::BK, WK = K_::WK;
  constexpr int A_LD = Tile<T, !A_COL>::LD, B_LD = Tile<T, B_COL>::LD;
  using ALayout = typename Pick<A_COL, wmma::col_major, wmma::row_major>::type;
  using BLayout = typename Pick<B_COL, wmma::col_major, wmma::row_major>::type;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, WK, typename K_::Frag, ALayout>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, WK, typename K_::Frag, BLayout>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, WK, float>;

  constexpr int STAGE_BYTES = Stage<T>::BYTES;
#if defined(PYREE_DYNAMIC_SHARED)
  // More than CUDA's 48 KB of static shared memory: the dispatch's workgroup_local_memory
  // (cuda_gemm.shared_bytes) is launched as dynamic shared memory.
  extern __shared__ __align__(128) unsigned char shared[];
#else
  __shared__ __align__(128) unsigned char shared[STAGES * STAGE_BYTES];
#endif
  const int batch = blockIdx.z;
  A += (long long)batch * strideA;
  B += (long long)batch * strideB;
  C += (long long)batch * strideC;
#if PYREE_GROUP_M
  // Tiles in groups of PYREE_GROUP_M rows, column by column within a group: workgroups that
  // run at the same time share A's rows and B's columns in L2.
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  const int id = blockIdx.y * tiles_n + blockIdx.x;
  const int first_m = (id / (PYREE_GROUP_M * tiles_n)) * PYREE_GROUP_M;
  const int group_rows = min(tiles_m - first_m, PYREE_GROUP_M);
  const int in_group = id % (PYREE_GROUP_M * tiles_n);
  const int m0 = (first_m + in_group % group_rows) * BM, n0 = (in_group / group_rows) * BN;
#else
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
#endif
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / WARPS_N) * WARP_M, wn = (warp % WARPS_N) * WARP_N;

  auto a_tile = [&](int stage) { return reinterpret_cast<T*>(shared + stage * STAGE_BYTES); };
  auto b_tile = [&](int stage) {
    return reinterpret_cast<T*>(shared + stage * STAGE_BYTES + STAGE_BYTES / 2);
  };
  constexpr int CHUNK = 16 / sizeof(T);
  const bool aligned_a = (reinterpret_cast<unsigned long long>(A) & 15) == 0 && lda % CHUNK == 0;
  const bool aligned_b = (reinterpret_cast<unsigned long long>(B) & 15) == 0 && ldb % CHUNK == 0;
  auto load_stage = [&](int stage, int k0) {
    stage_operand<T, BK, BM, A_LD, THREADS, A_COL>(a_tile(stage), A, lda, aligned_a, k0, K, m0, M);
    if (IMAGE) {
      load_image_tile<BK, B_LD>(reinterpret_cast<float*>(b_tile(stage)),
                                reinterpret_cast<const float*>(B), k0, K, n0, N, image);
    } else {
      stage_operand<T, BK, BN, B_LD, THREADS, !B_COL>(b_tile(stage), B, ldb, aligned_b, k0, K,
                                                     n0, N);
    }
  };

  FragC acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  // STAGES - 1 tiles are copied ahead of the one multiplied. Every iteration commits one
  // group of copies (empty past the last tile), so that waiting for all but STAGES - 2 groups
  // means tile t has arrived.
  const int tiles = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) load_stage(s, s * BK);
    commit_copies();
  }
  for (int t = 0; t < tiles; ++t) {
    wait_copies<STAGES - 2>();
    __syncthreads();  // tile t is in for every thread; all are done with tile t - 1's stage
    if (t + STAGES - 1 < tiles) load_stage((t + STAGES - 1) % STAGES, (t + STAGES - 1) * BK);
    commit_copies();
    const T* as = a_tile(t % STAGES);
    const T* bs = b_tile(t % STAGES);
#pragma unroll PYREE_STEP_UNROLL
    for (int kk = 0; kk < BK; kk += WK) {
      FragA a[FM];
      FragB b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        const int m = wm + i * 16;
        wmma::load_matrix_sync(a[i], A_COL ? as + kk * A_LD + m : as + m * A_LD + kk, A_LD);
        if constexpr (sizeof(T) == 4) round_to_tf32(a[i]);
      }
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        const int n = wn + j * 16;
        wmma::load_matrix_sync(b[j], B_COL ? bs + n * B_LD + kk : bs + kk * B_LD + n, B_LD);
        if constexpr (sizeof(T) == 4) round_to_tf32(b[j]);
      }
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
  wait_copies<0>();
  __syncthreads();  // the epilogue reuses the tiles' memory

  // Each warp writes its fragments through 1 KB of shared memory of its own, bounds-checked.
  float* scratch = reinterpret_cast<float*>(shared) + warp * 256;
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
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

// Exact float32 products (HIGHEST precision) on the CUDA cores: the same tiles in shared
// memory, 256 threads as 16 x 16, each computing 8 x 8 of C with fused multiply-adds (rows
// ty + 16 i, columns 4 tx + j and 64 + 4 tx + j). IREE 3.13's own code reached 4 TFLOP/s on an
// 8192^2 product on an H200, where JAX (cuBLAS) reaches ~50.
constexpr int SIMT_THREADS = 256;

template <bool A_COL, bool B_COL>
__device__ __forceinline__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int M, int N, int K, int lda,
                                      int ldb, int ldc, int strideA, int strideB, int strideC) {
  constexpr int BK = Kind<float>::BK;
  constexpr int A_LD = Tile<float, !A_COL>::LD, B_LD = Tile<float, B_COL>::LD;
  constexpr int STAGE_BYTES = Stage<float>::BYTES;
  __shared__ __align__(128) unsigned char shared[2 * STAGE_BYTES];
  const int batch = blockIdx.z;
  A += (long long)batch * strideA;
  B += (long long)batch * strideB;
  C += (long long)batch * strideC;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  auto a_tile = [&](int stage) { return reinterpret_cast<float*>(shared + stage * STAGE_BYTES); };
  auto b_tile = [&](int stage) {
    return reinterpret_cast<float*>(shared + stage * STAGE_BYTES + STAGE_BYTES / 2);
  };
  const bool aligned_a = (reinterpret_cast<unsigned long long>(A) & 15) == 0 && lda % 4 == 0;
  const bool aligned_b = (reinterpret_cast<unsigned long long>(B) & 15) == 0 && ldb % 4 == 0;
  constexpr int NT = SIMT_THREADS;
  auto load_stage = [&](int stage, int k0) {
    stage_operand<float, BK, BM, A_LD, NT, A_COL>(a_tile(stage), A, lda, aligned_a, k0, K, m0, M);
    stage_operand<float, BK, BN, B_LD, NT, !B_COL>(b_tile(stage), B, ldb, aligned_b, k0, K, n0, N);
  };
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  const int tiles = (K + BK - 1) / BK;
  if (tiles > 0) load_stage(0, 0);
  commit_copies();
  for (int t = 0; t < tiles; ++t) {
    wait_copies<0>();
    __syncthreads();  // tile t is in for every thread; all are done with tile t - 1's stage
    if (t + 1 < tiles) load_stage((t + 1) % 2, (t + 1) * BK);
    commit_copies();
    const float* as = a_tile(t % 2);
    const float* bs = b_tile(t % 2);
#pragma unroll 4
    for (int k = 0; k < BK; ++k) {
      float a[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int m = ty + 16 * i;
        a[i] = A_COL ? as[k * A_LD + m] : as[m * A_LD + k];
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int n = (j < 4 ? 0 : 64) + 4 * tx + (j % 4);
        b[j] = B_COL ? bs[n * B_LD + k] : bs[k * B_LD + n];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = m0 + ty + 16 * i;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int n = n0 + (j < 4 ? 0 : 64) + 4 * tx + (j % 4);
      if (m < M && n < N) C[(long long)m * ldc + n] = acc[i][j];
    }
  }
}

}  // namespace

// Types by the names used in kernel names: f32, bf16, f16.
typedef float f32;
typedef __nv_bfloat16 bf16;
typedef __half f16;

// Every kernel takes the product's arguments first, in IREE's order for hand-written kernels
// (bindings, then 32-bit constants).
#define PYREE_PRODUCT_PARAMS(T, OUT)                                                          \
  const T* __restrict__ A, const T* __restrict__ B, OUT* __restrict__ C, int M, int N, int K, \
      int lda, int ldb, int ldc, int strideA, int strideB, int strideC
#define PYREE_PRODUCT_ARGS A, B, C, M, N, K, lda, ldb, ldc, strideA, strideB, strideC

// The kernels built (cuda_gemm.KERNELS) are instances of these, one per PTX module:
// PYREE_GEMM(pyree_gemm_f32_f32_rc, f32, f32, false, true) and so on (tensor cores),
// PYREE_SGEMM(pyree_sgemm_f32_f32_rr, false, false) and so on (exact float32), and
// PYREE_CONV2D(pyree_conv2d_f32_f32): Y[n] (O x P) = W (O x K) @ image n's B (K x P), with the
// image's geometry after the product's arguments (A = W, B = the images, C = Y).
#define PYREE_GEMM(NAME, T, OUT, A_COL, B_COL)                                                \
  extern "C" __global__ void __launch_bounds__(THREADS, PYREE_MIN_BLOCKS)                    \
  NAME(PYREE_PRODUCT_PARAMS(T, OUT)) {                                                        \
    gemm<T, OUT, A_COL, B_COL>(PYREE_PRODUCT_ARGS);                                           \
  }

#define PYREE_SGEMM(NAME, A_COL, B_COL)                                                      \
  extern "C" __global__ void __launch_bounds__(SIMT_THREADS, 2)                               \
  NAME(PYREE_PRODUCT_PARAMS(float, float)) {                                                  \
    sgemm<A_COL, B_COL>(PYREE_PRODUCT_ARGS);                                                 \
  }

#define PYREE_CONV2D(NAME)                                                                   \
  extern "C" __global__ void __launch_bounds__(THREADS, PYREE_MIN_BLOCKS)                    \
  NAME(PYREE_PRODUCT_PARAMS(float, float), int channels, int height, int width,              \
       int kernel_h, int kernel_w, int out_w, int stride_h, int stride_w, int dilation_h,    \
       int dilation_w, int pad_top, int pad_left) {                                          \
    const Image image{channels, height, width, kernel_h, kernel_w, out_w,                    \
                      stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left};        \
    gemm<float, float, false, false, true>(PYREE_PRODUCT_ARGS, image);                       \
  }
