#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "framework/checkpoint/crc32c.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::file_text;
using testing::ScratchDir;

// Fills a tensor's bytes with a pattern that differs per tensor and per byte.
void fill_pattern(const Tensor& tensor, uint8_t seed) {
  auto* bytes = static_cast<uint8_t*>(tensor.raw());
  for (size_t i = 0; i < tensor.bytes(); ++i) bytes[i] = static_cast<uint8_t>(seed + 37 * i);
}

using testing::same_bytes;

CheckpointState example_state(int64_t step) {
  CheckpointState state;
  state.step = step;
  state.consumed_samples = 64 * step;
  state.data_position = {{"consumed_samples", 64 * step}, {"seed", 7}, {"windows_per_epoch", 1234}};
  state.rng_state = {{"seed", 1234}, {"offset", 99}};
  state.config = {{"model", {{"hidden_size", 64}}}, {"train", {{"steps", 100}}}};
  state.layout = {{"dp", 1}, {"pp", 1}, {"tp", 1}, {"ep", 1}};
  return state;
}

TEST(CheckpointRoundTrip, TensorsOfSeveralDtypesAndTheStateComeBackExactly) {
  ScratchDir dir;
  std::vector<std::pair<std::string, OwnedTensor>> tensors;
  tensors.emplace_back("model.embed_tokens.weight", OwnedTensor(Shape{7, 5}, DType::f32));
  tensors.emplace_back("model.norm.weight", OwnedTensor(Shape{5}, DType::bf16));
  tensors.emplace_back("model.layers.0.mlp.experts.1.up_proj.weight", OwnedTensor(Shape{2, 3, 4}, DType::e4m3));
  tensors.emplace_back("model.layers.0.mlp.gate.e_score_correction_bias", OwnedTensor(Shape{3}, DType::f16));
  tensors.emplace_back("optim.step", OwnedTensor(Shape{}, DType::i64));
  tensors.emplace_back("optim.exp_avg.model.norm.weight", OwnedTensor(Shape{5}, DType::bf16));
  tensors.emplace_back("optim.token_counts", OwnedTensor(Shape{0, 3}, DType::i32));
  CheckpointWriter writer(dir.str(), 1000);
  for (size_t i = 0; i < tensors.size(); ++i) {
    fill_pattern(tensors[i].second, static_cast<uint8_t>(i));
    CheckpointGroup group = tensors[i].first.starts_with("optim.") ? CheckpointGroup::optim : CheckpointGroup::model;
    writer.add(group, tensors[i].first, tensors[i].second);
  }
  std::string step_dir = commit_checkpoint(dir.str(), example_state(1000), {writer.write_rank_files()}, 3);

  EXPECT_EQ(step_dir, dir / "step_00001000");
  EXPECT_EQ(file_text(dir / "latest"), "step_00001000\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "step_00001000.tmp"));
  CheckpointReader reader(step_dir);
  EXPECT_EQ(reader.state().step, 1000);
  EXPECT_EQ(reader.state().consumed_samples, 64000);
  EXPECT_EQ(reader.state().data_position, example_state(1000).data_position);
  EXPECT_EQ(reader.state().rng_state, example_state(1000).rng_state);
  EXPECT_EQ(reader.state().config, example_state(1000).config);
  EXPECT_EQ(reader.state().layout, example_state(1000).layout);
  ASSERT_EQ(reader.tensors().size(), tensors.size());
  for (const auto& [name, original] : tensors) {
    SCOPED_TRACE(name);
    OwnedTensor loaded(original.shape(), original.tensor().dtype());
    reader.read(name, loaded);
    EXPECT_TRUE(same_bytes(loaded, original));
    const TensorRecord& record = reader.tensor(name);
    EXPECT_EQ(record.shape, original.shape().to_vector());
    ASSERT_EQ(record.slices.size(), 1u);
    EXPECT_EQ(record.slices[0].key, name);  // a whole tensor is stored under its own name
    EXPECT_EQ(record.slices[0].crc32c, crc32c({static_cast<const std::byte*>(original.tensor().raw()),
                                               original.tensor().bytes()}));
  }
  EXPECT_EQ(reader.tensor("optim.step").group, CheckpointGroup::optim);
  EXPECT_EQ(reader.tensor("model.norm.weight").slices[0].file, "model-rank00000.safetensors");
  EXPECT_EQ(reader.tensor("optim.step").slices[0].file, "optim-rank00000.safetensors");
  reader.verify_all();
}

TEST(CheckpointRoundTrip, ManifestRecordsTheContract) {
  ScratchDir dir;
  OwnedTensor weight(Shape{2, 3}, DType::f32);
  fill_pattern(weight, 1);
  CheckpointWriter writer(dir.str(), 5);
  writer.add(CheckpointGroup::model, "w", weight);
  commit_checkpoint(dir.str(), example_state(5), {writer.write_rank_files()}, 0);
  nlohmann::json manifest = nlohmann::json::parse(file_text(dir / "step_00000005/manifest.json"));
  EXPECT_EQ(manifest["format"], "hai-train checkpoint");
  EXPECT_EQ(manifest["format_version"], 1);
  EXPECT_EQ(manifest["step"], 5);
  EXPECT_EQ(manifest["consumed_samples"], 320);
  EXPECT_EQ(manifest["files"].size(), 2u);
  const nlohmann::json& tensor = manifest["tensors"][0];
  EXPECT_EQ(tensor["name"], "w");
  EXPECT_EQ(tensor["group"], "model");
  EXPECT_EQ(tensor["dtype"], "F32");
  EXPECT_EQ(tensor["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(tensor["slices"][0]["offsets"], nlohmann::json({0, 0}));
  EXPECT_EQ(tensor["slices"][0]["extents"], nlohmann::json({2, 3}));
  EXPECT_EQ(tensor["slices"][0]["file"], "model-rank00000.safetensors");
}

TEST(CheckpointRoundTrip, ReadsSlicesOfAWholeTensor) {
  ScratchDir dir;
  OwnedTensor weight(Shape{4, 5}, DType::f32);
  for (int i = 0; i < 20; ++i) weight.data<float>()[i] = static_cast<float>(i);
  CheckpointWriter writer(dir.str(), 1);
  writer.add(CheckpointGroup::model, "w", weight);
  CheckpointReader reader(commit_checkpoint(dir.str(), example_state(1), {writer.write_rank_files()}, 0));
  OwnedTensor slice(Shape{2, 3}, DType::f32);
  reader.read_slice("w", {1, 2}, slice);
  EXPECT_EQ(std::vector<float>(slice.data<float>(), slice.data<float>() + 6),
            (std::vector<float>{7, 8, 9, 12, 13, 14}));
}

}  // namespace
}  // namespace hai
