#pragma once
// What ZeRO-1 (parallel/zero1.h) needs to know of the DeepSeek-V3 model's parameters: which values it reads in
// fp32 (below), and its gradient buckets: the parameters whose gradients its backward pass finishes together. The
// whole-model stage's backward (PipelineStage::backward) announces each bucket (GradientsFinal) as soon as nothing
// more of the micro-batch adds to its gradients, so that data parallelism can reduce them under the rest of the
// backward. In the order the backward finishes them:
//   kHeadBucket:        the final norm and the output head (the head's weight gradient is made in the forward,
//                       chunk by chunk; the norm's at the start of the backward);
//   kEmbeddingBucket:   the embedding, last: after the MTP modules' weight gradients (their embeddings'
//                       contributions) and the decoder layers', with the input embedding's;
//   layer_bucket(l):    the parameters named "model.layers.<l>." (decoder layer l; MTP module k is layer
//                       num_layers + k - 1), after the layer's weight gradients: MTP modules first (before the
//                       embedding), then the decoder layers from the last to the first;
//   kGradientsFinalAtEnd: anything else (none of the model's parameters).

#include <functional>
#include <string_view>

#include "parallel/zero1.h"

namespace hai {

constexpr int kHeadBucket = 0;
constexpr int kEmbeddingBucket = -2;
constexpr int layer_bucket(int64_t layer) { return 1 + static_cast<int>(layer); }

// The bucket of a parameter of deepseek_v3_parameters() by its name.
int gradient_bucket(std::string_view parameter_name);

// Whether the model reads the parameter's fp32 master value, not only its compute copy (Zero1Options): the
// embedding (looked up in fp32), the norms' weights and the MoE gate (kept in fp32 by the FP8 recipe).
bool reads_fp32_value(const ParameterSpec& spec);

// Told the bucket whose gradients the backward has just finished (the caller's work to start, e.g. a reduction).
using GradientsFinal = std::function<void(int bucket)>;
// Told the bucket whose weights the forward pass is about to read (the caller's work to wait for, e.g. their
// all-gather: Zero1Optimizer::parameters_needed); the same buckets, in forward order.
using ParametersNeeded = std::function<void(int bucket)>;

}  // namespace hai
