#include "framework/device/cuda/grouped_gemm_kernels.h"
#include "framework/device/cuda/grouped_gemm_mma.cuh"
#include "framework/device/cuda/grouped_gemm_schedule.cuh"
#include "framework/device/cuda/grouped_gemm_simt.cuh"
#include "framework/device/cuda/grouped_gemm_tma_rows.cuh"
#include "framework/device/cuda/grouped_gemm_tma_weight_grad.cuh"
#include "framework/device/cuda/grouped_gemm_wgmma.cuh"
#include "framework/device/cuda/tensor_map.h"
#include "framework/device/cuda/wgmma_support.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace hai::cuda::kernels {
namespace {

using bf16 = __nv_bfloat16;

// The tensor-core main loops behind one interface: mma.sync (sm_80 on) and wgmma (sm_90a). Both compute a
// kTile x kTile block tile from operands described by mma::OperandSource.
inline constexpr int kTensorCoreTile = mma::kTile;
static_assert(wgmma::kTile == kTensorCoreTile);

struct MmaSyncLoop {
  static constexpr int kThreads = mma::kThreads;
  static constexpr int kBlocksPerMultiprocessor = 1;
  using Accumulators = mma::Accumulators;
  template <bool kADepthContiguous, bool kBDepthContiguous>
  static constexpr int kSharedBytes = mma::kSharedBytes<kADepthContiguous, kBDepthContiguous>;
  template <bool kADepthContiguous, bool kBDepthContiguous>
  __device__ static void multiply(Accumulators& accumulators, const mma::OperandSource& a,
                                  const mma::OperandSource& b, int64_t depth, unsigned char* shared) {
    mma::multiply_tiles<kADepthContiguous, kBDepthContiguous>(accumulators, a, b, depth,
                                                              reinterpret_cast<bf16*>(shared));
  }
  template <typename Store>
  __device__ static void for_each_pair(const Accumulators& accumulators, Store store) {
    mma::for_each_accumulator_pair(accumulators, store);
  }
};

struct WgmmaLoop {
  static constexpr int kThreads = wgmma::kThreads;
  static constexpr int kBlocksPerMultiprocessor = 2;
  using Accumulators = wgmma::Accumulators;
  template <bool kADepthContiguous, bool kBDepthContiguous>
  static constexpr int kSharedBytes = wgmma::kSharedBytes;
  template <bool kADepthContiguous, bool kBDepthContiguous>
  __device__ static void multiply(Accumulators& accumulators, const mma::OperandSource& a,
                                  const mma::OperandSource& b, int64_t depth, unsigned char* shared) {
    wgmma::multiply_tiles<kADepthContiguous, kBDepthContiguous>(accumulators, a, b, depth, shared);
  }
  template <typename Store>
  __device__ static void for_each_pair(const Accumulators& accumulators, Store store) {
    wgmma::for_each_accumulator_pair(accumulators, store);
  }
};

// The epilogue of the forward and input gradient: (row, column) and (row, column + 1) of the block tile whose rows
// are `tile`'s and whose first column is column_begin, into y [R, N]: fp32 (+ beta * y; beta 0: y is not read), or
// bf16 rounded to nearest even. Rows past the expert's and columns past N are left alone.
__device__ inline void store_output_pair(const GroupedGemmArguments& arguments, const ExpertRowTile& tile,
                                         int64_t column_begin, int row, int column, float value0, float value1) {
  int64_t n = arguments.n;
  int64_t global_row = tile.row_begin + row;
  int64_t global_column = column_begin + column;
  if (global_row >= tile.row_end || global_column >= n) return;
  int64_t index = global_row * n + global_column;  // N even: both in range
  if (arguments.bf16_output) {
    auto* out = reinterpret_cast<__nv_bfloat162*>(static_cast<bf16*>(arguments.y) + index);
    *out = __floats2bfloat162_rn(value0, value1);
    return;
  }
  auto* out = reinterpret_cast<float2*>(static_cast<float*>(arguments.y) + index);
  float2 result{value0, value1};
  float beta = arguments.beta;
  if (beta != 0.0f) {
    float2 previous = *out;
    result.x += beta * previous.x;
    result.y += beta * previous.y;
  }
  *out = result;
}

// Forward and input gradient on the tensor cores. Grid: (N tiles, row-tile slots); N tiles vary fastest, so the
// blocks running together share their x rows and one expert's weights in L2.
template <typename Loop, bool kTransposeWeights>
__global__ void __launch_bounds__(Loop::kThreads, Loop::kBlocksPerMultiprocessor)
    grouped_gemm_tensor_core_kernel(GroupedGemmArguments arguments) {
  constexpr int kTile = kTensorCoreTile;
  ExpertRowTile tile;
  if (!find_expert_row_tile(arguments.offsets, arguments.experts, blockIdx.y, kTile, &tile)) return;
  int64_t n = arguments.n, k = arguments.k;
  int64_t column_begin = static_cast<int64_t>(blockIdx.x) * kTile;
  const bf16* x = static_cast<const bf16*>(arguments.x) + tile.row_begin * k;  // [tile rows, K]
  const bf16* weights = static_cast<const bf16*>(arguments.weights) + tile.expert * arguments.expert_stride;
  mma::OperandSource a{x, k, tile.row_end - tile.row_begin, k};
  mma::OperandSource b = kTransposeWeights ? mma::OperandSource{weights + column_begin * k, k, n - column_begin, k}
                                           : mma::OperandSource{weights + column_begin, n, n - column_begin, k};
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  typename Loop::Accumulators accumulators;
  Loop::template multiply<true, kTransposeWeights>(accumulators, a, b, k, shared_bytes);
  Loop::for_each_pair(accumulators, [&](int row, int column, float value0, float value1) {
    store_output_pair(arguments, tile, column_begin, row, column, value0, value1);
  });
}

// Forward and input gradient by the warp-specialised TMA loop (grouped_gemm_tma_rows.cuh): a persistent grid of one
// block per multiprocessor. x_map: x [R, K]; weight_map: W [E, N, K] with kTransposeWeights, else W [E, K, N];
// y_map: y [R, N].
template <bool kTransposeWeights>
__global__ void __launch_bounds__(tma::kThreads, 1)
    grouped_gemm_tma_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap weight_map,
                            const __grid_constant__ CUtensorMap y_map, GroupedGemmArguments arguments) {
#if defined(HAI_WGMMA_AVAILABLE)
  // bf16 y is written without being read, whatever beta (store_output_pair).
  tma::CopyOut copy_out = arguments.bf16_output || arguments.beta == 0.0f ? tma::CopyOut::store
                          : arguments.beta == 1.0f                         ? tma::CopyOut::add
                                                                           : tma::CopyOut::none;
  tma::Schedule schedule{arguments.offsets,
                         arguments.experts,
                         arguments.n / tma::Bf16Math::kBlockColumns,
                         arguments.k / tma::Bf16Math::kDepth,
                         copy_out,
                         arguments.bf16_output};
  auto store = [&](const tma::Tile& tile, int row, int column, float value0, float value1) {
    store_output_pair(arguments, tile.rows, tile.column_begin, row, column, value0, value1);
  };
  tma::RowTileProblem<kTransposeWeights, decltype(store)> problem{x_map, weight_map, y_map, schedule, store};
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  tma::multiply_tiles(problem, shared_bytes);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code
#endif
}

