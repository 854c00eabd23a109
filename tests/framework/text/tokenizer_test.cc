#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/text/tokenizer.h"
#include "tests/framework/text/tiny_tokenizer.h"

namespace hai {
namespace {

using Ids = std::vector<int32_t>;

Ids encode(const Tokenizer& tokenizer, std::string_view text) {
  TokenizerScratch scratch;
  Ids ids;
  tokenizer.encode(text, ids, scratch);
  return ids;
}

std::string error_of(const nlohmann::json& json) {
  try {
    Tokenizer tokenizer(json, "tiny.json");
  } catch (const Error& error) {
    return error.message();
  }
  return "no error";
}

TEST(Tokenizer, PreTokenizesThenMergesEachPiece) {
  Tokenizer tokenizer(testing::tiny_tokenizer_json(), "tiny.json");
  EXPECT_EQ(tokenizer.vocab_size(), 22);  // added token 21 is the largest id
  // "abc", " ab", " ac" are three pieces of GPT-2's pattern.
  EXPECT_EQ(encode(tokenizer, "abc ab ac"), (Ids{6, 4, 5, 7, 2}));
  EXPECT_EQ(tokenizer.decode(encode(tokenizer, "abc ab ac")), "abc ab ac");
  EXPECT_EQ(encode(tokenizer, ""), Ids{});
}

TEST(Tokenizer, AddedTokensAreFoundFirstLongestAtTheLeftmostPosition) {
  Tokenizer tokenizer(testing::tiny_tokenizer_json(), "tiny.json");
  EXPECT_EQ(encode(tokenizer, "x<|eot|>!x<|eot|>x"), (Ids{3, 21, 3, 20, 3}));
  EXPECT_EQ(encode(tokenizer, "<|eot|><|eot|>"), (Ids{20, 20}));
  EXPECT_EQ(encode(tokenizer, "<|eot|"), (Ids{13, 14, 15, 16, 17, 14}));  // no match: plain text
  EXPECT_EQ(tokenizer.added_token_id("<|eot|>"), 20);
  EXPECT_EQ(tokenizer.added_token_id("<|nope|>"), std::nullopt);
  EXPECT_EQ(tokenizer.decode(Ids{3, 21}), "x<|eot|>!");
}

TEST(Tokenizer, LstripAndRstripTakeTheWhitespaceAroundAnAddedToken) {
  nlohmann::json json = testing::tiny_tokenizer_json();
  json["added_tokens"][0]["lstrip"] = true;
  json["added_tokens"][0]["rstrip"] = true;
  Tokenizer tokenizer(json, "tiny.json");
  EXPECT_EQ(encode(tokenizer, "a \t<|eot|>\u3000 b"), (Ids{0, 20, 1}));
}

TEST(Tokenizer, NormalizesTheTextBetweenAddedTokens) {
  nlohmann::json json = testing::tiny_tokenizer_json();
  json["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}, {{"type", "Lowercase"}}}}};
  Tokenizer tokenizer(json, "tiny.json");
  EXPECT_EQ(encode(tokenizer, "ＡB<|eot|>c"), (Ids{5, 20, 2}));  // fullwidth Ａ -> A -> a
}

TEST(Tokenizer, UnsupportedPartsAreErrorsNamingTheField) {
  nlohmann::json json = testing::tiny_tokenizer_json();
  json["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}};
  EXPECT_NE(error_of(json).find("tiny.json: normalizer.normalizers[1].type: Precompiled is not supported"),
            std::string::npos)
      << error_of(json);
  json = testing::tiny_tokenizer_json();
  json["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}};
  EXPECT_NE(error_of(json).find("no ByteLevel step"), std::string::npos) << error_of(json);
  json = testing::tiny_tokenizer_json();
  json["added_tokens"][1]["single_word"] = true;
  EXPECT_NE(error_of(json).find("added_tokens[1].single_word"), std::string::npos) << error_of(json);
  json = testing::tiny_tokenizer_json();
  json["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Digits"}}}}};
  EXPECT_NE(error_of(json).find("ByteLevel must come last"), std::string::npos) << error_of(json);
}

TEST(Tokenizer, ReadsAFileAndNamesItInErrors) {
  try {
    Tokenizer::from_file("/nonexistent/tokenizer.json");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "--tokenizer /nonexistent/tokenizer.json: cannot open the file");
  }
}

}  // namespace
}  // namespace hai
