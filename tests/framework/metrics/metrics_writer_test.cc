#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/metrics/metrics_writer.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream stream(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

StepRecord step_record(int64_t step) {
  StepRecord record;
  record.step = step;
  record.tokens = 4096 * step;
  record.loss = 2.5;
  record.lm_loss = 2.25;
  record.mtp_loss = 0.75;
  record.balance_loss = 0.03125;
  record.lr = 1e-4;
  record.grad_norm = 0.5;
  record.loss_scale = 65536;
  record.step_ms = 250;
  record.tokens_per_s = 16384;
  record.mfu = 0.375;
  record.mem_gib = 1.5;
  return record;
}

TEST(MetricsWriter, StepRecordsHaveTheContractKeysInOrder) {
  testing::TempDirectory directory;
  StepRecord record = step_record(3);
  record.extra = {{"bias_abs_max", 0.125}};
  {
    MetricsWriter writer = MetricsWriter::fresh(directory.path() / "run");
    writer.write(record);
    EXPECT_EQ(writer.path(), directory.file("run/metrics.jsonl"));
  }
  std::vector<std::string> lines = lines_of(directory.file("run/metrics.jsonl"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            R"({"step":3,"tokens":12288,"loss":2.5,"lm_loss":2.25,"mtp_loss":0.75,"balance_loss":0.03125,)"
            R"("lr":0.0001,"grad_norm":0.5,"loss_scale":65536.0,"skipped":false,"step_ms":250.0,)"
            R"("tokens_per_s":16384.0,"mfu":0.375,"mem_gib":1.5,"bias_abs_max":0.125})");
}

TEST(MetricsWriter, EvalAndExpertLoadRecords) {
  testing::TempDirectory directory;
  MetricsWriter writer = MetricsWriter::fresh(directory.path());
  writer.write(EvalRecord{10, 40960, 1.75, nlohmann::ordered_json::object()});
  writer.write(ExpertLoadRecord{10, {{1, {3, 9, 0.5}}, {2, {6, 6, 0.0}}}, nlohmann::ordered_json::object()});
  std::vector<std::string> lines = lines_of(writer.path());
  ASSERT_EQ(lines.size(), 2u);  // flushed per record: readable while the writer is open
  EXPECT_EQ(lines[0], R"({"step":10,"tokens":40960,"eval_loss":1.75})");
  EXPECT_EQ(lines[1], R"({"step":10,"expert_load":[{"layer":1,"min":3,"max":9,"cv":0.5},)"
                      R"({"layer":2,"min":6,"max":6,"cv":0.0}]})");
}

TEST(MetricsWriter, NonFiniteValuesAreNull) {
  testing::TempDirectory directory;
  MetricsWriter writer = MetricsWriter::fresh(directory.path());
  StepRecord record = step_record(1);
  record.loss = std::numeric_limits<double>::quiet_NaN();
  record.grad_norm = std::numeric_limits<double>::infinity();
  record.skipped = true;
  writer.write(record);
  nlohmann::json parsed = nlohmann::json::parse(lines_of(writer.path()).at(0));
  EXPECT_TRUE(parsed["loss"].is_null());
  EXPECT_TRUE(parsed["grad_norm"].is_null());
  EXPECT_EQ(parsed["skipped"], true);
}

std::vector<int64_t> steps_in(const std::string& path) {
  std::vector<int64_t> steps;
  for (const std::string& line : lines_of(path)) steps.push_back(nlohmann::json::parse(line)["step"]);
  return steps;
}

TEST(MetricsWriter, AFreshRunReplacesTheFile) {
  testing::TempDirectory directory;
  MetricsWriter::fresh(directory.path()).write(step_record(1));
  MetricsWriter::fresh(directory.path()).write(step_record(7));
  EXPECT_EQ(steps_in(directory.file("metrics.jsonl")), (std::vector<int64_t>{7}));
}

TEST(MetricsWriter, AResumedRunKeepsTheRecordsUpToItsCheckpointAndAppends) {
  testing::TempDirectory directory;
  {
    MetricsWriter interrupted = MetricsWriter::fresh(directory.path());
    for (int64_t step = 1; step <= 5; ++step) interrupted.write(step_record(step));
    interrupted.write(EvalRecord{4, 0, 1.5, nlohmann::ordered_json::object()});
  }
  std::ofstream(directory.file("metrics.jsonl"), std::ios::app) << R"({"step":6,"tok)";  // torn by a crash
  MetricsWriter resumed = MetricsWriter::resumed(directory.path(), 4);
  EXPECT_EQ(steps_in(resumed.path()), (std::vector<int64_t>{1, 2, 3, 4, 4}));
  resumed.write(step_record(5));
  EXPECT_EQ(steps_in(resumed.path()), (std::vector<int64_t>{1, 2, 3, 4, 4, 5}));
  EXPECT_EQ(lines_of(resumed.path())[3], to_json(step_record(4)).dump());
  EXPECT_FALSE(std::filesystem::exists(directory.file("metrics.jsonl.tmp")));
}

TEST(MetricsWriter, ResumingWithoutAFileStartsOne) {
  testing::TempDirectory directory;
  MetricsWriter::resumed(directory.path() / "new", 10).write(step_record(11));
  EXPECT_EQ(steps_in(directory.file("new/metrics.jsonl")), (std::vector<int64_t>{11}));
}

TEST(MetricsWriter, ExtraKeysMustNotRepeatStandardOnes) {
  testing::TempDirectory directory;
  MetricsWriter writer = MetricsWriter::fresh(directory.path());
  StepRecord record = step_record(1);
  record.extra = {{"loss", 1.0}};
  EXPECT_THROW(writer.write(record), Error);
  record.extra = nlohmann::ordered_json::array();
  EXPECT_THROW(writer.write(record), Error);
}

TEST(MetricsWriter, UnwritableRunDirectoryIsAnError) {
  testing::TempDirectory directory;
  testing::write_text(directory.file("file"), "not a directory");
  EXPECT_THROW(MetricsWriter::fresh(directory.path() / "file" / "run"), Error);
}

}  // namespace
}  // namespace hai
