#pragma once
// MetricsWriter: appends one JSON object per line to <run_dir>/metrics.jsonl (metrics_records.h), flushed after
// every record so that a crashed or running job's file is readable up to its last step. Rank 0 writes it.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/metrics/metrics_records.h"

namespace hai {

class MetricsWriter {
 public:
  // A new run: an existing file is replaced. Creates run_dir if needed.
  static MetricsWriter fresh(const std::filesystem::path& run_dir);
  // A run resumed from the checkpoint of `step`: keeps the records of steps <= step and appends after them. Later
  // records (logged after that checkpoint by the interrupted run, and about to be redone) and a torn last line are
  // dropped.
  static MetricsWriter resumed(const std::filesystem::path& run_dir, int64_t step);

  void write(const StepRecord& record);
  void write(const EvalRecord& record);
  void write(const ExpertLoadRecord& record);

  const std::string& path() const { return path_; }

 private:
  MetricsWriter(const std::filesystem::path& run_dir, std::ios::openmode mode);
  void append(const nlohmann::ordered_json& json);

  std::string path_;
  std::ofstream stream_;
};

}  // namespace hai
