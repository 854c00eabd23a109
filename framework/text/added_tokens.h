#pragma once
// AddedTokenMatcher: finds a tokenizer's added tokens (tokenizer.json's "added_tokens": special tokens such as
// "<|endoftext|>") in text before it is pre-tokenized, as HF tokenizers' AddedVocabulary does: the leftmost match,
// the longest one at that position; `lstrip` / `rstrip` tokens take the whitespace beside them with them.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hai {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in the normalized text (else in the raw text)
  bool special = false;
};

// A section of text: an added token (id >= 0) or text to tokenize (id -1); byte offsets.
struct TextSection {
  uint32_t begin = 0;
  uint32_t end = 0;
  int32_t id = -1;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // Appends the sections of text[begin, end) to sections, in order (text sections may be empty).
  void split(std::string_view text, uint32_t begin, uint32_t end, std::vector<TextSection>& sections) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                       // index into tokens_ of the token ending here
  };
  int32_t child(int32_t node, unsigned char byte) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_{Node{}};  // a trie of the tokens' bytes; node 0 is the root
  bool first_byte_[256] = {};
};

// Whether code point c is Unicode White_Space (Rust's char::is_whitespace).
bool is_unicode_whitespace(uint32_t c);

}  // namespace hai
