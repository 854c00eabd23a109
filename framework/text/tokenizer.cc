#include "framework/text/tokenizer.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace hai {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) HAI_THROW("--tokenizer {}: cannot open the file", path.string());
  try {
    return nlohmann::json::parse(stream);
  } catch (const nlohmann::json::exception& error) {
    HAI_THROW("--tokenizer {}: not valid JSON: {}", path.string(), error.what());
  }
}

const nlohmann::json& field_of(const nlohmann::json& json, const char* key) {
  static const nlohmann::json null_json;
  auto found = json.find(key);
  return found == json.end() ? null_json : *found;
}

std::vector<AddedToken> parse_added_tokens(const nlohmann::json& list, std::string_view source) {
  std::vector<AddedToken> tokens;
  if (list.is_null()) return tokens;
  if (!list.is_array()) HAI_THROW("{}: added_tokens: expected an array", source);
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& entry = list[i];
    if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() || !entry.contains("id") ||
        !entry["id"].is_number_integer() || entry["id"].get<int64_t>() < 0 ||
        entry["id"].get<int64_t>() >= (int64_t{1} << 31)) {
      HAI_THROW("{}: added_tokens[{}]: expected {{\"id\": integer, \"content\": string, ...}}", source, i);
    }
    if (entry.value("single_word", false)) {
      HAI_THROW("{}: added_tokens[{}].single_word: true is not supported", source, i);
    }
    tokens.push_back({.content = entry["content"].get<std::string>(),
                      .id = entry["id"].get<int32_t>(),
                      .lstrip = entry.value("lstrip", false),
                      .rstrip = entry.value("rstrip", false),
                      .normalized = entry.value("normalized", false),
                      .special = entry.value("special", false)});
  }
  return tokens;
}

std::vector<AddedToken> tokens_with(const std::vector<AddedToken>& tokens, bool normalized) {
  std::vector<AddedToken> kept;
  std::copy_if(tokens.begin(), tokens.end(), std::back_inserter(kept),
               [&](const AddedToken& token) { return token.normalized == normalized; });
  return kept;
}

}  // namespace

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  return Tokenizer(read_json(path), "--tokenizer " + path.string());
}

Tokenizer::Tokenizer(const nlohmann::json& json, std::string_view source)
    : added_tokens_(parse_added_tokens(field_of(json, "added_tokens"), source)),
      raw_matcher_(tokens_with(added_tokens_, false)),
      normalized_matcher_(tokens_with(added_tokens_, true)),
      normalizer_(field_of(json, "normalizer"), fmt::format("{}: normalizer", source)),
      pre_tokenizer_(field_of(json, "pre_tokenizer"), fmt::format("{}: pre_tokenizer", source)),
      model_(field_of(json, "model"), fmt::format("{}: model", source)) {
  if (!pre_tokenizer_.byte_level()) {
    HAI_THROW("{}: pre_tokenizer: has no ByteLevel step; only byte-level BPE tokenizers are supported", source);
  }
  vocab_size_ = model_.id_limit();
  for (const AddedToken& token : added_tokens_) vocab_size_ = std::max<int64_t>(vocab_size_, token.id + int64_t{1});
}

std::optional<int32_t> Tokenizer::added_token_id(std::string_view content) const {
  for (const AddedToken& token : added_tokens_) {
    if (token.content == content) return token.id;
  }
  return std::nullopt;
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& ids, TokenizerScratch& scratch) const {
  HAI_CHECK(text.size() < (uint64_t{1} << 31), "a document of {} bytes is too long to tokenize (< 2 GiB)", text.size());
  scratch.sections.clear();
  raw_matcher_.split(text, 0, static_cast<uint32_t>(text.size()), scratch.sections);
  for (const TextSection& section : scratch.sections) {
    if (section.id >= 0) {
      ids.push_back(section.id);
      continue;
    }
    if (section.begin == section.end) continue;
    std::string_view raw = text.substr(section.begin, section.end - section.begin);
    if (normalizer_.identity() && normalized_matcher_.empty()) {
      encode_section(raw, ids, scratch);
      continue;
    }
    normalizer_.normalize(raw, scratch.normalized);
    std::string normalized = std::move(scratch.normalized);  // NOTE: encode_section reuses scratch buffers
    scratch.normalized_sections.clear();
    normalized_matcher_.split(normalized, 0, static_cast<uint32_t>(normalized.size()), scratch.normalized_sections);
    std::vector<TextSection> pieces = std::move(scratch.normalized_sections);
    for (const TextSection& piece : pieces) {
      if (piece.id >= 0) {
        ids.push_back(piece.id);
      } else if (piece.begin != piece.end) {
        encode_section(std::string_view(normalized).substr(piece.begin, piece.end - piece.begin), ids, scratch);
      }
    }
    scratch.normalized = std::move(normalized);
    scratch.normalized_sections = std::move(pieces);
  }
}

void Tokenizer::encode_section(std::string_view text, std::vector<int32_t>& ids, TokenizerScratch& scratch) const {
  pre_tokenizer_.split(text, scratch.pre_tokenizer);
  const std::string& arena = scratch.pre_tokenizer.arena;
  for (const TextPiece& piece : scratch.pre_tokenizer.pieces) {
    model_.encode_word(std::string_view(arena).substr(piece.begin, piece.end - piece.begin), ids, scratch.bpe);
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (int32_t id : ids) {
    auto added = std::find_if(added_tokens_.begin(), added_tokens_.end(),
                              [&](const AddedToken& token) { return token.id == id; });
    bytes += added != added_tokens_.end() ? added->content : model_.bytes_of(id);
  }
  return bytes;
}

}  // namespace hai
