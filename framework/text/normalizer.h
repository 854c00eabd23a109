#pragma once
// Normalizer: tokenizer.json's "normalizer", applied to the text between added tokens before pre-tokenization.
// Supported: null, Sequence (of supported ones), NFC, NFD, NFKC, NFKD (ICU's Unicode normalization) and Lowercase
// (ICU's full lowercase mapping, root locale). Any other type is a hai::Error naming the field.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hai {

class Normalizer {
 public:
  Normalizer(const nlohmann::json& config, std::string_view field);

  // Whether normalize() is the identity (no normalizer, or an empty Sequence).
  bool identity() const { return steps_.empty(); }
  // out <- text normalized (text: valid UTF-8).
  void normalize(std::string_view text, std::string& out) const;

 private:
  enum class Step { nfc, nfd, nfkc, nfkd, lowercase };
  void add_steps(const nlohmann::json& config, const std::string& field);

  std::vector<Step> steps_;
};

}  // namespace hai
