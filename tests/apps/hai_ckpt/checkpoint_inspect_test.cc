// hai-ckpt inspect: the summary of a known checkpoint (in process and as --json from the binary), and --verify
// catching a flipped byte, naming the file and the tensor, with exit code 1.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/hai-ckpt/checkpoint_summary.h"
#include "framework/checkpoint/crc32c.h"
#include "framework/checkpoint/safetensors_reader.h"
#include "framework/config/write.h"
#include "tests/apps/hai_ckpt/hai_ckpt_test_util.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::ScratchDir;

struct CommandRun {
  int exit_code = -1;
  std::string out;
};

// Runs the hai-ckpt binary with `arguments`, stdout captured.
CommandRun run_hai_ckpt(const std::string& arguments, const ScratchDir& dir) {
  std::string out = dir / "hai-ckpt.out";
  int status = std::system((std::string(HAI_CKPT_BINARY) + " " + arguments + " >" + out + " 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::file_text(out)};
}

// Flips one bit in the stored bytes of `tensor` in a safetensors file.
void flip_a_bit(const std::string& path, const std::string& tensor) {
  SafetensorsFile file(path);
  uint64_t header_length = file.file_size() - file.tensors().back().end - 8;
  std::vector<char> bytes = testing::file_bytes(path);
  bytes[8 + header_length + file.find(tensor)->begin + 1] ^= 0x10;
  testing::write_bytes(path, bytes);
}

class CheckpointInspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::tiny_hf_config(dir_.str());
    step_dir_ = testing::write_trainer_checkpoint(dir_ / "ckpt", config_, 5, 20, true, contents_);
  }

  ScratchDir dir_;
  Config config_;
  std::string step_dir_;
  testing::CheckpointContents contents_;
};

TEST_F(CheckpointInspectTest, SummaryOfAKnownCheckpoint) {
  CheckpointReader reader(step_dir_);
  CheckpointSummary summary = summarize_checkpoint(reader);
  EXPECT_EQ(summary.path, step_dir_);
  EXPECT_EQ(summary.step, 5);
  EXPECT_EQ(summary.consumed_samples, 20);
  EXPECT_EQ(summary.consumed_tokens, 20 * 8);  // seq_len 8
  std::string config_text = config_to_json(config_).dump();
  EXPECT_EQ(summary.config_crc32c, crc32c(std::as_bytes(std::span(config_text.data(), config_text.size()))));
  EXPECT_EQ(summary.model, "2 layers (1 dense), hidden 16, 2 heads, 2 routed experts (top-1) + 1 shared, vocab 40, "
                           "MTP depth 1");
  int64_t parameters = 0, trainable = 0, elements = 0, trainable_elements = 0;
  for (const ParameterSpec& spec : deepseek_v3_parameters(config_.model)) {
    ++parameters;
    elements += spec.shape.numel();
    trainable += spec.trainable;
    trainable_elements += spec.trainable ? spec.shape.numel() : 0;
  }
  EXPECT_EQ(summary.model_group.tensors, parameters);
  EXPECT_EQ(summary.model_group.elements, elements);
  EXPECT_EQ(summary.model_group.bytes, static_cast<uint64_t>(4 * elements));
  EXPECT_EQ(summary.optim_group.tensors, parameters + 2 * trainable);  // EMA of all, two moments of the trainable
  EXPECT_EQ(summary.optim_group.elements, elements + 2 * trainable_elements);
  EXPECT_EQ(summary.files, 2);
  EXPECT_TRUE(summary.optimizer_state);
  EXPECT_TRUE(summary.ema);
  EXPECT_TRUE(verify_checkpoint(reader).empty());
}

TEST_F(CheckpointInspectTest, JsonFromTheBinary) {
  CommandRun run = run_hai_ckpt("inspect " + dir_ / "ckpt" + " --json --verify", dir_);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json.at("path"), step_dir_);  // the checkpoint directory's `latest`
  EXPECT_EQ(json.at("step"), 5);
  EXPECT_EQ(json.at("consumed_samples"), 20);
  EXPECT_EQ(json.at("consumed_tokens"), 160);
  EXPECT_EQ(json.at("config_crc32c").get<std::string>().size(), 8u);
  nlohmann::json layout = {{"world", 1}, {"dp", 1}, {"pp", 1}, {"tp", 1}, {"ep", 1}};
  EXPECT_EQ(json.at("layout"), layout);
  EXPECT_EQ(json.at("groups").at("model").at("tensors"), deepseek_v3_parameters(config_.model).size());
  EXPECT_TRUE(json.at("groups").at("optim").at("bytes").get<uint64_t>() > 0);
  EXPECT_EQ(json.at("optimizer_state"), true);
  EXPECT_EQ(json.at("ema"), true);
  nlohmann::json verified = {{"ok", true}, {"failures", nlohmann::json::array()}};
  EXPECT_EQ(json.at("verify"), verified);
}

TEST_F(CheckpointInspectTest, VerifyNamesEveryCorruptFileAndTensor) {
  flip_a_bit(step_dir_ + "/model-rank00000.safetensors", "model.layers.1.self_attn.kv_b_proj.weight");
  flip_a_bit(step_dir_ + "/optim-rank00000.safetensors", "ema.lm_head.weight");
  std::vector<VerifyFailure> failures = verify_checkpoint(CheckpointReader(step_dir_));
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].file, "optim-rank00000.safetensors");  // tensors in name order
  EXPECT_EQ(failures[0].tensor, "ema.lm_head.weight");
  EXPECT_EQ(failures[1].file, "model-rank00000.safetensors");
  EXPECT_EQ(failures[1].tensor, "model.layers.1.self_attn.kv_b_proj.weight");
  EXPECT_NE(failures[1].message.find("corrupt"), std::string::npos) << failures[1].message;

  CommandRun text = run_hai_ckpt("inspect " + step_dir_ + " --verify", dir_);
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("verify: 2 corrupt slice(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("model.layers.1.self_attn.kv_b_proj.weight in model-rank00000.safetensors"),
            std::string::npos)
      << text.out;
  CommandRun json = run_hai_ckpt("inspect " + step_dir_ + " --verify --json", dir_);
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(json.out).at("verify").at("ok"), false);
  // Without --verify the tensors are not read: the summary alone succeeds.
  EXPECT_EQ(run_hai_ckpt("inspect " + step_dir_, dir_).exit_code, 0);
}

TEST_F(CheckpointInspectTest, AnUnreadableCheckpointExitsOneNamingTheFile) {
  std::filesystem::resize_file(step_dir_ + "/model-rank00000.safetensors", 100);
  CommandRun run = run_hai_ckpt("inspect " + step_dir_, dir_);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("model-rank00000.safetensors"), std::string::npos) << run.out;
  EXPECT_EQ(run_hai_ckpt("inspect " + dir_ / "nowhere", dir_).exit_code, 1);
  EXPECT_EQ(run_hai_ckpt("inspect", dir_).exit_code, 2);
}

}  // namespace
}  // namespace hai