// Weight gradient by the TMA loop (grouped_gemm_tma_weight_grad.cuh), a persistent grid of one block per
// multiprocessor. d_y_map: d_y [R, N]; x_map: x [R, K]; gradient_map: the gradients [E, N, K].
__global__ void __launch_bounds__(tma::kThreads, 1)
    grouped_weight_grad_tma_kernel(const __grid_constant__ CUtensorMap d_y_map,
                                   const __grid_constant__ CUtensorMap x_map,
                                   const __grid_constant__ CUtensorMap gradient_map,
                                   GroupedWeightGradArguments arguments) {
#if defined(HAI_WGMMA_AVAILABLE)
  tma::WeightGradSchedule schedule{arguments.offsets, arguments.experts, arguments.n / tma::kBlockRows,
                                   arguments.k / tma::Bf16Math::kBlockColumns, arguments.beta != 0.0f};
  tma::WeightGradProblem problem{d_y_map, x_map, gradient_map, schedule};
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  tma::multiply_tiles(problem, shared_bytes);
#else
  __trap();  // NOTE: launched only where nvcc built sm_90a code
#endif
}

// The [tile, tile] block of an expert's gradient [N, K] from (row_begin, column_begin) set to zero: what the
// weight gradient writes with beta 0 for an expert that received no rows. Any block shape.
__device__ void zero_gradient_tile(float* gradient, int64_t n, int64_t k, int64_t row_begin, int64_t column_begin,
                                   int tile) {
  int thread = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  int threads = static_cast<int>(blockDim.x * blockDim.y);
  for (int i = thread; i < tile * tile; i += threads) {
    int64_t row = row_begin + i / tile, column = column_begin + i % tile;
    if (row < n && column < k) gradient[row * k + column] = 0.0f;
  }
}

