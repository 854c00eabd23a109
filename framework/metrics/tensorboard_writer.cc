#include "framework/metrics/tensorboard_writer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace hai {
namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string event_file_name() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  auto seconds = static_cast<int64_t>(wall_time());
  return fmt::format("events.out.tfevents.{}.{}.{}", seconds, host, static_cast<int64_t>(getpid()));
}

void add(std::vector<TensorBoardScalar>& scalars, const char* tag, double value) {
  scalars.push_back({tag, static_cast<float>(value)});
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& run_dir, int64_t resumed_step) {
  std::filesystem::path directory = run_dir / "tensorboard";
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  HAI_CHECK(!error, "cannot create {}: {}", directory.string(), error.message());
  path_ = (directory / event_file_name()).string();
  stream_.open(path_, std::ios::binary | std::ios::out | std::ios::trunc);
  HAI_CHECK(stream_.is_open(), "cannot open {} for writing", path_);
  append(file_version_event(wall_time()));
  if (resumed_step > 0) append(session_start_event(wall_time(), resumed_step));
}

void TensorBoardWriter::write(const StepRecord& record) {
  std::vector<TensorBoardScalar> scalars;
  add(scalars, "train/loss", record.loss);
  add(scalars, "train/lm_loss", record.lm_loss);
  add(scalars, "train/mtp_loss", record.mtp_loss);
  add(scalars, "train/balance_loss", record.balance_loss);
  add(scalars, "train/lr", record.lr);
  add(scalars, "train/grad_norm", record.grad_norm);
  add(scalars, "train/loss_scale", record.loss_scale);
  add(scalars, "perf/tokens_per_s", record.tokens_per_s);
  add(scalars, "perf/step_ms", record.step_ms);
  if (std::isfinite(record.mfu)) add(scalars, "perf/mfu", record.mfu);
  add(scalars, "perf/mem_gib", record.mem_gib);
  append(scalars_event(wall_time(), record.step, scalars));
}

void TensorBoardWriter::write(const EvalRecord& record) {
  append(scalars_event(wall_time(), record.step, {{"eval/loss", static_cast<float>(record.eval_loss)}}));
}

void TensorBoardWriter::write(const ExpertLoadRecord& record) {
  std::vector<TensorBoardScalar> scalars;
  for (const LayerExpertLoad& layer : record.layers) {
    scalars.push_back({fmt::format("expert_load/cv/layer_{}", layer.layer), static_cast<float>(layer.stats.cv)});
  }
  append(scalars_event(wall_time(), record.step, scalars));
}

void TensorBoardWriter::append(const Bytes& event) {
  Bytes record = tf_record(event);
  stream_.write(reinterpret_cast<const char*>(record.data()), static_cast<std::streamsize>(record.size()));
  stream_.flush();
  HAI_CHECK(stream_.good(), "cannot write to {}", path_);
}

}  // namespace hai
