#pragma once
// A micro-batch's token rows on the model's device, built on the host from its token windows and copied once:
// the main model's inputs, targets and positions and every MTP depth's ids and targets, with the number of targets
// each of them counts. Every pipeline stage builds them from the same windows (pipeline_stage.h).

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

// The targets a micro-batch counts, known on the host from its tokens.
struct CountedTokens {
  int64_t lm = 0;
  std::vector<int64_t> mtp;  // one per depth
};

// T = B * S tokens.
struct MicroBatchInputs {
  int64_t seq_len = 0;              // S
  OwnedTensor batch;                // [3 + 2D, T] i32 on the device: the rows below
  Tensor inputs;                    // [T] i32 tokens[:, :S]
  Tensor targets;                   // [T] i32 tokens[:, 1:]
  Tensor positions;                 // [T] i32 t % S
  std::vector<Tensor> mtp_ids;      // [D][T] i32 t_{i+k} (0 past the window)
  std::vector<Tensor> mtp_targets;  // [D][T] i32 t_{i+k+1} or kIgnoreTarget
  CountedTokens counted;
};

// tokens: [B, S + 1] i32 on the host (inputs tokens[:, :S], targets tokens[:, 1:]). Depth 0 is the main model:
// ids t_i, targets t_{i+1}; depth k: ids t_{i+k} (0 past the window), targets t_{i+k+1} (kIgnoreTarget past it).
MicroBatchInputs upload_micro_batch(const Tensor& tokens, int64_t mtp_depth, Device device);

}  // namespace hai
