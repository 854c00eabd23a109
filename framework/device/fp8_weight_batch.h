#pragma once
// Many weights quantised in 128x128 blocks at once, both as stored and transposed: the FP8 weight copies that the
// ParameterStore refreshes once per optimizer step. Each copy gets exactly quantize_128x128 and
// quantize_128x128_transposed (framework/device/fp8_quantize.h; exact scales), bit for bit; on the GPU one kernel
// does all copies, reading each weight once (instead of two launches per weight, each reading it).

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

struct Fp8WeightCopy {
  Tensor x;         // [N, K] fp32
  Tensor q;         // [N, K] e4m3
  Tensor scales;    // [ceil(N / 128), ceil(K / 128)] fp32
  Tensor q_t;       // [K, N] e4m3
  Tensor scales_t;  // [ceil(K / 128), ceil(N / 128)] fp32
};

class Fp8WeightBatch {
 public:
  Fp8WeightBatch() = default;
  // The copies' tensors must stay where they are while the batch is used; all on one device.
  explicit Fp8WeightBatch(std::vector<Fp8WeightCopy> copies);

  // Quantises every copy's x into its q, scales, q_t and scales_t.
  void quantize(Stream stream = {}) const;

 private:
  std::vector<Fp8WeightCopy> copies_;
  OwnedTensor table_;  // on a GPU: the kernel's table of the copies (fp8_weight_batch.cc); else undefined
  int64_t tiles_ = 0;  // 128x128 tiles of all copies
};

}  // namespace hai