// Weight gradient on the tensor cores: grad W_e [N, K] = d_y_e^T @ x_e + beta * grad W_e (beta 0 or 1). Grid:
// (K tiles, N tiles, E); each block reduces over all rows of its expert.
template <typename Loop>
__global__ void __launch_bounds__(Loop::kThreads, Loop::kBlocksPerMultiprocessor)
    grouped_weight_grad_tensor_core_kernel(GroupedWeightGradArguments arguments) {
  constexpr int kTile = kTensorCoreTile;
  int64_t expert = blockIdx.z;
  int64_t row_begin = arguments.offsets[expert];
  int64_t rows = arguments.offsets[expert + 1] - row_begin;
  int64_t n = arguments.n, k = arguments.k;
  int64_t row_tile_begin = static_cast<int64_t>(blockIdx.y) * kTile;  // along N
  int64_t column_begin = static_cast<int64_t>(blockIdx.x) * kTile;    // along K
  float* gradient = arguments.gradients + expert * arguments.expert_stride;  // [N, K]
  if (rows <= 0) {
    if (arguments.beta == 0.0f) zero_gradient_tile(gradient, n, k, row_tile_begin, column_begin, kTile);
    return;
  }
  const bf16* d_y = static_cast<const bf16*>(arguments.d_y) + row_begin * n;  // [rows, N]
  const bf16* x = static_cast<const bf16*>(arguments.x) + row_begin * k;      // [rows, K]
  mma::OperandSource a{d_y + row_tile_begin, n, n - row_tile_begin, rows};
  mma::OperandSource b{x + column_begin, k, k - column_begin, rows};
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  typename Loop::Accumulators accumulators;
  Loop::template multiply<false, false>(accumulators, a, b, rows, shared_bytes);
  Loop::for_each_pair(accumulators, [&](int row, int column, float value0, float value1) {
    int64_t global_row = row_tile_begin + row;
    int64_t global_column = column_begin + column;
    if (global_row >= n || global_column >= k) return;
    auto* out = reinterpret_cast<float2*>(gradient + global_row * k + global_column);  // K even: both in range
    if (arguments.beta == 0.0f) {
      *out = float2{value0, value1};
      return;
    }
    float2 previous = *out;
    *out = float2{previous.x + value0, previous.y + value1};
  });
}

