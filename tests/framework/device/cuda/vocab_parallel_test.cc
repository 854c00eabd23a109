// CPU/GPU parity of the vocabulary-shard ops of tensor parallelism (framework/device/vocab_shard.h), and the GPU
// ops over the two shards of tp 2 (the ranks' all-reduces played on the host) against the CPU cross-entropy of the
// whole vocabulary. Shards of the byte vocabulary (257 at tp 2: rows [0, 129) and [129, 257)) and of a vocabulary
// of 32771 (rows [16386, 32771): an odd first id). gtest filter: *VocabParallel*.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/device/cross_entropy.h"
#include "framework/device/vocab_shard.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kTokens = 37;
constexpr int64_t kWidth = 129;
constexpr float kScale = 1.0f / 30;

struct Shard {
  int64_t vocab;  // the whole vocabulary
  int64_t first;  // the shard's first global id
  int64_t rows;   // the shard's rows

  std::string name() const {
    return std::to_string(first) + "_" + std::to_string(rows) + "_of_" + std::to_string(vocab);
  }
};
const Shard kShards[] = {{257, 0, 129}, {257, 129, 128}, {32771, 16386, 16385}};

// Global targets uniform over the vocabulary (most outside a shard of two), but for the shard's first and last id
// at tokens 1 and 2; every fifth ignored.
OwnedTensor targets_for(const Shard& shard) {
  OwnedTensor targets = testing::random_indices(kTokens, shard.vocab, 2);
  int32_t* target = targets.data<int32_t>();
  target[1] = static_cast<int32_t>(shard.first);
  target[2] = static_cast<int32_t>(shard.first + shard.rows - 1);
  for (int64_t t = 0; t < kTokens; t += 5) target[t] = kIgnoreTarget;
  return targets;
}

OwnedTensor shard_logits(const Shard& shard) { return testing::random_tensor(Shape{kTokens, shard.rows}, 1, 3.0f); }

// The reduced row maxima and statistics of a shard's logits as the CPU computes them (a maximum 0.5 above the
// shard's own: another rank's).
OwnedTensor global_row_max(const Tensor& logits) {
  OwnedTensor row_max(Shape{kTokens}, DType::f32);
  vocab_shard_row_max(row_max, logits);
  for (int64_t t = 0; t < kTokens; ++t) row_max.data<float>()[t] += 0.5f;
  return row_max;
}
OwnedTensor stats_of(const Tensor& logits, const Tensor& row_max, const Tensor& targets, int64_t first) {
  OwnedTensor stats(Shape{3, kTokens}, DType::f32);
  vocab_shard_softmax_stats(stats, logits, row_max, targets, first);
  return stats;
}

// fp32 exponentials summed in double against double ones: ~1e-7 relative; the low word (at most half an ulp of the
// high one, here below 1e-5) is absorbed by atol.
constexpr Tolerance kStats{.atol = 1e-5, .rtol = 1e-6};
constexpr Tolerance kLoss{.atol = 1e-5, .rtol = 1e-6};
constexpr Tolerance kGradient{.atol = 1e-9, .rtol = 1e-5};
constexpr Tolerance kBf16Gradient{.atol = 1e-9, .rtol = 8e-3};

TEST(CudaVocabParallel, EmbeddingShardForwardMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const Shard& shard : kShards) {
    int64_t first = shard.first;
    ParityCase forward;
    forward.output(testing::random_tensor(Shape{kTokens * 20, kWidth}, 7), Tolerance{});
    forward.input(testing::random_tensor(Shape{shard.rows, kWidth}, 1));
    forward.input(testing::random_indices(kTokens * 20, shard.vocab, 2));
    forward.run([first](const std::vector<Tensor>& t) { embedding_shard_forward(t[0], t[1], t[2], first); },
                "embedding_shard_forward_" + shard.name());
  }
}

// Bit for bit: each row adds its tokens' rows in their order (ids drawn from the whole vocabulary and from the
// shard's first 7 ids, so that runs of hundreds of tokens share a row).
TEST(CudaVocabParallel, EmbeddingShardBackwardMatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const Shard& shard : kShards) {
    for (bool crowded : {false, true}) {
      int64_t first = shard.first;
      OwnedTensor ids = testing::random_indices(kTokens * 20, crowded ? 7 : shard.vocab, 5);
      if (crowded) {
        for (int64_t t = 0; t < ids.numel(); ++t) ids.data<int32_t>()[t] += static_cast<int32_t>(first);
      }
      ParityCase backward;
      backward.output(testing::random_tensor(Shape{shard.rows, kWidth}, 3), Tolerance{});
      backward.input(testing::random_tensor(Shape{kTokens * 20, kWidth}, 4));
      backward.input(std::move(ids));
      backward.run([first](const std::vector<Tensor>& t) { embedding_shard_backward(t[0], t[1], t[2], first); },
                   "embedding_shard_backward_" + shard.name() + (crowded ? "_crowded" : ""));
    }
  }
}

TEST(CudaVocabParallel, RowMaxAndStatsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const Shard& shard : kShards) {
    ParityCase row_max;
    row_max.output(OwnedTensor(Shape{kTokens}, DType::f32), Tolerance{});
    row_max.input(shard_logits(shard));
    row_max.run([](const std::vector<Tensor>& t) { vocab_shard_row_max(t[0], t[1]); },
                "vocab_shard_row_max_" + shard.name());

    int64_t first = shard.first;
    OwnedTensor logits = shard_logits(shard);
    ParityCase stats;
    stats.output(OwnedTensor(Shape{3, kTokens}, DType::f32), kStats);
    stats.input(global_row_max(logits));
    stats.input(targets_for(shard));
    stats.input(std::move(logits));
    stats.run([first](const std::vector<Tensor>& t) { vocab_shard_softmax_stats(t[0], t[3], t[1], t[2], first); },
              "vocab_shard_softmax_stats_" + shard.name());
  }
}

