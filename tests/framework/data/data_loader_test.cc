#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "framework/data/data_loader.h"
#include "framework/data/document_split.h"
#include "framework/data/indexed_dataset_writer.h"
#include "framework/data/packed_window_source.h"
#include "framework/data/synthetic_source.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

using Rows = std::vector<std::vector<int32_t>>;

// A dataset whose tokens count up 0, 1, 2, ... across documents of lengths 1..13, so that a token's value is its
// position in the whole corpus and its document can be recovered from it.
class SamplerTest : public ::testing::Test {
 protected:
  static constexpr int kDocuments = 300;

  void SetUp() override {
    prefix_ = directory_.file("counting");
    IndexedDatasetWriter writer(prefix_, TokenDType::i32);
    int32_t next = 0;
    for (int document = 0; document < kDocuments; ++document) {
      std::vector<int32_t> tokens(static_cast<size_t>(1 + document % 13));
      for (int32_t& token : tokens) {
        document_of_token_.push_back(document);
        token = next++;
      }
      writer.add_document(tokens);
    }
    writer.finalize();
    dataset_ = std::make_shared<const IndexedDataset>(prefix_);
  }

  std::shared_ptr<PackedWindowSource> source(int64_t seq_len, DataSplit split = DataSplit::train,
                                             double valid_fraction = 0.0) const {
    return make_packed_window_source(dataset_, split, valid_fraction, seq_len);
  }

  testing::TempDirectory directory_;
  std::string prefix_;
  std::shared_ptr<const IndexedDataset> dataset_;
  std::vector<int> document_of_token_;
};

Rows rows_of(const OwnedTensor& tokens) {
  Rows rows;
  int64_t width = tokens.shape()[1];
  for (int64_t row = 0; row < tokens.shape()[0]; ++row) {
    const int32_t* begin = tokens.data<int32_t>() + row * width;
    rows.emplace_back(begin, begin + width);
  }
  return rows;
}

// The rows of `micro_batches` micro-batches of one loader.
Rows take(DataLoader& loader, int micro_batches) {
  Rows rows;
  for (int i = 0; i < micro_batches; ++i) {
    Rows batch = rows_of(loader.next());
    rows.insert(rows.end(), batch.begin(), batch.end());
  }
  return rows;
}

TEST_F(SamplerTest, WindowsAreConsecutiveChunksOverlappingByOneToken) {
  auto windows = source(/*seq_len=*/8);
  int64_t tokens = windows->stream().token_count();
  EXPECT_EQ(tokens, static_cast<int64_t>(document_of_token_.size()));
  EXPECT_EQ(windows->window_count(), static_cast<uint64_t>((tokens - 1) / 8));
  std::vector<int32_t> window(9);
  windows->read_window(3, window);
  EXPECT_EQ(window, (std::vector<int32_t>{24, 25, 26, 27, 28, 29, 30, 31, 32}));
  windows->read_window(windows->window_count() - 1, window);
  EXPECT_LE(window.back(), tokens - 1);
  EXPECT_THROW(windows->read_window(windows->window_count(), window), Error);
  EXPECT_THROW(source(/*seq_len=*/static_cast<int64_t>(tokens)), Error);  // needs seq_len + 1 tokens
}

TEST_F(SamplerTest, SameSeedSameSamplesOtherSeedOthers) {
  DataLoader first(source(16), {.micro_batch_size = 4, .seed = 5});
  DataLoader again(source(16), {.micro_batch_size = 4, .seed = 5});
  DataLoader other(source(16), {.micro_batch_size = 4, .seed = 6});
  Rows rows = take(first, 10);
  EXPECT_EQ(rows, take(again, 10));
  EXPECT_NE(rows, take(other, 10));
  // Every row is a window: seq_len + 1 consecutive tokens, inputs then the targets shifted by one.
  for (const std::vector<int32_t>& row : rows) {
    ASSERT_EQ(row.size(), 17u);
    EXPECT_EQ(row[0] % 16, 0);
    for (size_t j = 1; j < row.size(); ++j) EXPECT_EQ(row[j], row[j - 1] + 1);
  }
}

