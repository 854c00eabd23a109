#pragma once
// The CUDA backend's kernel launchers, grouped by op (each defined in cuda/<op>.cu with its kernels): raw device
// pointers and a cudaStream_t, the launch's cudaError_t returned (the dispatcher <op>.cc checks it). Compiled by nvcc
// (C++17) as well as by the host compiler, so it includes no project header beyond the CUDA runtime's.

#include <cstdint>
#include <cuda_runtime_api.h>

namespace hai::cuda::kernels {

// rmsnorm.h
// out [rows, width] fp32 (or bf16 with bf16_out), rstd [rows] <- x [rows, width], weight [width]; a warp per row
// where the rows are 16-byte aligned float4s at most 2048 wide, else a block per row (the same bits either way).
cudaError_t rmsnorm_forward(void* out, bool bf16_out, float* rstd, const float* x, const float* weight, float eps,
                            int64_t rows, int64_t width, cudaStream_t stream);

// sum [rows, width] = a + b (sum may be a or b), then out and rstd as rmsnorm_forward of sum, in the same pass;
// out_bf16 [rows, width] bf16 (or null, and only beside an fp32 out): out's values rounded once, in that pass too.
cudaError_t add_rmsnorm_forward(float* sum, void* out, bool bf16_out, void* out_bf16, float* rstd, const float* a,
                                const float* b, const float* weight, float eps, int64_t rows, int64_t width,
                                cudaStream_t stream);

// Rows per chunk of the weight gradient's first pass (a block of the one-pass backward: 512 blocks at 8192 rows), and
// the chunks of `rows` rows: the backward's partial buffer holds [chunks, width] fp32.
inline constexpr int64_t kWeightGradChunkRows = 16;
int64_t rmsnorm_weight_grad_chunks(int64_t rows);

struct RmsnormBackwardArguments {
  float* d_x;                   // [rows, width], overwritten
  void* d_x_bf16;               // [rows, width] bf16: d_x rounded once, or null
  float* d_weight;              // [width]: the sum over rows + weight_grad_beta * d_weight
  float* partial;               // [rmsnorm_weight_grad_chunks(rows), width] scratch
  const float* residual_grad;   // [rows, width] added to d_x, or null; may be d_x
  const float* d_out;           // [rows, width]
  const float* x;               // [rows, width]
  const float* weight;          // [width]
  const float* rstd;            // [rows]
  int64_t rows;
  int64_t width;
  float weight_grad_beta;       // 0 (d_weight is not read) or 1
};

// d_x, d_weight <- d_out, x, weight, rstd (framework/device/rmsnorm.h). d_weight sums over rows in a fixed order
// (deterministic).
cudaError_t rmsnorm_backward(const RmsnormBackwardArguments& arguments, cudaStream_t stream);

}  // namespace hai::cuda::kernels
