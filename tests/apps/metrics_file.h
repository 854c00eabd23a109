#pragma once
// Reading <run_dir>/metrics.jsonl back in the hai-train tests, its records sorted by kind.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace hai::testing {

struct MetricsFile {
  std::vector<nlohmann::ordered_json> steps;         // records with "loss"
  std::vector<nlohmann::ordered_json> evals;         // records with "eval_loss"
  std::vector<nlohmann::ordered_json> expert_loads;  // records with "expert_load"
};

inline MetricsFile read_metrics(const std::filesystem::path& run_dir) {
  std::string path = (run_dir / "metrics.jsonl").string();
  std::ifstream stream(path);
  if (!stream) HAI_THROW("cannot read {}", path);
  MetricsFile metrics;
  std::string line;
  while (std::getline(stream, line)) {
    auto record = nlohmann::ordered_json::parse(line);
    if (record.contains("loss")) {
      metrics.steps.push_back(record);
    } else if (record.contains("eval_loss")) {
      metrics.evals.push_back(record);
    } else if (record.contains("expert_load")) {
      metrics.expert_loads.push_back(record);
    } else {
      HAI_THROW("{}: a record of no known kind: {}", path, line);
    }
  }
  return metrics;
}

}  // namespace hai::testing
