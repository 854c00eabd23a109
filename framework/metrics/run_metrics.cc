#include "framework/metrics/run_metrics.h"

namespace hai {

RunMetrics::RunMetrics(const std::filesystem::path& run_dir, int64_t resumed_step, bool tensorboard)
    : jsonl_(resumed_step > 0 ? MetricsWriter::resumed(run_dir, resumed_step) : MetricsWriter::fresh(run_dir)) {
  if (tensorboard) tensorboard_.emplace(run_dir, resumed_step);
}

}  // namespace hai
