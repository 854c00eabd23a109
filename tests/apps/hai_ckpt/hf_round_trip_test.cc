// export-hf then import-hf gives back the checkpoint's parameters: bit-exactly through BF16 for values that BF16
// holds (and the F32 routing biases), within e4m3's rounding through FP8. And import-hf refuses, before writing
// anything, HF weights that do not match the config, naming the tensor.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "apps/hai-ckpt/hf_export.h"
#include "apps/hai-ckpt/hf_import.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/safetensors_reader.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "framework/device/fp8_quantize.h"
#include "tests/apps/hai_ckpt/hai_ckpt_test_util.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::ScratchDir;

// The parameters of the checkpoint that import-hf wrote, by name.
std::map<std::string, OwnedTensor> imported_parameters(const std::string& step_dir) {
  CheckpointReader reader(step_dir);
  std::map<std::string, OwnedTensor> values;
  for (const TensorRecord& tensor : reader.tensors()) {
    EXPECT_EQ(tensor.group, CheckpointGroup::model) << tensor.name;
    OwnedTensor value(Shape(tensor.shape), tensor.dtype);
    reader.read(tensor.name, value);
    values.emplace(tensor.name, std::move(value));
  }
  return values;
}

void expect_bit_identical(const std::map<std::string, OwnedTensor>& actual,
                          const std::map<std::string, OwnedTensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, value] : expected) {
    ASSERT_TRUE(actual.contains(name)) << name;
    EXPECT_TRUE(testing::same_bits(actual.at(name), value)) << name;
  }
}

// |x - x'| <= 2^-4 |x| + 2^-10 scale for every element, the scale of x's 128x128 block being amax / 448
// (framework/device/fp8_quantize.h).
void expect_within_fp8_rounding(const Tensor& actual, const Tensor& expected, const std::string& name) {
  int64_t rows = expected.size(0), columns = expected.size(1);
  const float* x = expected.data<float>();
  const float* y = actual.data<float>();
  for (int64_t block_row = 0; block_row < rows; block_row += kFp8TileSize) {
    for (int64_t block_column = 0; block_column < columns; block_column += kFp8TileSize) {
      int64_t row_end = std::min(rows, block_row + kFp8TileSize);
      int64_t column_end = std::min(columns, block_column + kFp8TileSize);
      float amax = kFp8MinAmax;
      for (int64_t r = block_row; r < row_end; ++r) {
        for (int64_t c = block_column; c < column_end; ++c) amax = std::max(amax, std::fabs(x[r * columns + c]));
      }
      double scale = amax / 448.0;
      for (int64_t r = block_row; r < row_end; ++r) {
        for (int64_t c = block_column; c < column_end; ++c) {
          double value = x[r * columns + c];
          ASSERT_LE(std::fabs(y[r * columns + c] - value), std::ldexp(std::fabs(value), -4) + std::ldexp(scale, -10))
              << name << " [" << r << ", " << c << "]";
        }
      }
    }
  }
}

class HfRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::tiny_hf_config(dir_.str());
    testing::write_trainer_checkpoint(dir_ / "ckpt", config_, 4, 16, true, contents_);
  }

  ScratchDir dir_;
  Config config_;
  testing::CheckpointContents contents_;
};

TEST_F(HfRoundTripTest, Bf16IsBitExact) {
  // Small shards, so that the import reads across several files.
  export_hf(dir_ / "ckpt", dir_ / "hf", {.dtype = HfDtype::bf16, .shard_bytes = 2048});
  std::string step_dir = import_hf(dir_ / "hf", dir_ / "imported", config_);
  EXPECT_EQ(step_dir, dir_ / "imported/step_00000000");
  expect_bit_identical(imported_parameters(step_dir), contents_.parameters);
}

TEST_F(HfRoundTripTest, ExportGathersTheSlicesOfAnyLayout) {
  // Two ranks: rank 0 holds the first half of every matrix's rows (and the vectors), rank 1 the rest.
  CheckpointWriter rank0(dir_ / "sharded", 4, 0), rank1(dir_ / "sharded", 4, 1);
  for (const auto& [name, value] : contents_.parameters) {
    const Tensor& whole = value;
    std::vector<int64_t> shape = whole.shape().to_vector();
    if (whole.rank() == 1) {
      rank0.add(CheckpointGroup::model, name, whole);
      continue;
    }
    int64_t half = shape[0] / 2;
    rank0.add(CheckpointGroup::model, name, shape, {0, 0}, whole.slice(0, half));
    rank1.add(CheckpointGroup::model, name, shape, {half, 0}, whole.slice(half, shape[0]));
  }
  CheckpointState state;
  state.step = 4;
  state.config = config_to_json(config_);
  commit_checkpoint(dir_ / "sharded", state, {rank0.write_rank_files(), rank1.write_rank_files()}, 0);

  export_hf(dir_ / "sharded", dir_ / "hf", {});
  expect_bit_identical(imported_parameters(import_hf(dir_ / "hf", dir_ / "imported", config_)), contents_.parameters);
}