// Forward and input gradient with fp32 FMAs, any dtype, shape and alignment. Grid: (N tiles, row-tile slots).
template <typename Element>
__global__ void __launch_bounds__(simt::kThreads) grouped_gemm_simt_kernel(GroupedGemmArguments arguments) {
  ExpertRowTile tile;
  if (!find_expert_row_tile(arguments.offsets, arguments.experts, blockIdx.y, simt::kTile, &tile)) return;
  int64_t n = arguments.n, k = arguments.k;
  int64_t column_begin = static_cast<int64_t>(blockIdx.x) * simt::kTile;
  const Element* x = static_cast<const Element*>(arguments.x) + tile.row_begin * k;
  const Element* weights = static_cast<const Element*>(arguments.weights) + tile.expert * arguments.expert_stride;
  simt::OperandSource<Element> a{x, k, 1, tile.row_end - tile.row_begin, k};
  simt::OperandSource<Element> b =
      arguments.transpose_weights
          ? simt::OperandSource<Element>{weights + column_begin * k, k, 1, n - column_begin, k}
          : simt::OperandSource<Element>{weights + column_begin, 1, n, n - column_begin, k};
  float accumulators[4][4];
  simt::multiply_tiles(accumulators, a, b, k);
  for (int i = 0; i < 4; ++i) {
    int64_t row = tile.row_begin + simt::thread_row() + i;
    for (int j = 0; j < 4; ++j) {
      int64_t column = column_begin + simt::thread_column() + j;
      if (row >= tile.row_end || column >= n) continue;
      if (arguments.bf16_output) {
        static_cast<bf16*>(arguments.y)[row * n + column] = __float2bfloat16_rn(accumulators[i][j]);
        continue;
      }
      float* out = static_cast<float*>(arguments.y) + row * n + column;
      *out = arguments.beta == 0.0f ? accumulators[i][j] : accumulators[i][j] + arguments.beta * *out;
    }
  }
}

// Weight gradient with fp32 FMAs (beta 0 or 1, as the tensor-core kernel). Grid: (K tiles, N tiles, E).
template <typename Element>
__global__ void __launch_bounds__(simt::kThreads)
    grouped_weight_grad_simt_kernel(GroupedWeightGradArguments arguments) {
  int64_t expert = blockIdx.z;
  int64_t row_begin = arguments.offsets[expert];
  int64_t rows = arguments.offsets[expert + 1] - row_begin;
  int64_t n = arguments.n, k = arguments.k;
  int64_t row_tile_begin = static_cast<int64_t>(blockIdx.y) * simt::kTile;  // along N
  int64_t column_begin = static_cast<int64_t>(blockIdx.x) * simt::kTile;    // along K
  float* gradient = arguments.gradients + expert * arguments.expert_stride;  // [N, K]
  if (rows <= 0) {
    if (arguments.beta == 0.0f) zero_gradient_tile(gradient, n, k, row_tile_begin, column_begin, simt::kTile);
    return;
  }
  const Element* d_y = static_cast<const Element*>(arguments.d_y) + row_begin * n;
  const Element* x = static_cast<const Element*>(arguments.x) + row_begin * k;
  simt::OperandSource<Element> a{d_y + row_tile_begin, 1, n, n - row_tile_begin, rows};
  simt::OperandSource<Element> b{x + column_begin, 1, k, k - column_begin, rows};
  float accumulators[4][4];
  simt::multiply_tiles(accumulators, a, b, rows);
  for (int i = 0; i < 4; ++i) {
    int64_t row = row_tile_begin + simt::thread_row() + i;
    for (int j = 0; j < 4; ++j) {
      int64_t column = column_begin + simt::thread_column() + j;
      if (row >= n || column >= k) continue;
      float* out = gradient + row * k + column;
      *out = arguments.beta == 0.0f ? accumulators[i][j] : *out + accumulators[i][j];
    }
  }
}

bool aligned(const void* pointer, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

// The tensor-core path loads 16-byte chunks of 8 bf16 (rows, matrices and experts must start on 16 bytes) and
// stores pairs of fp32 (8 bytes).
bool tensor_cores_fit(GroupedGemmInput input_type, int64_t n, int64_t k, std::initializer_list<const void*> inputs,
                      int64_t expert_stride, const void* output) {
  if (input_type != GroupedGemmInput::bf16 || n % 8 != 0 || k % 8 != 0 || expert_stride % 8 != 0 || !aligned(output, 8)) return false;
  for (const void* input : inputs) {
    if (!aligned(input, 16)) return false;
  }
  return true;
}

unsigned int blocks(int64_t extent, int64_t tile) { return static_cast<unsigned int>((extent + tile - 1) / tile); }

template <typename Loop, typename Kernel, typename Arguments>
cudaError_t launch_tensor_core(Kernel kernel, dim3 grid, int shared_bytes, const Arguments& arguments,
                               cudaStream_t stream) {
  cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes);
  if (status != cudaSuccess) return status;
  // NOTE: the largest shared-memory carve-out, so that the wgmma loop's two blocks fit on a multiprocessor
  status = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  if (status != cudaSuccess) return status;
  kernel<<<grid, Loop::kThreads, shared_bytes, stream>>>(arguments);
  return cudaGetLastError();
}

