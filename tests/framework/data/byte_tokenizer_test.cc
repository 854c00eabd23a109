#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/byte_tokenizer.h"

namespace hai {
namespace {

TEST(ByteTokenizer, EncodesBytesAsTheirValues) {
  EXPECT_EQ(byte_encode("Hi!"), (std::vector<int32_t>{72, 105, 33}));
  // UTF-8 "é" is two bytes, each its own token; bytes above 127 are not negative.
  EXPECT_EQ(byte_encode("\xc3\xa9"), (std::vector<int32_t>{195, 169}));
  EXPECT_TRUE(byte_encode("").empty());
}

TEST(ByteTokenizer, DocumentsEndWithEndOfDocument) {
  std::vector<int32_t> tokens;
  byte_encode_document("a", tokens);
  byte_encode_document("", tokens);
  EXPECT_EQ(tokens, (std::vector<int32_t>{97, kEndOfDocument, kEndOfDocument}));
  EXPECT_EQ(kEndOfDocument, 256);
  EXPECT_EQ(kByteVocabSize, 257);
}

TEST(ByteTokenizer, RoundTripsEveryByte) {
  std::string text;
  for (int byte = 0; byte < 256; ++byte) text.push_back(static_cast<char>(byte));
  std::vector<int32_t> tokens = byte_encode(text);
  for (int byte = 0; byte < 256; ++byte) EXPECT_EQ(tokens[static_cast<size_t>(byte)], byte);
  EXPECT_EQ(byte_decode(tokens), text);
}

TEST(ByteTokenizer, DecodeDropsEndOfDocumentAndRejectsOtherIds) {
  EXPECT_EQ(byte_decode(std::vector<int32_t>{104, 105, kEndOfDocument, 33}), "hi!");
  EXPECT_THROW(byte_decode(std::vector<int32_t>{257}), Error);
  EXPECT_THROW(byte_decode(std::vector<int32_t>{-1}), Error);
}

}  // namespace
}  // namespace hai
