// A damaged checkpoint is refused with a hai::Error naming the file (and the tensor), never read silently.

#include <gtest/gtest.h>

#include <filesystem>

#include "framework/checkpoint/checkpoint_commit.h"
#include "framework/checkpoint/checkpoint_reader.h"
#include "framework/checkpoint/checkpoint_writer.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::file_bytes;
using testing::ScratchDir;
using testing::write_bytes;

class CheckpointCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 12; ++i) weight_.data<float>()[i] = static_cast<float>(i) * 0.5f;
    moment_.data<bf16>()[0].bits = 0x3f80;
    CheckpointWriter writer(dir_.str(), 3);
    writer.add(CheckpointGroup::model, "w", weight_);
    writer.add(CheckpointGroup::optim, "w.exp_avg", moment_);
    CheckpointState state;
    state.step = 3;
    step_dir_ = commit_checkpoint(dir_.str(), state, {writer.write_rank_files()}, 0);
    model_file_ = step_dir_ + "/model-rank00000.safetensors";
  }

  // Flips one bit of the byte `from_end` bytes before the end of `path`.
  static void flip_byte(const std::string& path, size_t from_end) {
    std::vector<char> bytes = file_bytes(path);
    bytes[bytes.size() - from_end] ^= 0x10;
    write_bytes(path, bytes);
  }

  ScratchDir dir_;
  OwnedTensor weight_{Shape{3, 4}, DType::f32};
  OwnedTensor moment_{Shape{1}, DType::bf16};
  std::string step_dir_;
  std::string model_file_;
};

TEST_F(CheckpointCorruption, AFlippedDataByteFailsTheChecksumOfItsTensor) {
  flip_byte(model_file_, 5);
  CheckpointReader reader(step_dir_);  // sizes and headers are still fine
  OwnedTensor loaded(Shape{3, 4}, DType::f32);
  expect_error([&] { reader.read("w", loaded); }, {model_file_, "tensor 'w'", "corrupt", "CRC32C"});
  expect_error([&] { reader.verify_all(); }, {model_file_, "tensor 'w'"});
  OwnedTensor moment(Shape{1}, DType::bf16);
  reader.read("w.exp_avg", moment);  // the other file is intact
  EXPECT_EQ(moment.data<bf16>()[0].bits, 0x3f80);
}

TEST_F(CheckpointCorruption, AFlippedHeaderByteIsRefusedOnOpen) {
  std::vector<char> bytes = file_bytes(model_file_);
  bytes[9] = '[';  // the header's opening brace
  write_bytes(model_file_, bytes);
  expect_error([&] { CheckpointReader reader(step_dir_); }, {model_file_});
}

TEST_F(CheckpointCorruption, AMissingFileIsRefusedOnOpen) {
  fs::remove(model_file_);
  expect_error([&] { CheckpointReader reader(step_dir_); }, {model_file_, "missing"});
}

TEST_F(CheckpointCorruption, ATruncatedFileIsRefusedOnOpen) {
  std::vector<char> bytes = file_bytes(model_file_);
  bytes.resize(bytes.size() - 4);
  write_bytes(model_file_, bytes);
  expect_error([&] { CheckpointReader reader(step_dir_); }, {model_file_, "truncated"});
}

TEST_F(CheckpointCorruption, AMissingOrDamagedManifestIsRefused) {
  std::string manifest = step_dir_ + "/manifest.json";
  std::vector<char> text = file_bytes(manifest);
  text.resize(text.size() / 2);
  write_bytes(manifest, text);
  expect_error([&] { CheckpointReader reader(step_dir_); }, {manifest, "not valid JSON"});
  fs::remove(manifest);
  expect_error([&] { CheckpointReader reader(step_dir_); }, {manifest});
}

TEST_F(CheckpointCorruption, AChangedManifestFailsItsChecksum) {
  std::string manifest = step_dir_ + "/manifest.json";
  std::string text = testing::file_text(manifest);
  text.replace(text.find("\"step\": 3"), 9, "\"step\": 4");
  write_bytes(manifest, {text.begin(), text.end()});
  expect_error([&] { CheckpointReader reader(step_dir_); }, {manifest, "corrupt"});
}

TEST_F(CheckpointCorruption, AManifestThatDisagreesWithItsFilesIsRefused) {
  std::string manifest = step_dir_ + "/manifest.json";
  CheckpointManifest edited = manifest_from_text(testing::file_text(manifest), manifest);
  edited.tensors[1].dtype = DType::f16;  // "w.exp_avg" is stored as bf16
  std::string text = manifest_to_text(edited);
  write_bytes(manifest, {text.begin(), text.end()});
  expect_error([&] { CheckpointReader reader(step_dir_); }, {"optim-rank00000.safetensors", "tensor 'w.exp_avg'"});
}

TEST_F(CheckpointCorruption, WrongRequestsAreRefusedNamingCheckpointAndTensor) {
  CheckpointReader reader(step_dir_);
  std::string manifest = step_dir_ + "/manifest.json";
  OwnedTensor wrong_shape(Shape{4, 3}, DType::f32);
  expect_error([&] { reader.read("w", wrong_shape); }, {manifest, "tensor 'w'", "[3, 4]"});
  OwnedTensor wrong_dtype(Shape{3, 4}, DType::bf16);
  expect_error([&] { reader.read("w", wrong_dtype); }, {manifest, "tensor 'w'", "fp32"});
  OwnedTensor slice(Shape{2, 2}, DType::f32);
  expect_error([&] { reader.read_slice("w", {2, 3}, slice); }, {manifest, "tensor 'w'", "[2:4, 3:5] is outside"});
  expect_error([&] { reader.read("absent", slice); }, {manifest, "no tensor 'absent'"});
}

}  // namespace
}  // namespace hai