template <typename Loop>
cudaError_t launch_grouped_gemm(const GroupedGemmArguments& arguments, cudaStream_t stream) {
  dim3 grid(blocks(arguments.n, kTensorCoreTile),
            static_cast<unsigned int>(row_tile_slots(arguments.rows, arguments.experts, kTensorCoreTile)));
  if (arguments.transpose_weights) {
    return launch_tensor_core<Loop>(grouped_gemm_tensor_core_kernel<Loop, true>, grid,
                                    Loop::template kSharedBytes<true, true>, arguments, stream);
  }
  return launch_tensor_core<Loop>(grouped_gemm_tensor_core_kernel<Loop, false>, grid,
                                  Loop::template kSharedBytes<true, false>, arguments, stream);
}

// HAI_GROUPED_GEMM_TMA=0 in the environment (read once) runs the cp.async wgmma loop where the TMA loop would run:
// for A/B timings on a GPU.
bool tma_loop_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("HAI_GROUPED_GEMM_TMA");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

// Whether the TMA loop runs a forward or input gradient that the wgmma loop would: whole 256-column and 64-deep
// tiles, row coordinates that fit the copies' 32-bit ones, experts' matrices that do not overlap, y 16-byte
// aligned. (The wgmma conditions already give bf16, 16-byte aligned x and W, and row and expert strides of
// 16-byte multiples.)
bool tma_loop_fits(const GroupedGemmArguments& arguments) {
  return arguments.n % tma::Bf16Math::kBlockColumns == 0 && arguments.k > 0 &&
         arguments.k % tma::Bf16Math::kDepth == 0 &&
         arguments.rows <= INT32_MAX && arguments.expert_stride >= arguments.n * arguments.k &&
         aligned(arguments.y, 16) && tma_loop_enabled();
}

template <bool kTransposeWeights>
cudaError_t launch_grouped_gemm_tma(const GroupedGemmArguments& arguments, cudaStream_t stream) {
  auto rows = static_cast<uint64_t>(arguments.rows), n = static_cast<uint64_t>(arguments.n),
       k = static_cast<uint64_t>(arguments.k), experts = static_cast<uint64_t>(arguments.experts);
  uint64_t expert_bytes = static_cast<uint64_t>(arguments.expert_stride) * sizeof(bf16);
  // x [R, K] in (64 depth, 128 rows) boxes; W [E, N, K] in (64 depth, 256 columns, 1) boxes, or W [E, K, N] in
  // (64 columns, 64 depth, 1) boxes.
  constexpr CUtensorMapDataType kBf16 = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  constexpr uint32_t kDepth = tma::Bf16Math::kDepth, kColumns = tma::Bf16Math::kBlockColumns;
  TensorMapShape x_shape{kBf16, 2, {k, rows, 0}, {k * sizeof(bf16), 0}, {kDepth, tma::kBlockRows, 0}};
  TensorMapShape weight_shape{kBf16, 3, {k, n, experts}, {k * sizeof(bf16), expert_bytes}, {kDepth, kColumns, 1}};
  if (!kTransposeWeights) {
    weight_shape = {kBf16, 3, {n, k, experts}, {n * sizeof(bf16), expert_bytes}, {tma::kAtomColumns, kDepth, 1}};
  }
  // y [R, N] in (128 bytes, 64 rows) boxes.
  uint64_t y_element = arguments.bf16_output ? sizeof(bf16) : sizeof(float);
  TensorMapShape y_shape{arguments.bf16_output ? kBf16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, {n, rows, 0},
                         {n * y_element, 0}, {static_cast<uint32_t>(128 / y_element), tma::kConsumerRows, 0}};
  CUtensorMap x_map, weight_map, y_map;
  cudaError_t status = encode_tensor_maps(
      {{&x_map, arguments.x, x_shape}, {&weight_map, arguments.weights, weight_shape}, {&y_map, arguments.y, y_shape}});
  if (status != cudaSuccess) return status;
  int64_t tiles =
      row_tile_slots(arguments.rows, arguments.experts, tma::kBlockRows) * (arguments.n / kColumns);
  return tma::launch_persistent<tma::Bf16Math>(grouped_gemm_tma_kernel<kTransposeWeights>, tiles, stream, x_map,
                                               weight_map, y_map, arguments);
}

