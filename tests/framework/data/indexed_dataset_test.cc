#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "framework/data/indexed_dataset.h"
#include "framework/data/indexed_dataset_writer.h"
#include "framework/data/indexed_format.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

using Documents = std::vector<std::vector<int32_t>>;

void write_dataset(const std::string& prefix, TokenDType dtype, const Documents& documents) {
  IndexedDatasetWriter writer(prefix, dtype);
  for (const std::vector<int32_t>& document : documents) writer.add_document(document);
  writer.finalize();
}

std::vector<int32_t> read_sequence(const IndexedDataset& dataset, int64_t sequence) {
  TokenSpan span = dataset.sequence(sequence);
  std::vector<int32_t> tokens(static_cast<size_t>(span.size()));
  span.copy_to(0, tokens);
  return tokens;
}

// Appends the little-endian bytes of value.
template <typename T>
void append(std::vector<char>& bytes, T value) {
  size_t end = bytes.size();
  bytes.resize(end + sizeof(T));
  std::memcpy(bytes.data() + end, &value, sizeof(T));
}

TEST(IndexedDataset, RoundTripsEveryIntegerDtype) {
  testing::TempDirectory directory;
  std::vector<int32_t> long_document(5000);
  for (size_t i = 0; i < long_document.size(); ++i) long_document[i] = static_cast<int32_t>(i % 100);
  for (TokenDType dtype : {TokenDType::u8, TokenDType::i8, TokenDType::i16, TokenDType::i32, TokenDType::i64,
                           TokenDType::u16}) {
    SCOPED_TRACE(std::string(token_dtype_name(dtype)));
    int32_t big = dtype == TokenDType::u8 ? 255 : dtype == TokenDType::i8 ? 127 : 32767;
    Documents documents = {{1, 2, 3}, {}, {big}, long_document, {0}};
    if (dtype != TokenDType::u8 && dtype != TokenDType::u16) documents.push_back({-1, -7});
    std::string prefix = directory.file(std::string(token_dtype_name(dtype)));
    write_dataset(prefix, dtype, documents);

    IndexedDataset dataset(prefix);
    EXPECT_EQ(dataset.dtype(), dtype);
    ASSERT_EQ(dataset.sequence_count(), static_cast<int64_t>(documents.size()));
    ASSERT_EQ(dataset.document_count(), static_cast<int64_t>(documents.size()));
    int64_t total = 0;
    for (size_t d = 0; d < documents.size(); ++d) {
      EXPECT_EQ(dataset.document_begin(static_cast<int64_t>(d)), static_cast<int64_t>(d));
      EXPECT_EQ(dataset.document_end(static_cast<int64_t>(d)), static_cast<int64_t>(d) + 1);
      EXPECT_EQ(read_sequence(dataset, static_cast<int64_t>(d)), documents[d]);
      total += static_cast<int64_t>(documents[d].size());
    }
    EXPECT_EQ(dataset.total_tokens(), total);
    EXPECT_EQ(dataset.sequence(2)[0], big);
  }
}

TEST(IndexedDataset, RoundTripsTokensBeyondUint16InInt32) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("big_vocab");
  write_dataset(prefix, token_dtype_for_vocab(129280), {{129279, 65536, 0}});
  IndexedDataset dataset(prefix);
  EXPECT_EQ(dataset.dtype(), TokenDType::i32);
  EXPECT_EQ(read_sequence(dataset, 0), (std::vector<int32_t>{129279, 65536, 0}));
}

TEST(IndexedDataset, WritesMegatronsExactBytes) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("exact");
  write_dataset(prefix, TokenDType::u16, {{7, 8, 9}, {10}});

  std::vector<char> expected(kIndexMagic.begin(), kIndexMagic.end());
  append<uint64_t>(expected, 1);   // version
  append<uint8_t>(expected, 8);    // dtype code: uint16
  append<uint64_t>(expected, 2);   // sequences
  append<uint64_t>(expected, 3);   // document index entries
  append<int32_t>(expected, 3);    // lengths
  append<int32_t>(expected, 1);
  append<int64_t>(expected, 0);    // byte offsets
  append<int64_t>(expected, 6);
  append<int64_t>(expected, 0);    // document index
  append<int64_t>(expected, 1);
  append<int64_t>(expected, 2);
  EXPECT_EQ(testing::read_bytes(index_path(prefix)), expected);
  EXPECT_EQ(testing::read_bytes(data_path(prefix)), (std::vector<char>{7, 0, 8, 0, 9, 0, 10, 0}));
}

