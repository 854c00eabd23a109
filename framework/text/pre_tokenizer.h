#pragma once
// PreTokenizer: HF tokenizers' pre-tokenization of byte-level BPE tokenizers, read from tokenizer.json's
// "pre_tokenizer". Supported steps (any nesting of Sequence):
//   Split      pattern {"Regex": ...} or {"String": ...}; behavior Removed, Isolated, MergedWithPrevious,
//              MergedWithNext or Contiguous; invert.
//   Digits     individual_digits: each digit (\p{N}) alone, else runs of digits, split off.
//   ByteLevel  add_prefix_space (a space before every piece that does not start with one); use_regex (GPT-2's
//              pattern, Isolated). It must be the last step: after it the pieces are byte-level symbols, which the
//              tokenizer keeps as raw bytes.
// Any other type is a hai::Error naming the field ("pre_tokenizer.pretokenizers[1].type").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/text/unicode_regex.h"

namespace hai {

// A piece of text: the bytes [begin, end) of PreTokenizerScratch::arena.
struct TextPiece {
  uint32_t begin = 0;
  uint32_t end = 0;
};

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// Buffers reused from one call to the next (one per thread).
struct PreTokenizerScratch {
  std::string arena;  // the text, then any pieces rewritten (a prefix space added)
  std::vector<TextPiece> pieces;
  std::vector<TextPiece> next_pieces;
  std::vector<RegexMatch> matches;
};

class PreTokenizer {
 public:
  // config: tokenizer.json's "pre_tokenizer" (null: the whole text is one piece). field: its name in errors.
  PreTokenizer(const nlohmann::json& config, std::string_view field);

  // scratch.pieces <- the pre-tokens of text (valid UTF-8), in order, none empty; ranges of scratch.arena.
  void split(std::string_view text, PreTokenizerScratch& scratch) const;

  // Whether the last step is ByteLevel (the only kind of tokenizer hai-data supports).
  bool byte_level() const { return byte_level_; }

 private:
  struct Step {
    bool prefix_space = false;        // ByteLevel's add_prefix_space; otherwise a split by `regex`
    std::vector<UnicodeRegex> regex;  // one, or none for a prefix-space step
    SplitBehavior behavior = SplitBehavior::isolated;
    bool invert = false;
  };

  void add_steps(const nlohmann::json& config, const std::string& field);
  static void apply_split(const Step& step, PreTokenizerScratch& scratch);
  static void apply_prefix_space(PreTokenizerScratch& scratch);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

// The regex that matches `literal` exactly (for Split's {"String": ...}).
std::string escape_regex(std::string_view literal);

}  // namespace hai