// Whether the TMA loop runs a weight gradient that the wgmma loop would: whole 128-row (N) and 256-column (K)
// tiles, some rows (a tensor map has no empty extent), experts' gradients that do not overlap, at a stride of whole
// 16 bytes from a 16-byte aligned first one, row coordinates that fit the copies' 32-bit ones.
bool tma_weight_grad_fits(const GroupedWeightGradArguments& arguments) {
  return arguments.n % tma::kBlockRows == 0 && arguments.k % tma::Bf16Math::kBlockColumns == 0 && arguments.rows > 0 &&
         arguments.rows <= INT32_MAX && arguments.expert_stride >= arguments.n * arguments.k &&
         arguments.expert_stride % 4 == 0 && aligned(arguments.gradients, 16) && tma_loop_enabled();
}

cudaError_t launch_grouped_weight_grad_tma(const GroupedWeightGradArguments& arguments, cudaStream_t stream) {
  auto rows = static_cast<uint64_t>(arguments.rows), n = static_cast<uint64_t>(arguments.n),
       k = static_cast<uint64_t>(arguments.k), experts = static_cast<uint64_t>(arguments.experts);
  // d_y [R, N] and x [R, K] in (64 columns, 64 rows) boxes: MN-major atoms; the gradients [E, N, K] fp32 in
  // (32 columns = 128 bytes, 64 rows, 1) boxes.
  constexpr CUtensorMapDataType kBf16 = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  constexpr uint32_t kDepth = tma::Bf16Math::kDepth;
  TensorMapShape d_y_shape{kBf16, 2, {n, rows, 0}, {n * sizeof(bf16), 0}, {tma::kAtomColumns, kDepth, 0}};
  TensorMapShape x_shape{kBf16, 2, {k, rows, 0}, {k * sizeof(bf16), 0}, {tma::kAtomColumns, kDepth, 0}};
  uint64_t expert_bytes = static_cast<uint64_t>(arguments.expert_stride) * sizeof(float);
  TensorMapShape gradient_shape{CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, {k, n, experts}, {k * sizeof(float), expert_bytes},
                                {128 / sizeof(float), tma::kConsumerRows, 1}};
  CUtensorMap d_y_map, x_map, gradient_map;
  cudaError_t status = encode_tensor_maps({{&d_y_map, arguments.d_y, d_y_shape},
                                           {&x_map, arguments.x, x_shape},
                                           {&gradient_map, arguments.gradients, gradient_shape}});
  if (status != cudaSuccess) return status;
  int64_t tiles =
      arguments.experts * (arguments.n / tma::kBlockRows) * (arguments.k / tma::Bf16Math::kBlockColumns);
  return tma::launch_persistent<tma::Bf16Math>(grouped_weight_grad_tma_kernel, tiles, stream, d_y_map, x_map,
                                               gradient_map, arguments);
}

template <typename Loop>
cudaError_t launch_grouped_weight_grad(const GroupedWeightGradArguments& arguments, cudaStream_t stream) {
  dim3 grid(blocks(arguments.k, kTensorCoreTile), blocks(arguments.n, kTensorCoreTile),
            static_cast<unsigned int>(arguments.experts));
  return launch_tensor_core<Loop>(grouped_weight_grad_tensor_core_kernel<Loop>, grid,
                                  Loop::template kSharedBytes<false, false>, arguments, stream);
}

