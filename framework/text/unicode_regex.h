#pragma once
// UnicodeRegex: a regular expression over UTF-8 text with Unicode properties (\p{L}, \p{N}), lookahead and the
// syntax of the Oniguruma patterns found in tokenizer.json files, compiled by PCRE2 in UTF + UCP mode with its JIT.
// The pattern is rewritten where Oniguruma and PCRE2 differ: \uHHHH becomes \x{HHHH}, and \s / \S get Oniguruma's
// set (U+0009..U+000D, U+0085 and General_Category Z; PCRE2's also holds U+180E), except \S inside a bracket
// class, which keeps PCRE2's meaning.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hai {

struct RegexMatch {
  uint32_t begin = 0;  // byte offsets into the searched text
  uint32_t end = 0;
};

class UnicodeRegex {
 public:
  // Throws hai::Error naming `what` (e.g. the tokenizer.json field) when the pattern does not compile.
  UnicodeRegex(std::string_view pattern, std::string_view what);
  ~UnicodeRegex();
  UnicodeRegex(UnicodeRegex&&) noexcept;
  UnicodeRegex& operator=(UnicodeRegex&&) noexcept;

  // Appends every non-overlapping match in text (valid UTF-8, < 4 GiB), left to right, to matches. After an empty
  // match the search resumes one code point later. Thread-safe.
  void find_all(std::string_view text, std::vector<RegexMatch>& matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;  // as written in the tokenizer.json
  std::unique_ptr<Compiled> compiled_;
};

// The pattern rewritten for PCRE2 with Oniguruma's meaning (see above).
std::string oniguruma_to_pcre2(std::string_view pattern);

}  // namespace hai
