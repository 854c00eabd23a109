#include "apps/hai-data/end_of_document.h"

#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace hai {
namespace {

// tokenizer_config.json's eos_token ("text" or {"content": "text", ...}), if the file exists and names one.
std::optional<std::string> configured_eos_token(const std::filesystem::path& config_path) {
  std::ifstream stream(config_path);
  if (!stream) return std::nullopt;
  nlohmann::json config = nlohmann::json::parse(stream, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object() || !config.contains("eos_token")) return std::nullopt;
  const nlohmann::json& eos = config["eos_token"];
  if (eos.is_string()) return eos.get<std::string>();
  if (eos.is_object() && eos.contains("content") && eos["content"].is_string())
    return eos["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

EndOfDocumentToken choose_end_of_document_token(const Tokenizer& tokenizer, const std::filesystem::path& tokenizer_json,
                                                const std::string& eod_option) {
  if (!eod_option.empty()) {
    std::optional<int32_t> id = tokenizer.added_token_id(eod_option);
    if (!id) HAI_THROW("--eod-token {}: not an added token of --tokenizer {}", eod_option, tokenizer_json.string());
    return {eod_option, *id, "--eod-token"};
  }
  std::filesystem::path config_path = tokenizer_json.parent_path() / "tokenizer_config.json";
  if (std::optional<std::string> eos = configured_eos_token(config_path)) {
    std::optional<int32_t> id = tokenizer.added_token_id(*eos);
    if (!id) HAI_THROW("{}: eos_token {} is not an added token of the tokenizer", config_path.string(), *eos);
    return {*eos, *id, config_path.filename().string()};
  }
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "<｜end▁of▁sentence｜>", "</s>", "<eos>"}) {
    if (std::optional<int32_t> id = tokenizer.added_token_id(name)) return {name, *id, "a well-known name"};
  }
  HAI_THROW("--tokenizer {}: cannot tell its end-of-document token; name one with --eod-token",
            tokenizer_json.string());
}

}  // namespace hai
