#include "framework/data/dataset_info.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/atomic_file_writer.h"

namespace hai {
namespace {

constexpr const char* kFormatName = "hai-data dataset info";

}  // namespace

std::string dataset_info_path(const std::string& prefix) { return prefix + ".json"; }

void write_dataset_info(const std::string& prefix, const DatasetInfo& info) {
  nlohmann::json json = {{"format", kFormatName},
                         {"version", 1},
                         {"tokenizer",
                          {{"name", info.tokenizer_name},
                           {"path", info.tokenizer_path},
                           {"vocab_size", info.vocab_size},
                           {"eod_id", info.eod_id},
                           {"eod_token", info.eod_token}}},
                         {"documents", info.documents},
                         {"tokens", info.tokens}};
  std::string text = json.dump(2) + "\n";
  AtomicFileWriter writer(dataset_info_path(prefix));
  writer.write(std::as_bytes(std::span(text.data(), text.size())));
  writer.publish();
}

std::optional<DatasetInfo> read_dataset_info(const std::string& prefix) {
  std::string path = dataset_info_path(prefix);
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::ifstream stream(path);
  if (!stream) HAI_THROW("{}: cannot open the dataset's info file", path);
  try {
    nlohmann::json json = nlohmann::json::parse(stream);
    if (json.value("format", std::string()) != kFormatName) HAI_THROW("{}: not a hai-data dataset info file", path);
    const nlohmann::json& tokenizer = json.at("tokenizer");
    return DatasetInfo{.tokenizer_name = tokenizer.at("name").get<std::string>(),
                       .tokenizer_path = tokenizer.at("path").get<std::string>(),
                       .vocab_size = tokenizer.at("vocab_size").get<int64_t>(),
                       .eod_id = tokenizer.at("eod_id").get<int64_t>(),
                       .eod_token = tokenizer.at("eod_token").get<std::string>(),
                       .documents = json.at("documents").get<int64_t>(),
                       .tokens = json.at("tokens").get<int64_t>()};
  } catch (const nlohmann::json::exception& error) {
    HAI_THROW("{}: malformed dataset info file: {}", path, error.what());
  }
}

}  // namespace hai
