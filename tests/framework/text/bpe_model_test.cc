#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/text/bpe_model.h"
#include "tests/framework/text/tiny_tokenizer.h"

namespace hai {
namespace {

std::vector<int32_t> encode_word(const BpeModel& model, std::string_view word) {
  BpeScratch scratch;
  std::vector<int32_t> ids;
  model.encode_word(word, ids, scratch);
  // The cached answer is the same.
  std::vector<int32_t> again;
  model.encode_word(word, again, scratch);
  EXPECT_EQ(ids, again) << word;
  return ids;
}

TEST(BpeModel, AppliesMergesByRankWithStringAndPairMerges) {
  BpeModel model(testing::tiny_tokenizer_json()["model"], "model");
  EXPECT_EQ(model.merge_count(), 4);
  EXPECT_EQ(encode_word(model, "abc"), (std::vector<int32_t>{6}));     // a b -> ab, then ab c -> abc
  EXPECT_EQ(encode_word(model, "cab"), (std::vector<int32_t>{2, 5}));  // c, ab
  EXPECT_EQ(encode_word(model, " ab"), (std::vector<int32_t>{4, 5}));  // "a b" (rank 0) beats "Ġ a" (rank 2)
  EXPECT_EQ(encode_word(model, " ac"), (std::vector<int32_t>{7, 2}));
  EXPECT_EQ(encode_word(model, "x"), (std::vector<int32_t>{3}));
}

TEST(BpeModel, MergesTheLeftmostPairAmongEqualRanks) {
  BpeModel model(testing::tiny_tokenizer_json()["model"], "model");
  EXPECT_EQ(encode_word(model, "aaa"), (std::vector<int32_t>{8, 0}));  // (aa) a
  EXPECT_EQ(encode_word(model, "aaaaa"), (std::vector<int32_t>{8, 8, 0}));
  std::string long_word(1001, 'a');  // longer than the cache takes; the heap path all the same
  std::vector<int32_t> ids = encode_word(model, long_word);
  ASSERT_EQ(ids.size(), 501u);
  EXPECT_EQ(ids.back(), 0);
}

TEST(BpeModel, IgnoreMergesTakesAWholeWordFromTheVocabulary) {
  nlohmann::json json = testing::tiny_tokenizer_json()["model"];
  EXPECT_EQ(encode_word(BpeModel(json, "model"), "ca"), (std::vector<int32_t>{2, 0}));
  json["ignore_merges"] = true;
  EXPECT_EQ(encode_word(BpeModel(json, "model"), "ca"), (std::vector<int32_t>{9}));
}

TEST(BpeModel, ConvertsTheByteLevelVocabularyToBytes) {
  BpeModel model(testing::tiny_tokenizer_json()["model"], "model");
  EXPECT_EQ(model.id_of_bytes(" a"), 7);
  EXPECT_EQ(model.bytes_of(7), " a");
  EXPECT_EQ(model.id_of_bytes("\xC2"), 10);  // Â stands for byte 0xC2
  EXPECT_EQ(model.id_limit(), 19);
}

TEST(BpeModel, UnsupportedFieldsAreErrorsNamingThem) {
  auto error_of = [](const nlohmann::json& json) -> std::string {
    try {
      BpeModel model(json, "model");
    } catch (const Error& error) {
      return error.message();
    }
    return "no error";
  };
  nlohmann::json json = testing::tiny_tokenizer_json()["model"];
  json["dropout"] = 0.1;
  EXPECT_NE(error_of(json).find("model.dropout"), std::string::npos) << error_of(json);
  json = testing::tiny_tokenizer_json()["model"];
  json["continuing_subword_prefix"] = "##";
  EXPECT_NE(error_of(json).find("model.continuing_subword_prefix"), std::string::npos);
  json = testing::tiny_tokenizer_json()["model"];
  json["type"] = "WordPiece";
  EXPECT_NE(error_of(json).find("model.type: WordPiece"), std::string::npos);
  json = testing::tiny_tokenizer_json()["model"];
  json["merges"].push_back("a x");
  EXPECT_NE(error_of(json).find("model.merges[4]: ax is not in the vocabulary"), std::string::npos) << error_of(json);
}

}  // namespace
}  // namespace hai