TEST_F(HfRoundTripTest, EmaExportsTheEma) {
  export_hf(dir_ / "ckpt", dir_ / "hf", {.dtype = HfDtype::bf16, .ema = true});
  expect_bit_identical(imported_parameters(import_hf(dir_ / "hf", dir_ / "imported", config_)), contents_.ema);
}

TEST_F(HfRoundTripTest, Fp8IsWithinItsQuantisation) {
  export_hf(dir_ / "ckpt", dir_ / "hf", {.dtype = HfDtype::fp8});
  std::map<std::string, OwnedTensor> imported = imported_parameters(import_hf(dir_ / "hf", dir_ / "imported", config_));
  ASSERT_EQ(imported.size(), contents_.parameters.size());
  int64_t fp8_tensors = 0, changed_elements = 0;
  for (const auto& [name, value] : contents_.parameters) {
    const OwnedTensor& back = imported.at(name);
    SafetensorsFile file(dir_ / "hf/model-00001-of-00001.safetensors");
    if (file.find(name)->dtype != DType::e4m3) {
      EXPECT_TRUE(testing::same_bits(back, value)) << name;  // BF16 or F32: exact
      continue;
    }
    ++fp8_tensors;
    expect_within_fp8_rounding(back, value, name);
    for (int64_t i = 0; i < value.numel(); ++i) changed_elements += back.data<float>()[i] != value.data<float>()[i];
  }
  EXPECT_EQ(fp8_tensors, 36);
  EXPECT_GT(changed_elements, 0);  // e4m3 really rounded something (bf16 values have 8 significant bits, e4m3 4)
}

TEST_F(HfRoundTripTest, ImportRefusesAShapeMismatchNamingTheTensor) {
  export_hf(dir_ / "ckpt", dir_ / "hf", {});
  Config other = testing::tiny_hf_config(dir_.str(), {"model.dense_ffn_size=96"});
  testing::expect_error([&] { import_hf(dir_ / "hf", dir_ / "imported", other); },
                        {"model.layers.0.mlp.gate_proj.weight", "[160, 16]", "expects [96, 16]"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "imported"));
}

TEST_F(HfRoundTripTest, ImportRefusesATensorTheConfigLacks) {
  export_hf(dir_ / "ckpt", dir_ / "hf", {});
  Config no_mtp = testing::tiny_hf_config(dir_.str(), {"model.mtp_depth=0"});
  // The first left-over tensor by name is the MTP module's eh_proj.
  testing::expect_error([&] { import_hf(dir_ / "hf", dir_ / "imported", no_mtp); },
                        {"model.layers.2.eh_proj.weight", "the config has no such tensor"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "imported"));
}

TEST_F(HfRoundTripTest, ImportRefusesAMissingTensorOrScale) {
  export_hf(dir_ / "ckpt", dir_ / "hf", {.dtype = HfDtype::fp8});
  // Rewrite the one shard without model.norm.weight and without one fp8 scale.
  std::string shard = dir_ / "hf/model-00001-of-00001.safetensors";
  for (std::string dropped : {"model.norm.weight", "model.layers.1.self_attn.o_proj.weight_scale_inv"}) {
    SafetensorsFile file(shard);
    std::vector<std::vector<std::byte>> bytes;
    std::vector<SafetensorsInput> kept;
    for (const SafetensorsEntry& entry : file.tensors()) {
      if (entry.name == dropped) continue;
      bytes.emplace_back(entry.bytes());
      file.read(entry, bytes.back());
    }
    size_t next = 0;
    for (const SafetensorsEntry& entry : file.tensors()) {
      if (entry.name != dropped) kept.push_back({entry.name, entry.dtype, entry.shape, bytes[next++]});
    }
    std::string single = dir_ / "single";
    std::filesystem::create_directories(single);
    write_safetensors(single + "/model.safetensors", kept, {});
    std::string expected = dropped.ends_with("_scale_inv") ? "model.layers.1.self_attn.o_proj.weight_scale_inv"
                                                            : "no tensor 'model.norm.weight'";
    testing::expect_error([&] { import_hf(single, dir_ / "imported", config_); }, {expected});
    std::filesystem::remove_all(single);
  }
}

TEST_F(HfRoundTripTest, ImportRefusesANonEmptyOutput) {
  export_hf(dir_ / "ckpt", dir_ / "hf", {});
  testing::expect_error([&] { import_hf(dir_ / "hf", dir_ / "ckpt", config_); }, {"not empty"});
}

}  // namespace
}  // namespace hai
