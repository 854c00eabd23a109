#include "apps/hai-ckpt/checkpoint_summary.h"

#include <fmt/format.h>

#include "apps/hai-ckpt/checkpoint_source.h"
#include "framework/config/summary.h"
#include "framework/core/error.h"

namespace hai {
namespace {

// The first line of the config summary, without its "model: " label.
std::string model_line(const Config& config) {
  std::string text = config_summary(config);
  std::string line = text.substr(0, text.find('\n'));
  constexpr std::string_view kLabel = "model: ";
  return line.starts_with(kLabel) ? line.substr(kLabel.size()) : line;
}

void count(GroupSummary& group, const TensorRecord& tensor) {
  int64_t elements = Shape(tensor.shape).numel();
  ++group.tensors;
  group.elements += elements;
  group.bytes += static_cast<uint64_t>(elements) * dtype_size(tensor.dtype);
}

nlohmann::ordered_json group_json(const GroupSummary& group) {
  return {{"tensors", group.tensors}, {"elements", group.elements}, {"bytes", group.bytes}};
}

std::string group_line(std::string_view name, const GroupSummary& group) {
  return fmt::format("{:<6} {} tensors, {} elements, {:.3f} MiB\n", name, group.tensors, group.elements,
                     static_cast<double>(group.bytes) / 1048576.0);
}

}  // namespace

CheckpointSummary summarize_checkpoint(const CheckpointReader& reader) {
  const CheckpointState& state = reader.state();
  Config config = checkpoint_config(state, reader.path());
  CheckpointSummary summary{.path = reader.path(),
                            .step = state.step,
                            .consumed_samples = state.consumed_samples,
                            .consumed_tokens = state.consumed_samples * config.train.seq_len,
                            .config_crc32c = config_digest(state),
                            .model = model_line(config),
                            .layout = state.layout,
                            .model_group = {},
                            .optim_group = {}};
  for (const TensorRecord& tensor : reader.tensors()) {
    count(tensor.group == CheckpointGroup::model ? summary.model_group : summary.optim_group, tensor);
    summary.optimizer_state |= tensor.name.starts_with("optimizer.");
    summary.ema |= tensor.name.starts_with("ema.");
  }
  for (const FileRecord& file : reader.files()) {
    ++summary.files;
    summary.file_bytes += file.bytes;
  }
  return summary;
}

std::vector<VerifyFailure> verify_checkpoint(const CheckpointReader& reader) {
  std::vector<VerifyFailure> failures;
  for (const TensorRecord& tensor : reader.tensors()) {
    for (const StoredSlice& slice : tensor.slices) {
      // NOTE: reading exactly a stored slice's box reads that slice alone, and checks its CRC32C.
      OwnedTensor buffer(Shape(slice.box.extents), tensor.dtype);
      try {
        reader.read_slice(tensor.name, slice.box.offsets, buffer);
      } catch (const Error& error) {
        failures.push_back({slice.file, tensor.name, error.message()});
      }
    }
  }
  return failures;
}

nlohmann::ordered_json summary_json(const CheckpointSummary& summary,
                                    const std::optional<std::vector<VerifyFailure>>& failures) {
  nlohmann::ordered_json json = {{"path", summary.path},
                                 {"step", summary.step},
                                 {"consumed_samples", summary.consumed_samples},
                                 {"consumed_tokens", summary.consumed_tokens},
                                 {"config_crc32c", fmt::format("{:08x}", summary.config_crc32c)},
                                 {"model", summary.model},
                                 {"layout", summary.layout},
                                 {"groups", {{"model", group_json(summary.model_group)},
                                             {"optim", group_json(summary.optim_group)}}},
                                 {"files", summary.files},
                                 {"file_bytes", summary.file_bytes},
                                 {"optimizer_state", summary.optimizer_state},
                                 {"ema", summary.ema}};
  if (failures) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const VerifyFailure& failure : *failures) {
      list.push_back({{"file", failure.file}, {"tensor", failure.tensor}, {"message", failure.message}});
    }
    json["verify"] = {{"ok", failures->empty()}, {"failures", list}};
  }
  return json;
}

std::string summary_text(const CheckpointSummary& summary,
                         const std::optional<std::vector<VerifyFailure>>& failures) {
  std::string text = fmt::format("checkpoint {}\n", summary.path);
  text += fmt::format("step   {}, consumed {} samples = {} tokens\n", summary.step, summary.consumed_samples,
                      summary.consumed_tokens);
  text += fmt::format("config crc32c {:08x}\n", summary.config_crc32c);
  text += fmt::format("model  {}\n", summary.model);
  text += fmt::format("layout {}\n", summary.layout.dump());
  text += group_line("model", summary.model_group);
  text += group_line("optim", summary.optim_group);
  text += fmt::format("files  {}, {} bytes\n", summary.files, summary.file_bytes);
  text += fmt::format("optimizer state {}, EMA {}\n", summary.optimizer_state ? "yes" : "no",
                      summary.ema ? "yes" : "no");
  if (!failures) return text;
  if (failures->empty()) return text + "verify: every CRC32C matches\n";
  text += fmt::format("verify: {} corrupt slice(s)\n", failures->size());
  for (const VerifyFailure& failure : *failures) {
    text += fmt::format("  {} in {}: {}\n", failure.tensor, failure.file, failure.message);
  }
  return text;
}

}  // namespace hai
