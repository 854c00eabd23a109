#include "framework/metrics/metrics_writer.h"

#include "framework/core/error.h"

namespace hai {

MetricsWriter::MetricsWriter(const std::filesystem::path& run_dir, MetricsFileMode mode)
    : path_((run_dir / "metrics.jsonl").string()) {
  std::error_code error;
  std::filesystem::create_directories(run_dir, error);
  HAI_CHECK(!error, "cannot create the run directory {}: {}", run_dir.string(), error.message());
  stream_.open(path_, mode == MetricsFileMode::resume ? std::ios::app : std::ios::trunc);
  HAI_CHECK(stream_.is_open(), "cannot open {} for writing", path_);
}

void MetricsWriter::write(const StepRecord& record) { append(to_json(record)); }
void MetricsWriter::write(const EvalRecord& record) { append(to_json(record)); }
void MetricsWriter::write(const ExpertLoadRecord& record) { append(to_json(record)); }

void MetricsWriter::append(const nlohmann::ordered_json& json) {
  stream_ << json.dump() << '\n';
  stream_.flush();
  HAI_CHECK(stream_.good(), "cannot write to {}", path_);
}

}  // namespace hai
