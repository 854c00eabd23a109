// Two "ranks" write slices of the same tensors into one checkpoint; reading by global name gives back the global
// tensors, and any slice of them, whatever slices were stored.

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <vector>

#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::expect_error;
using testing::ScratchDir;

// A tensor whose element at flat index i is base + i.
OwnedTensor counting(Shape shape, float base) {
  OwnedTensor tensor(shape, DType::f32);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = base + static_cast<float>(i);
  return tensor;
}

// A copy of the box [offsets, offsets + extents) of a 2-D tensor.
OwnedTensor crop(const OwnedTensor& global, std::vector<int64_t> offsets, std::vector<int64_t> extents) {
  OwnedTensor part(Shape(extents), DType::f32);
  int64_t columns = global.shape()[1];
  for (int64_t row = 0; row < extents[0]; ++row) {
    for (int64_t column = 0; column < extents[1]; ++column) {
      part.data<float>()[row * extents[1] + column] =
          global.data<float>()[(offsets[0] + row) * columns + offsets[1] + column];
    }
  }
  return part;
}

std::vector<float> values(const OwnedTensor& tensor) {
  return {tensor.data<float>(), tensor.data<float>() + tensor.numel()};
}

class ShardedCheckpoint : public ::testing::Test {
 protected:
  // Rank 0 and rank 1 each add their parts; `entries` gathers what each wrote, as a communicator would.
  void add(int rank, CheckpointGroup group, const std::string& name, const OwnedTensor& global,
           std::vector<int64_t> offsets, std::vector<int64_t> extents) {
    parts_.push_back(crop(global, offsets, extents));
    writers_[rank].add(group, name, global.shape().to_vector(), offsets, parts_.back());
  }
  std::string commit() {
    std::vector<std::string> entries = {writers_[0].write_rank_files(), writers_[1].write_rank_files()};
    CheckpointState state;
    state.step = 9;
    state.layout = {{"dp", 2}};
    return commit_checkpoint(dir_.str(), state, entries, 0);
  }

  ScratchDir dir_;
  std::vector<CheckpointWriter> writers_ = {CheckpointWriter(dir_.str(), 9, 0), CheckpointWriter(dir_.str(), 9, 1)};
  std::deque<OwnedTensor> parts_;  // stable addresses: the writers keep views
  OwnedTensor rows_ = counting(Shape{4, 6}, 0.0f);       // split by rows
  OwnedTensor columns_ = counting(Shape{6, 4}, 100.0f);  // split by columns
  OwnedTensor flat_ = counting(Shape{3, 4}, 200.0f);     // split like a ZeRO-1 flat shard: 6 elements per rank
  OwnedTensor replica_ = counting(Shape{2, 2}, 300.0f);  // replicated: rank 0 writes it
};

TEST_F(ShardedCheckpoint, SlicesFromTwoRanksReadBackAsTheGlobalTensors) {
  add(0, CheckpointGroup::model, "rows", rows_, {0, 0}, {2, 6});
  add(1, CheckpointGroup::model, "rows", rows_, {2, 0}, {2, 6});
  add(0, CheckpointGroup::model, "columns", columns_, {0, 0}, {6, 1});
  add(1, CheckpointGroup::model, "columns", columns_, {0, 1}, {6, 3});
  add(0, CheckpointGroup::optim, "flat", flat_, {0, 0}, {1, 4});  // elements 0..5: row 0 and half of row 1
  add(0, CheckpointGroup::optim, "flat", flat_, {1, 0}, {1, 2});
  add(1, CheckpointGroup::optim, "flat", flat_, {1, 2}, {1, 2});  // elements 6..11
  add(1, CheckpointGroup::optim, "flat", flat_, {2, 0}, {1, 4});
  add(0, CheckpointGroup::model, "replica", replica_, {0, 0}, {2, 2});
  CheckpointReader reader(commit());

  EXPECT_EQ(reader.state().layout["dp"], 2);
  EXPECT_EQ(reader.tensor("flat").slices.size(), 4u);
  EXPECT_EQ(reader.tensor("flat").slices[1].key, "flat[1:2, 0:2]");
  EXPECT_EQ(reader.tensor("rows").slices[1].file, "model-rank00001.safetensors");
  for (const auto& [name, global] : {std::pair<std::string, const OwnedTensor*>{"rows", &rows_},
                                     {"columns", &columns_}, {"flat", &flat_}, {"replica", &replica_}}) {
    OwnedTensor loaded(global->shape(), DType::f32);
    reader.read(name, loaded);
    EXPECT_EQ(values(loaded), values(*global)) << name;
  }
  // Slices that cross the stored ones: how a checkpoint is resharded into another layout.
  OwnedTensor middle(Shape{2, 3}, DType::f32);
  reader.read_slice("rows", {1, 2}, middle);
  EXPECT_EQ(values(middle), (std::vector<float>{8, 9, 10, 14, 15, 16}));
  OwnedTensor band(Shape{3, 2}, DType::f32);
  reader.read_slice("columns", {2, 0}, band);
  EXPECT_EQ(values(band), (std::vector<float>{108, 109, 112, 113, 116, 117}));
  OwnedTensor tail(Shape{2, 3}, DType::f32);
  reader.read_slice("flat", {1, 1}, tail);
  EXPECT_EQ(values(tail), (std::vector<float>{205, 206, 207, 209, 210, 211}));
}

TEST_F(ShardedCheckpoint, OverlappingSlicesAreRefusedAtCommit) {
  add(0, CheckpointGroup::model, "rows", rows_, {0, 0}, {3, 6});
  add(1, CheckpointGroup::model, "rows", rows_, {2, 0}, {2, 6});  // row 2 twice
  expect_error([&] { commit(); }, {"tensor 'rows'", "overlap"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "latest"));
}

TEST_F(ShardedCheckpoint, MissingSlicesAreRefusedAtCommit) {
  add(0, CheckpointGroup::model, "rows", rows_, {0, 0}, {2, 6});
  expect_error([&] { commit(); }, {"tensor 'rows'", "cover 12 of 24"});
}

TEST_F(ShardedCheckpoint, DisagreeingShapesAreRefusedAtCommit) {
  add(0, CheckpointGroup::model, "rows", rows_, {0, 0}, {4, 6});
  OwnedTensor other = counting(Shape{4, 5}, 0.0f);
  add(1, CheckpointGroup::model, "rows", other, {0, 0}, {4, 5});
  expect_error([&] { commit(); }, {"tensor 'rows'", "[4, 6]", "[4, 5]"});
}

}  // namespace
}  // namespace hai