TEST_F(SamplerTest, EachEpochUsesEveryWindowOnceInANewOrder) {
  auto windows = source(32);
  uint64_t count = windows->window_count();
  DataLoader loader(windows, {.micro_batch_size = 1, .seed = 11});
  std::vector<uint64_t> epoch0, epoch1;
  for (uint64_t i = 0; i < count; ++i) {
    EXPECT_EQ(loader.epoch(), 0u);
    epoch0.push_back(static_cast<uint64_t>(loader.next().data<int32_t>()[0] / 32));
  }
  for (uint64_t i = 0; i < count; ++i) {
    EXPECT_EQ(loader.epoch(), 1u);
    epoch1.push_back(static_cast<uint64_t>(loader.next().data<int32_t>()[0] / 32));
  }
  EXPECT_EQ(loader.epoch(), 2u);
  EXPECT_NE(epoch0, epoch1);
  std::sort(epoch0.begin(), epoch0.end());
  std::sort(epoch1.begin(), epoch1.end());
  EXPECT_EQ(epoch0, epoch1);
  for (uint64_t i = 0; i < count; ++i) EXPECT_EQ(epoch0[i], i);
}

TEST_F(SamplerTest, GlobalBatchIsTheSameForEveryDataParallelSize) {
  // global batch 16 = micro_batch_size x micro_batches x dp, for dp = 1, 2, 4 (3 steps).
  struct Layout {
    int dp;
    int64_t micro_batch_size;
    int micro_batches;
  };
  auto step_rows = [&](Layout layout, int step) {
    Rows rows;
    for (int rank = 0; rank < layout.dp; ++rank) {
      DataLoader loader(source(16), {.micro_batch_size = layout.micro_batch_size, .dp_rank = rank,
                                     .dp_size = layout.dp, .seed = 3});
      take(loader, step * layout.micro_batches);  // the earlier steps
      Rows mine = take(loader, layout.micro_batches);
      rows.insert(rows.end(), mine.begin(), mine.end());
    }
    std::sort(rows.begin(), rows.end());
    return rows;
  };
  for (int step = 0; step < 3; ++step) {
    Rows single = step_rows({1, 4, 4}, step);
    EXPECT_EQ(single.size(), 16u);
    EXPECT_EQ(step_rows({2, 2, 4}, step), single) << "step " << step;
    EXPECT_EQ(step_rows({4, 2, 2}, step), single) << "step " << step;
    EXPECT_EQ(step_rows({4, 4, 1}, step), single) << "step " << step;
  }
}

TEST_F(SamplerTest, DataParallelRanksReadDisjointSamples) {
  DataLoader rank0(source(16), {.micro_batch_size = 3, .dp_rank = 0, .dp_size = 2, .seed = 1});
  DataLoader rank1(source(16), {.micro_batch_size = 3, .dp_rank = 1, .dp_size = 2, .seed = 1});
  Rows rows0 = take(rank0, 4), rows1 = take(rank1, 4);
  std::set<std::vector<int32_t>> all(rows0.begin(), rows0.end());
  all.insert(rows1.begin(), rows1.end());
  EXPECT_EQ(all.size(), 24u);
  EXPECT_EQ(rank0.position(), rank1.position());
  EXPECT_EQ(rank0.position().consumed_samples, 24u);
}

TEST_F(SamplerTest, ResumesExactlyFromASavedPosition) {
  DataLoaderOptions options{.micro_batch_size = 2, .dp_rank = 1, .dp_size = 2, .seed = 9};
  DataLoader original(source(16), options);
  take(original, 7);
  std::string saved = original.position().serialize();
  Rows expected = take(original, 50);  // crosses into the next epoch

  DataLoader resumed(source(16), options);
  resumed.set_position(DataPosition::parse(saved));
  EXPECT_EQ(take(resumed, 50), expected);

  DataPosition position = DataPosition::parse(saved);
  EXPECT_EQ(position.consumed_samples, 28u);
  EXPECT_EQ(saved, "consumed_samples=28 seed=9 windows_per_epoch=" + std::to_string(source(16)->window_count()));
  DataLoader other_seed(source(16), {.micro_batch_size = 2, .seed = 10});
  EXPECT_THROW(other_seed.set_position(position), Error);
  DataLoader other_length(source(8), options);
  EXPECT_THROW(other_length.set_position(position), Error);
  EXPECT_THROW(DataPosition::parse("consumed_samples=1 seed=x windows_per_epoch=3"), Error);
  EXPECT_THROW(DataPosition::parse("consumed_samples=1 seed=2"), Error);
  EXPECT_THROW(DataPosition::parse("consumed_samples=1 seed=2 windows_per_epoch=3 more"), Error);
}

