#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/text/pre_tokenizer.h"

namespace hai {
namespace {

std::vector<std::string> pieces_of(const nlohmann::json& config, std::string_view text) {
  PreTokenizer pre_tokenizer(config, "pre_tokenizer");
  PreTokenizerScratch scratch;
  pre_tokenizer.split(text, scratch);
  std::vector<std::string> pieces;
  for (const TextPiece& piece : scratch.pieces)
    pieces.push_back(scratch.arena.substr(piece.begin, piece.end - piece.begin));
  return pieces;
}

nlohmann::json split(std::string behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, SplitBehavioursAreHfTokenizers) {
  EXPECT_EQ(pieces_of(split("Removed"), "a-b--c"), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(pieces_of(split("Isolated"), "a-b--c"), (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(pieces_of(split("MergedWithPrevious"), "a-b--c"), (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(pieces_of(split("MergedWithNext"), "a-b--c"), (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(pieces_of(split("Contiguous"), "a-b--c"), (Pieces{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(pieces_of(split("Removed", true), "a-b--c"), (Pieces{"-", "-", "-"}));
  EXPECT_EQ(pieces_of(split("Isolated"), ""), Pieces{});
}

TEST(PreTokenizer, DigitsAndSequences) {
  nlohmann::json digits = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_EQ(pieces_of(digits, "ab123c"), (Pieces{"ab", "1", "2", "3", "c"}));
  digits["individual_digits"] = false;
  EXPECT_EQ(pieces_of(digits, "ab123c٣٤"), (Pieces{"ab", "123", "c", "٣٤"}));
  nlohmann::json sequence = {{"type", "Sequence"}, {"pretokenizers", {split("Isolated"), digits}}};
  EXPECT_EQ(pieces_of(sequence, "a1-2"), (Pieces{"a", "1", "-", "2"}));
}

TEST(PreTokenizer, ByteLevelAddsAPrefixSpaceToEveryPiece) {
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}};
  EXPECT_EQ(pieces_of(byte_level, "ab"), (Pieces{" ab"}));
  EXPECT_EQ(pieces_of(byte_level, " ab"), (Pieces{" ab"}));
  nlohmann::json sequence = {{"type", "Sequence"}, {"pretokenizers", {split("Removed"), byte_level}}};
  EXPECT_EQ(pieces_of(sequence, "a-b"), (Pieces{" a", " b"}));
}

// GPT-2's pattern with Oniguruma's \s, as HF tokenizers runs it: U+0085 is whitespace, U+FEFF and U+180E are not.
// (The JavaScript port used as the reference differs on U+0085 and U+FEFF: JS's \s is the other way round.)
TEST(PreTokenizer, GptTwoPatternUsesOnigurumaWhitespace) {
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  EXPECT_EQ(pieces_of(byte_level, "Hello  world's 123\n\n x"),
            (Pieces{"Hello", " ", " world", "'s", " 123", "\n\n", " x"}));
  EXPECT_EQ(pieces_of(byte_level, " \u0085x"), (Pieces{" ", "\u0085", "x"}));
  EXPECT_EQ(pieces_of(byte_level, " \ufeffx"), (Pieces{" \ufeff", "x"}));
  EXPECT_EQ(pieces_of(byte_level, " \u180ex"), (Pieces{" \u180e", "x"}));
  EXPECT_EQ(pieces_of(byte_level, "a\u3000\u2028b"), (Pieces{"a", "\u3000", "\u2028", "b"}));
}

TEST(PreTokenizer, LlamaThreePatternWithCaseInsensitiveGroupAndDigitTriples) {
  nlohmann::json llama = {
      {"type", "Split"},
      {"pattern",
       {{"Regex",
         R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
      {"behavior", "Isolated"}};
  EXPECT_EQ(pieces_of(llama, "IT'S 12345 ok"), (Pieces{"IT", "'S", " ", "123", "45", " ok"}));
}

TEST(PreTokenizer, OnigurumaUnicodeEscapesAreRewritten) {
  nlohmann::json cjk = {{"type", "Split"}, {"pattern", {{"Regex", R"([\u4e00-\u9fa5]+)"}}}, {"behavior", "Isolated"}};
  EXPECT_EQ(pieces_of(cjk, "a一二b"), (Pieces{"a", "一二", "b"}));
  EXPECT_EQ(oniguruma_to_pcre2(R"(\s+(?!\S)|[^\s\p{L}])"),
            R"([\t-\r\x{85}\p{Z}]+(?![^\t-\r\x{85}\p{Z}])|[^\t-\r\x{85}\p{Z}\p{L}])");
}

TEST(PreTokenizer, UnsupportedStepsAreErrorsNamingTheField) {
  try {
    nlohmann::json sequence = {{"type", "Sequence"}, {"pretokenizers", {split("Isolated"), {{"type", "Metaspace"}}}}};
    PreTokenizer pre_tokenizer(sequence, "pre_tokenizer");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("pre_tokenizer.pretokenizers[1].type: Metaspace is not supported"),
              std::string::npos)
        << error.message();
  }
  EXPECT_THROW(PreTokenizer(split("Sideways"), "pre_tokenizer"), Error);
  nlohmann::json bad_regex = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_THROW(PreTokenizer(bad_regex, "pre_tokenizer"), Error);
}

}  // namespace
}  // namespace hai
