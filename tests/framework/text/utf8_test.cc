#include <gtest/gtest.h>

#include "framework/text/utf8.h"

namespace hai {
namespace {

// The replacements Python's bytes.decode("utf-8", errors="replace") and Node's Buffer.toString() make.
TEST(Utf8, ReplacesEachMaximalIllFormedSubpart) {
  struct Case {
    std::string bytes;
    std::string expected;
    size_t replacements;
  };
  const std::string r(kReplacementCharacter);
  std::vector<Case> cases = {
      {"plain ascii", "plain ascii", 0},
      {"caf\xC3\xA9 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xF0\x9F\x98\x80", 0},
      {"a\xFF"
       "b",
       "a" + r + "b", 1},
      {"\xF0\x9F\x98", r, 1},                  // a truncated 4-byte sequence at the end: one
      {"\xE2\x82x", r + "x", 1},               // truncated before an ASCII byte
      {"\xC0\xAF", r + r, 2},                  // an overlong lead is never valid: each byte
      {"\xED\xA0\x80", r + r + r, 3},          // a UTF-16 surrogate: each byte
      {"\xF4\x90\x80\x80", r + r + r + r, 4},  // beyond U+10FFFF
      {"\x80\x80", r + r, 2},                  // lone continuation bytes
      {"\xE0\xA0\x80\xE0\x80", "\xE0\xA0\x80" + r + r, 2},
  };
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(replace_invalid_utf8(c.bytes, out), c.replacements) << c.bytes;
    EXPECT_EQ(out, c.expected) << c.bytes;
    EXPECT_EQ(valid_utf8_prefix(c.bytes) == c.bytes.size(), c.replacements == 0) << c.bytes;
  }
}

TEST(Utf8, EncodesAndDecodesCodePoints) {
  for (uint32_t code_point : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) {
    std::string text;
    append_utf8(code_point, text);
    size_t pos = 0;
    EXPECT_EQ(next_code_point(text, pos), code_point);
    EXPECT_EQ(pos, text.size());
  }
}

}  // namespace
}  // namespace hai
