#pragma once
// hai-ckpt inspect: what a hai-train checkpoint holds (step, data consumed, config digest, layout, tensors and
// bytes per group, optimizer and EMA presence), and a check of every stored slice's CRC32C that reports each
// failing file and tensor instead of stopping at the first.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/checkpoint/checkpoint_reader.h"

namespace hai {

struct GroupSummary {
  int64_t tensors = 0;
  int64_t elements = 0;
  uint64_t bytes = 0;  // stored tensor bytes
};

struct CheckpointSummary {
  std::string path;  // the step directory
  int64_t step = 0;
  int64_t consumed_samples = 0;
  int64_t consumed_tokens = 0;  // consumed_samples x train.seq_len
  uint32_t config_crc32c = 0;
  std::string model;  // the model's shape in one line
  nlohmann::json layout;
  GroupSummary model_group;
  GroupSummary optim_group;
  int64_t files = 0;
  uint64_t file_bytes = 0;
  bool optimizer_state = false;  // AdamW moments
  bool ema = false;
};

struct VerifyFailure {
  std::string file;
  std::string tensor;
  std::string message;
};

CheckpointSummary summarize_checkpoint(const CheckpointReader& reader);

// Reads every stored slice and checks its CRC32C; one entry per failing slice (empty: all good).
std::vector<VerifyFailure> verify_checkpoint(const CheckpointReader& reader);

// `failures` is present when the checkpoint was verified.
nlohmann::ordered_json summary_json(const CheckpointSummary& summary,
                                    const std::optional<std::vector<VerifyFailure>>& failures);
std::string summary_text(const CheckpointSummary& summary,
                         const std::optional<std::vector<VerifyFailure>>& failures);

}  // namespace hai
