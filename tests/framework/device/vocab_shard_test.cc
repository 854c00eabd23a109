// The vocabulary-shard ops, the ranks' all-reduces played on the host: over three shards of a vocabulary of 11 (4, 4
// and 3 rows, as tp_range splits it), the losses equal cross_entropy_forward's and the shards' gradients together
// cross_entropy_backward's (an ignored target included); the shards' embedding rows sum to the whole embedding and
// their gradients are its rows.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "framework/device/cross_entropy.h"
#include "framework/device/embedding.h"
#include "framework/device/vocab_shard.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

constexpr int64_t kTokens = 5, kVocab = 11, kWidth = 3;
const std::vector<int64_t> kShardRows = {4, 4, 3};

// Rows [first, first + rows) of a host [R, W] fp32 tensor, as a copy.
OwnedTensor rows_of(const Tensor& whole, int64_t first, int64_t rows) {
  OwnedTensor part(Shape{rows, whole.size(1)}, DType::f32);
  std::copy_n(whole.data<float>() + first * whole.size(1), rows * whole.size(1), part.tensor().data<float>());
  return part;
}

TEST(VocabShard, CrossEntropyOverShardsMatchesTheWholeVocabulary) {
  OwnedTensor logits = testing::random_tensor(Shape{kTokens, kVocab}, 3, 4.0f);
  OwnedTensor targets = testing::indices_of({10, 0, kIgnoreTarget, 4, 7});
  OwnedTensor expected_losses(Shape{kTokens}, DType::f32), expected_grad(Shape{kTokens, kVocab}, DType::f32);
  cross_entropy_forward(expected_losses, logits, targets);
  cross_entropy_backward(expected_grad, logits, targets, 0.5f);

  std::vector<OwnedTensor> shards;
  for (int64_t first = 0, shard = 0; shard < 3; first += kShardRows[static_cast<size_t>(shard++)]) {
    shards.push_back(testing::columns_of(logits, first, kShardRows[static_cast<size_t>(shard)]));
  }
  OwnedTensor row_max(Shape{kTokens}, DType::f32), shard_max(Shape{kTokens}, DType::f32);
  std::fill_n(row_max.data<float>(), kTokens, -1e30f);
  for (const OwnedTensor& shard : shards) {  // the all-reduce max
    vocab_shard_row_max(shard_max, shard);
    for (int64_t t = 0; t < kTokens; ++t) {
      row_max.data<float>()[t] = std::max(row_max.data<float>()[t], shard_max.data<float>()[t]);
    }
  }
  OwnedTensor stats = zero_tensor(Shape{3, kTokens}, DType::f32), shard_stats(Shape{3, kTokens}, DType::f32);
  int64_t first = 0;
  for (const OwnedTensor& shard : shards) {  // the all-reduce sum
    vocab_shard_softmax_stats(shard_stats, shard, row_max, targets, first);
    for (int64_t i = 0; i < 3 * kTokens; ++i) stats.data<float>()[i] += shard_stats.data<float>()[i];
    first += shard.tensor().size(1);
  }
  first = 0;
  for (const OwnedTensor& shard : shards) {
    int64_t rows = shard.tensor().size(1);
    OwnedTensor losses(Shape{kTokens}, DType::f32), d_logits(Shape{kTokens, rows}, DType::f32);
    vocab_shard_loss_and_grad(losses, d_logits, shard, row_max, stats, targets, first, 0.5f);
    for (int64_t t = 0; t < kTokens; ++t) {
      EXPECT_NEAR(losses.data<float>()[t], expected_losses.data<float>()[t], 1e-6) << "token " << t;
    }
    OwnedTensor expected = testing::columns_of(expected_grad, first, rows);
    for (int64_t i = 0; i < d_logits.numel(); ++i) {
      EXPECT_NEAR(d_logits.data<float>()[i], expected.data<float>()[i], 1e-7) << "shard at " << first << " " << i;
    }
    first += rows;
  }
}

TEST(VocabShard, EmbeddingShardsSumToTheWholeEmbedding) {
  OwnedTensor table = testing::random_tensor(Shape{kVocab, kWidth}, 5);
  OwnedTensor ids = testing::indices_of({10, 0, 3, 4, 3});
  OwnedTensor expected(Shape{kTokens, kWidth}, DType::f32);
  embedding_forward(expected, table, ids);
  OwnedTensor d_out = testing::random_tensor(Shape{kTokens, kWidth}, 6);
  OwnedTensor expected_grad = zero_tensor(Shape{kVocab, kWidth}, DType::f32);
  embedding_backward(expected_grad, d_out, ids);

  OwnedTensor sum = zero_tensor(Shape{kTokens, kWidth}, DType::f32), part(Shape{kTokens, kWidth}, DType::f32);
  int64_t first = 0;
  for (int64_t rows : kShardRows) {
    embedding_shard_forward(part, rows_of(table, first, rows), ids, first);
    for (int64_t i = 0; i < sum.numel(); ++i) sum.data<float>()[i] += part.data<float>()[i];
    OwnedTensor d_table = zero_tensor(Shape{rows, kWidth}, DType::f32);
    embedding_shard_backward(d_table, d_out, ids, first);
    EXPECT_TRUE(testing::same_bytes(d_table, rows_of(expected_grad, first, rows))) << "shard at " << first;
    first += rows;
  }
  EXPECT_TRUE(testing::same_bytes(sum, expected));
}

}  // namespace
}  // namespace hai