// Losses alone (evaluation), with fp32 gradients, with bf16 gradients, and fp32 gradients in place of the logits.
TEST(CudaVocabParallel, LossAndGradMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const Shard& shard : kShards) {
    int64_t first = shard.first;
    OwnedTensor logits = shard_logits(shard);
    OwnedTensor targets = targets_for(shard);
    OwnedTensor row_max = global_row_max(logits);
    OwnedTensor stats = stats_of(logits, row_max, targets, first);
    for (const char* gradient : {"none", "fp32", "bf16", "in_place"}) {
      std::string kind = gradient;
      ParityCase loss;
      loss.output(OwnedTensor(Shape{kTokens}, DType::f32), kLoss);  // 0
      loss.input(testing::copy_to(row_max, Device::cpu()));         // 1
      loss.input(testing::copy_to(stats, Device::cpu()));           // 2
      loss.input(testing::copy_to(targets, Device::cpu()));         // 3
      if (kind == "in_place") {
        loss.output(testing::copy_to(logits, Device::cpu()), kGradient);  // 4: logits, then d_logits
      } else {
        loss.input(testing::copy_to(logits, Device::cpu()));  // 4
      }
      if (kind == "fp32") loss.output(OwnedTensor(Shape{kTokens, shard.rows}, DType::f32), kGradient);  // 5
      if (kind == "bf16") loss.output(OwnedTensor(Shape{kTokens, shard.rows}, DType::bf16), kBf16Gradient);
      loss.run(
          [first, kind](const std::vector<Tensor>& t) {
            Tensor d_logits = kind == "none" ? Tensor() : (kind == "in_place" ? t[4] : t[5]);
            vocab_shard_loss_and_grad(t[0], d_logits, t[4], t[1], t[2], t[3], first, kScale);
          },
          "vocab_shard_loss_and_grad_" + kind + "_" + shard.name());
    }
  }
}

// tp 2 on one GPU: the shards' ops on the GPU, their all-reduces on the host, give the losses and (shard by shard)
// the gradients of the CPU's cross-entropy over the whole vocabulary.
TEST(CudaVocabParallel, TwoShardsOnTheGpuMatchTheCpuCrossEntropy) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t vocab : {int64_t{257}, int64_t{32771}}) {
    Shard whole{vocab, 0, vocab};
    OwnedTensor logits = testing::random_tensor(Shape{kTokens, vocab}, 1, 3.0f);
    OwnedTensor targets = targets_for(whole);
    OwnedTensor expected_losses(Shape{kTokens}, DType::f32), expected_grad(Shape{kTokens, vocab}, DType::f32);
    cross_entropy_loss_and_grad(expected_losses, expected_grad, logits, targets, kScale);

    int64_t first_rows = (vocab + 1) / 2;  // tp_range(vocab, 2, 0)
    const int64_t firsts[] = {0, first_rows};
    const int64_t rows[] = {first_rows, vocab - first_rows};
    std::vector<OwnedTensor> shards;
    for (int r = 0; r < 2; ++r) {
      shards.push_back(testing::copy_to(testing::columns_of(logits, firsts[r], rows[r]), Device::cuda(0)));
    }
    OwnedTensor gpu_targets = testing::copy_to(targets, Device::cuda(0));

    OwnedTensor row_max(Shape{kTokens}, DType::f32);  // the all-reduce max, on the host
    std::fill_n(row_max.data<float>(), kTokens, -INFINITY);
    for (const OwnedTensor& shard : shards) {
      OwnedTensor shard_max(Shape{kTokens}, DType::f32, Device::cuda(0));
      vocab_shard_row_max(shard_max, shard);
      OwnedTensor host = testing::copy_to(shard_max, Device::cpu());
      for (int64_t t = 0; t < kTokens; ++t) {
        row_max.data<float>()[t] = std::max(row_max.data<float>()[t], host.data<float>()[t]);
      }
    }
    OwnedTensor gpu_row_max = testing::copy_to(row_max, Device::cuda(0));
    OwnedTensor stats = zero_tensor(Shape{3, kTokens}, DType::f32);  // the all-reduce sum, on the host
    for (int r = 0; r < 2; ++r) {
      OwnedTensor shard_stats(Shape{3, kTokens}, DType::f32, Device::cuda(0));
      vocab_shard_softmax_stats(shard_stats, shards[r], gpu_row_max, gpu_targets, firsts[r]);
      OwnedTensor host = testing::copy_to(shard_stats, Device::cpu());
      for (int64_t i = 0; i < 3 * kTokens; ++i) stats.data<float>()[i] += host.data<float>()[i];
    }
    OwnedTensor gpu_stats = testing::copy_to(stats, Device::cuda(0));
    for (int r = 0; r < 2; ++r) {
      OwnedTensor losses(Shape{kTokens}, DType::f32, Device::cuda(0));
      OwnedTensor d_logits(Shape{kTokens, rows[r]}, DType::f32, Device::cuda(0));
      vocab_shard_loss_and_grad(losses, d_logits, shards[r], gpu_row_max, gpu_stats, gpu_targets, firsts[r],
                                kScale);
      std::string name = "two_shards_" + std::to_string(vocab) + "_rank" + std::to_string(r);
      testing::expect_close(testing::copy_to(losses, Device::cpu()), expected_losses, kLoss, name + "_losses");
      OwnedTensor expected = testing::columns_of(expected_grad, firsts[r], rows[r]);
      testing::expect_close(testing::copy_to(d_logits, Device::cpu()), expected, kGradient, name + "_gradient");
    }
  }
}

}  // namespace
}  // namespace hai
