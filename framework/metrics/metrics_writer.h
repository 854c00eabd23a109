#pragma once
// MetricsWriter: appends one JSON object per line to <run_dir>/metrics.jsonl (metrics_records.h), flushed after
// every record so that a crashed or running job's file is readable up to its last step. Rank 0 writes it.

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/metrics/metrics_records.h"

namespace hai {

enum class MetricsFileMode {
  fresh,   // a new run: an existing file is replaced
  resume,  // a resumed run: records are appended after the existing ones
};

class MetricsWriter {
 public:
  // Creates run_dir if needed. Throws hai::Error naming the file when it cannot be opened.
  MetricsWriter(const std::filesystem::path& run_dir, MetricsFileMode mode);

  void write(const StepRecord& record);
  void write(const EvalRecord& record);
  void write(const ExpertLoadRecord& record);

  const std::string& path() const { return path_; }

 private:
  void append(const nlohmann::ordered_json& json);

  std::string path_;
  std::ofstream stream_;
};

}  // namespace hai