TEST(IndexedDataset, ReadsDocumentsOfSeveralSequences) {
  // A Megatron file may split a document into several sequences (e.g. sentences): documents {0, 1} and {2}.
  testing::TempDirectory directory;
  std::string prefix = directory.file("multi");
  std::vector<char> index(kIndexMagic.begin(), kIndexMagic.end());
  append<uint64_t>(index, 1);
  append<uint8_t>(index, 4);  // int32
  append<uint64_t>(index, 3);
  append<uint64_t>(index, 3);
  for (int32_t length : {2, 1, 1}) append<int32_t>(index, length);
  for (int64_t pointer : {0, 8, 12}) append<int64_t>(index, pointer);
  for (int64_t entry : {0, 2, 3}) append<int64_t>(index, entry);
  testing::write_bytes(index_path(prefix), index);
  std::vector<char> data;
  for (int32_t token : {100000, 5, 6, 7}) append<int32_t>(data, token);
  testing::write_bytes(data_path(prefix), data);

  IndexedDataset dataset(prefix);
  EXPECT_EQ(dataset.sequence_count(), 3);
  EXPECT_EQ(dataset.document_count(), 2);
  EXPECT_EQ(dataset.document_begin(1), 2);
  EXPECT_EQ(dataset.document_end(1), 3);
  EXPECT_EQ(read_sequence(dataset, 0), (std::vector<int32_t>{100000, 5}));
  EXPECT_EQ(read_sequence(dataset, 2), (std::vector<int32_t>{7}));
}

TEST(IndexedDataset, EmptyDatasetRoundTrips) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("empty");
  write_dataset(prefix, TokenDType::u16, {});
  IndexedDataset dataset(prefix);
  EXPECT_EQ(dataset.sequence_count(), 0);
  EXPECT_EQ(dataset.document_count(), 0);
  EXPECT_EQ(dataset.total_tokens(), 0);
}

TEST(IndexedDatasetWriter, PublishesOnlyOnFinalize) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("partial");
  {
    IndexedDatasetWriter writer(prefix, TokenDType::u16);
    writer.add_document(std::vector<int32_t>{1, 2});
    EXPECT_FALSE(std::filesystem::exists(data_path(prefix)));
    EXPECT_FALSE(std::filesystem::exists(index_path(prefix)));
  }  // abandoned: its temporaries are removed
  EXPECT_TRUE(std::filesystem::is_empty(directory.path()));

  IndexedDatasetWriter writer(prefix, TokenDType::u16);
  writer.add_document(std::vector<int32_t>{1, 2});
  writer.finalize();
  EXPECT_EQ(writer.document_count(), 1);
  EXPECT_EQ(writer.token_count(), 2);
  EXPECT_EQ(writer.bytes_written(), 4u + kIndexHeaderBytes + 4 + 8 + 16);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory.path())) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"partial.bin", "partial.idx"}));
  EXPECT_THROW(writer.add_document(std::vector<int32_t>{3}), Error);
}

TEST(IndexedDatasetWriter, RejectsTokensThatDoNotFit) {
  testing::TempDirectory directory;
  IndexedDatasetWriter writer(directory.file("small"), TokenDType::u8);
  EXPECT_THROW(writer.add_document(std::vector<int32_t>{256}), Error);
  EXPECT_THROW(writer.add_document(std::vector<int32_t>{-1}), Error);
  EXPECT_THROW(IndexedDatasetWriter(directory.file("float"), TokenDType::f32), Error);
}

TEST(TokenDType, PicksTheSmallestTypeForTheVocabulary) {
  EXPECT_EQ(token_dtype_for_vocab(257), TokenDType::u16);
  EXPECT_EQ(token_dtype_for_vocab(65536), TokenDType::u16);
  EXPECT_EQ(token_dtype_for_vocab(65537), TokenDType::i32);
  EXPECT_EQ(token_dtype_from_code(8), TokenDType::u16);
  EXPECT_EQ(token_dtype_from_code(0), std::nullopt);
  EXPECT_EQ(token_dtype_from_code(9), std::nullopt);
  EXPECT_EQ(token_dtype_size(TokenDType::i64), 8u);
}

}  // namespace
}  // namespace hai