TEST_F(SamplerTest, ValidationSplitIsFixedAndSeparate) {
  std::vector<int64_t> valid = documents_of_split(*dataset_, DataSplit::valid, 0.2);
  std::vector<int64_t> train = documents_of_split(*dataset_, DataSplit::train, 0.2);
  EXPECT_EQ(valid.size() + train.size(), static_cast<size_t>(kDocuments));
  EXPECT_GT(valid.size(), 30u);  // 60 expected
  EXPECT_LT(valid.size(), 90u);
  std::vector<int64_t> all;
  std::merge(valid.begin(), valid.end(), train.begin(), train.end(), std::back_inserter(all));
  for (int64_t d = 0; d < kDocuments; ++d) EXPECT_EQ(all[static_cast<size_t>(d)], d);
  // Raising the fraction only adds validation documents.
  std::vector<int64_t> more = documents_of_split(*dataset_, DataSplit::valid, 0.5);
  EXPECT_TRUE(std::includes(more.begin(), more.end(), valid.begin(), valid.end()));
  EXPECT_TRUE(documents_of_split(*dataset_, DataSplit::valid, 0.0).empty());
  EXPECT_EQ(documents_of_split(*dataset_, DataSplit::valid, 1.0).size(), static_cast<size_t>(kDocuments));
  EXPECT_THROW(documents_of_split(*dataset_, DataSplit::valid, 1.5), Error);

  // Validation windows hold only validation documents, training windows only training ones, whatever the seed
  // and data-parallel layout.
  std::set<int64_t> valid_set(valid.begin(), valid.end());
  for (DataSplit split : {DataSplit::train, DataSplit::valid}) {
    for (int dp : {1, 2}) {
      DataLoader loader(source(8, split, 0.2), {.micro_batch_size = 4, .dp_rank = dp - 1, .dp_size = dp,
                                                .seed = static_cast<uint64_t>(dp)});
      for (const std::vector<int32_t>& row : take(loader, 8)) {
        for (int32_t token : row) {
          bool in_valid = valid_set.count(document_of_token_[static_cast<size_t>(token)]) > 0;
          EXPECT_EQ(in_valid, split == DataSplit::valid);
        }
      }
    }
  }
}

TEST(SyntheticSource, IsDeterministicAndInVocabulary) {
  auto source = std::make_shared<SyntheticSource>(/*vocab_size=*/1000, /*seq_len=*/64, /*seed=*/7);
  std::vector<int32_t> window(65), again(65), next(65);
  source->read_window(12, window);
  source->read_window(12, again);
  source->read_window(13, next);
  EXPECT_EQ(window, again);
  EXPECT_NE(window, next);
  SyntheticSource other_seed(1000, 64, 8);
  other_seed.read_window(12, again);
  EXPECT_NE(window, again);

  DataLoader loader(source, {.micro_batch_size = 8, .seed = 1});
  OwnedTensor tokens = loader.next();
  EXPECT_EQ(tokens.shape(), (Shape{8, 65}));
  double sum = 0;
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    int32_t token = tokens.data<int32_t>()[i];
    ASSERT_GE(token, 0);
    ASSERT_LT(token, 1000);
    sum += token;
  }
  EXPECT_NEAR(sum / static_cast<double>(tokens.numel()), 499.5, 40.0);  // 520 uniform tokens: sd of mean ~12.7
}

TEST(DataLoader, RejectsBadOptionsAndTensors) {
  auto source = std::make_shared<SyntheticSource>(10, 4, 0);
  EXPECT_THROW(DataLoader(source, {.micro_batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(source, {.dp_rank = 2, .dp_size = 2}), Error);
  DataLoader loader(source, {.micro_batch_size = 2});
  OwnedTensor wrong_shape(Shape{2, 4}, DType::i32), wrong_dtype(Shape{2, 5}, DType::f32);
  EXPECT_THROW(loader.next(wrong_shape), Error);
  EXPECT_THROW(loader.next(wrong_dtype), Error);
}

}  // namespace
}  // namespace hai
