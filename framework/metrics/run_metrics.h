#pragma once
// RunMetrics: where rank 0's metrics records go: <run_dir>/metrics.jsonl always (metrics_writer.h), and with
// logging.tensorboard a TensorBoard event file beside it (tensorboard_writer.h).

#include <cstdint>
#include <filesystem>
#include <optional>

#include "framework/metrics/metrics_writer.h"
#include "framework/metrics/tensorboard_writer.h"

namespace hai {

class RunMetrics {
 public:
  // resumed_step 0: a new run (metrics.jsonl replaced); else the run resumes from the checkpoint of that step
  // (MetricsWriter::resumed, TensorBoardWriter's resumed_step).
  RunMetrics(const std::filesystem::path& run_dir, int64_t resumed_step, bool tensorboard);

  template <typename Record>
  void write(const Record& record) {
    jsonl_.write(record);
    if (tensorboard_) tensorboard_->write(record);
  }

 private:
  MetricsWriter jsonl_;
  std::optional<TensorBoardWriter> tensorboard_;
};

}  // namespace hai
