#pragma once
// AdamW on whole weights that keep FP8 copies (fp8_weight_batch.h), each weight's copies quantised from its updated
// values in the same pass: on the GPU one kernel, a block per 128x128 tile that updates the tile's elements and
// quantises them from its registers, so the updated values are not read again (the separate quantisation read 4 of
// the 6 bytes it moved a parameter). Values, moments and copies equal fused_adamw_step's (with these weights as its
// segments) followed by Fp8WeightBatch::quantize, bit for bit; the CPU does exactly that. A NaN gradient scale
// skips the step and leaves the copies as they are.

#include <cstdint>
#include <vector>

#include "framework/device/adamw.h"
#include "framework/device/adamw_segments.h"
#include "framework/device/fp8_weight_batch.h"
#include "framework/device/fused_adamw.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct AdamWFp8Weight {
  Fp8WeightCopy copy;        // copy.x: the weight's values, [N, K] inside the batch's values
  int64_t state_offset = 0;  // its first element in the gradients and moments (row-major, contiguous)
  bool weight_decay = false;
};

class AdamWFp8Batch {
 public:
  AdamWFp8Batch() = default;  // no weights
  // values: [V] fp32, the flat buffer every copy.x lies in; the tensors must stay where they are while the batch is
  // used. Throws on a weight outside `values`, a non-contiguous one, or copies that do not fit (fp8_weight_batch.h).
  AdamWFp8Batch(const Tensor& values, std::vector<AdamWFp8Weight> weights);

  bool empty() const { return count_ == 0; }
  // grads: [M] fp32; exp_avg, exp_avg_sq: [M] fp32 or bf16 (updated); every weight's states inside [0, M).
  void step(const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq, const AdamWSettings& settings,
            const GradientScale& gradient_scale, Stream stream = {}) const;

 private:
  Tensor values_;
  int64_t count_ = 0;
  AdamWSegmentTable segments_;  // the weights as fused_adamw_step's segments (on a GPU only checked against)
  Fp8WeightBatch copies_;       // their FP8 copies: quantised on the CPU, the kernel's weight table on a GPU
  OwnedTensor state_table_;     // on a GPU: cuda::fused_adamw_fp8_state_table
};

}  // namespace hai