// The SIMT kernel instantiated for each input type.
template <typename Arguments>
struct SimtKernels {
  void (*f32)(Arguments);
  void (*bf16)(Arguments);
  void (*f16)(Arguments);
};

template <typename Arguments>
void launch_simt(const SimtKernels<Arguments>& simt_kernels, GroupedGemmInput input_type, dim3 grid,
                 const Arguments& arguments, cudaStream_t stream) {
  void (*kernel)(Arguments) = input_type == GroupedGemmInput::bf16  ? simt_kernels.bf16
                              : input_type == GroupedGemmInput::f16 ? simt_kernels.f16
                                                                     : simt_kernels.f32;
  kernel<<<grid, simt::kThreads, 0, stream>>>(arguments);
}

}  // namespace

cudaError_t grouped_gemm(const GroupedGemmArguments& arguments, cudaStream_t stream) {
  if (arguments.rows == 0 || arguments.n == 0 || arguments.experts == 0) return cudaSuccess;
  if (tensor_cores_fit(arguments.input_type, arguments.n, arguments.k, {arguments.x, arguments.weights},
                       arguments.expert_stride, arguments.y)) {
    bool wgmma = false;
    cudaError_t status = wgmma_applies(&wgmma);
    if (status != cudaSuccess) return status;
    if (wgmma && tma_loop_fits(arguments)) {
      return arguments.transpose_weights ? launch_grouped_gemm_tma<true>(arguments, stream)
                                         : launch_grouped_gemm_tma<false>(arguments, stream);
    }
    return wgmma ? launch_grouped_gemm<WgmmaLoop>(arguments, stream)
                 : launch_grouped_gemm<MmaSyncLoop>(arguments, stream);
  }
  dim3 grid(blocks(arguments.n, simt::kTile),
            static_cast<unsigned int>(row_tile_slots(arguments.rows, arguments.experts, simt::kTile)));
  SimtKernels<GroupedGemmArguments> simt_kernels{grouped_gemm_simt_kernel<float>,
                                                 grouped_gemm_simt_kernel<bf16>,
                                                 grouped_gemm_simt_kernel<__half>};
  launch_simt(simt_kernels, arguments.input_type, grid, arguments, stream);
  return cudaGetLastError();
}

cudaError_t grouped_gemm_weight_grad(const GroupedWeightGradArguments& arguments, cudaStream_t stream) {
  if (arguments.n == 0 || arguments.k == 0 || arguments.experts == 0) return cudaSuccess;
  // NOTE: without rows, beta 0 still writes every expert's zeros (each block of the kernels sees no rows).
  if (arguments.rows == 0 && arguments.beta != 0.0f) return cudaSuccess;
  auto experts = static_cast<unsigned int>(arguments.experts);
  if (tensor_cores_fit(arguments.input_type, arguments.n, arguments.k, {arguments.d_y, arguments.x},
                       arguments.expert_stride, arguments.gradients)) {
    bool wgmma = false;
    cudaError_t status = wgmma_applies(&wgmma);
    if (status != cudaSuccess) return status;
    if (wgmma && tma_weight_grad_fits(arguments)) return launch_grouped_weight_grad_tma(arguments, stream);
    return wgmma ? launch_grouped_weight_grad<WgmmaLoop>(arguments, stream)
                 : launch_grouped_weight_grad<MmaSyncLoop>(arguments, stream);
  }
  dim3 grid(blocks(arguments.k, simt::kTile), blocks(arguments.n, simt::kTile), experts);
  SimtKernels<GroupedWeightGradArguments> simt_kernels{grouped_weight_grad_simt_kernel<float>,
                                                       grouped_weight_grad_simt_kernel<bf16>,
                                                       grouped_weight_grad_simt_kernel<__half>};
  launch_simt(simt_kernels, arguments.input_type, grid, arguments, stream);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
