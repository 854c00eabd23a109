#pragma once
// Tokenizer: a byte-level BPE tokenizer read from a Hugging Face tokenizer.json (GPT-2, Llama-3, DeepSeek-V3,
// Qwen2 and other byte-level BPE families), producing the ids HF tokenizers' encode(text,
// add_special_tokens=False) produces:
//   1. added tokens (tokenizer.json "added_tokens", special or not) are found in the raw text and become their ids
//      (those marked "normalized" are found after normalization);
//   2. the text between them is normalized ("normalizer", see normalizer.h), pre-tokenized ("pre_tokenizer", see
//      pre_tokenizer.h: it must end with ByteLevel) and each piece is encoded by the BPE model ("model", see
//      bpe_model.h).
// The post-processor (a BOS some templates add) is not applied: hai-data marks document ends itself. truncation
// and padding are ignored. Anything unsupported is a hai::Error naming the file and the field.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/text/added_tokens.h"
#include "framework/text/bpe_model.h"
#include "framework/text/normalizer.h"
#include "framework/text/pre_tokenizer.h"

namespace hai {

// Buffers and the word cache of one encoding thread.
struct TokenizerScratch {
  std::vector<TextSection> sections;
  std::vector<TextSection> normalized_sections;
  std::string normalized;
  PreTokenizerScratch pre_tokenizer;
  BpeScratch bpe;
};

class Tokenizer {
 public:
  // Reads a tokenizer.json. Throws hai::Error naming the path (and the field) when it cannot be read, is not
  // JSON, or uses something unsupported.
  static Tokenizer from_file(const std::filesystem::path& path);
  // json: a parsed tokenizer.json; source: how errors name it.
  Tokenizer(const nlohmann::json& json, std::string_view source);

  // Appends the ids of text (valid UTF-8: see replace_invalid_utf8) to ids. Thread-safe with one scratch per
  // thread.
  void encode(std::string_view text, std::vector<int32_t>& ids, TokenizerScratch& scratch) const;
  // The bytes the ids stand for (added tokens as their content).
  std::string decode(std::span<const int32_t> ids) const;

  // One more than the largest id (vocabulary and added tokens): the smallest model vocab_size that fits.
  int64_t vocab_size() const { return vocab_size_; }
  // The id of an added token given by its content.
  std::optional<int32_t> added_token_id(std::string_view content) const;
  const std::vector<AddedToken>& added_tokens() const { return added_tokens_; }

 private:
  void encode_section(std::string_view text, std::vector<int32_t>& ids, TokenizerScratch& scratch) const;

  std::vector<AddedToken> added_tokens_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized: false
  AddedTokenMatcher normalized_matcher_;  // added tokens with normalized: true
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  BpeModel model_;
  int64_t vocab_size_ = 0;
};

}  // namespace hai
