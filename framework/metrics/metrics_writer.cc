#include "framework/metrics/metrics_writer.h"

#include "framework/core/error.h"

namespace hai {
namespace {

std::filesystem::path metrics_path(const std::filesystem::path& run_dir) { return run_dir / "metrics.jsonl"; }

void create_run_directory(const std::filesystem::path& run_dir) {
  std::error_code error;
  std::filesystem::create_directories(run_dir, error);
  HAI_CHECK(!error, "cannot create the run directory {}: {}", run_dir.string(), error.message());
}

// The lines of the file that are whole JSON records of steps <= step, each with its newline.
std::string records_up_to(const std::filesystem::path& path, int64_t step) {
  std::ifstream stream(path);
  std::string kept;
  for (std::string line; std::getline(stream, line);) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    bool has_step = record.is_object() && record.contains("step") && record["step"].is_number_integer();
    if (!has_step || record["step"].get<int64_t>() > step) continue;
    kept += line + '\n';
  }
  return kept;
}

}  // namespace

MetricsWriter MetricsWriter::fresh(const std::filesystem::path& run_dir) {
  return MetricsWriter(run_dir, std::ios::trunc);
}

MetricsWriter MetricsWriter::resumed(const std::filesystem::path& run_dir, int64_t step) {
  // NOTE: the kept records are written to a temporary and renamed over the file, so that a crash here cannot
  // lose them.
  create_run_directory(run_dir);
  std::filesystem::path path = metrics_path(run_dir);
  std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream stream(temporary, std::ios::trunc);
    stream << records_up_to(path, step);
    HAI_CHECK(stream.good(), "cannot write {}", temporary.string());
  }
  std::filesystem::rename(temporary, path);
  return MetricsWriter(run_dir, std::ios::app);
}

MetricsWriter::MetricsWriter(const std::filesystem::path& run_dir, std::ios::openmode mode)
    : path_(metrics_path(run_dir).string()) {
  create_run_directory(run_dir);
  stream_.open(path_, std::ios::out | mode);
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
