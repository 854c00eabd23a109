#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "framework/core/rng.h"
#include "framework/data/indexed_dataset.h"
#include "framework/data/indexed_dataset_writer.h"
#include "framework/data/indexed_format.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

// A valid uint16 dataset of 4 documents (9 tokens), whose files the tests then damage.
class CorruptDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    prefix_ = directory_.file("corpus");
    IndexedDatasetWriter writer(prefix_, TokenDType::u16);
    for (const std::vector<int32_t>& document :
         std::vector<std::vector<int32_t>>{{1, 2, 3}, {4}, {}, {5, 6, 7, 8, 9}}) {
      writer.add_document(document);
    }
    writer.finalize();
    index_ = testing::read_bytes(index_path(prefix_));
    data_ = testing::read_bytes(data_path(prefix_));
  }

  // Byte offsets of the arrays in the .idx (4 sequences, 5 document index entries).
  static constexpr size_t kLengths = kIndexHeaderBytes;
  static constexpr size_t kPointers = kLengths + 4 * sizeof(int32_t);
  static constexpr size_t kDocumentIndex = kPointers + 4 * sizeof(int64_t);

  template <typename T>
  void put(size_t offset, T value) {
    std::memcpy(index_.data() + offset, &value, sizeof(T));
  }

  // Writes the (damaged) files and expects opening them to fail with a message naming `file` and `problem`.
  void expect_error(const std::string& file, const std::string& problem) {
    testing::write_bytes(index_path(prefix_), index_);
    testing::write_bytes(data_path(prefix_), data_);
    try {
      IndexedDataset dataset(prefix_);
      FAIL() << "opened a dataset with: " << problem;
    } catch (const Error& error) {
      EXPECT_NE(error.message().find(file), std::string::npos) << error.message();
      EXPECT_NE(error.message().find(problem), std::string::npos) << error.message();
    }
  }

  testing::TempDirectory directory_;
  std::string prefix_;
  std::vector<char> index_;
  std::vector<char> data_;
};

TEST_F(CorruptDataset, TheUndamagedDatasetOpens) {
  IndexedDataset dataset(prefix_);
  EXPECT_EQ(dataset.total_tokens(), 9);
}

TEST_F(CorruptDataset, MissingFiles) {
  std::filesystem::remove(data_path(prefix_));
  EXPECT_THROW(IndexedDataset{prefix_}, Error);
  try {
    IndexedDataset dataset(directory_.file("nothing"));
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("cannot open " + directory_.file("nothing.idx")), std::string::npos);
  }
}

TEST_F(CorruptDataset, TruncatedHeader) {
  index_.resize(20);
  expect_error(index_path(prefix_), "truncated: 20 bytes");
}

TEST_F(CorruptDataset, BadMagic) {
  index_[0] = 'X';
  expect_error(index_path(prefix_), "bad magic");
}

TEST_F(CorruptDataset, WrongVersion) {
  put<uint64_t>(kIndexVersionOffset, 2);
  expect_error(index_path(prefix_), "unsupported version 2");
}

TEST_F(CorruptDataset, UnknownDtypeCode) {
  put<uint8_t>(kIndexDTypeOffset, 9);
  expect_error(index_path(prefix_), "unknown dtype code 9");
  put<uint8_t>(kIndexDTypeOffset, 0);
  expect_error(index_path(prefix_), "unknown dtype code 0");
}

TEST_F(CorruptDataset, FloatDtypeCode) {
  put<uint8_t>(kIndexDTypeOffset, 6);
  expect_error(index_path(prefix_), "float64");
}

TEST_F(CorruptDataset, SequenceCountBeyondTheFile) {
  put<uint64_t>(kIndexSequenceCountOffset, uint64_t{1} << 62);
  expect_error(index_path(prefix_), "sequence count 4611686018427387904 does not fit");
}

TEST_F(CorruptDataset, DocumentCountNotMatchingTheFile) {
  put<uint64_t>(kIndexDocumentCountOffset, 4);
  expect_error(index_path(prefix_), "does not match the header");
  put<uint64_t>(kIndexDocumentCountOffset, ~uint64_t{0});
  expect_error(index_path(prefix_), "does not match the header");
}

TEST_F(CorruptDataset, TruncatedIndexArrays) {
  index_.pop_back();
  expect_error(index_path(prefix_), "does not match the header");
}

TEST_F(CorruptDataset, NegativeLength) {
  put<int32_t>(kLengths + 4, -1);
  expect_error(index_path(prefix_), "sequence 1 has a negative length -1");
}

TEST_F(CorruptDataset, LengthBeyondTheData) {
  put<int32_t>(kLengths + 12, 6);
  expect_error(data_path(prefix_), "sequence 3 (6 tokens at byte 8) lies outside");
}

TEST_F(CorruptDataset, PointerBeyondTheData) {
  put<int64_t>(kPointers + 8, int64_t{1} << 60);
  expect_error(data_path(prefix_), "sequence 1 (1 tokens at byte 1152921504606846976) lies outside");
}

TEST_F(CorruptDataset, NegativeOrMisalignedPointer) {
  put<int64_t>(kPointers + 8, -2);
  expect_error(index_path(prefix_), "sequence 1 starts at byte -2");
  put<int64_t>(kPointers + 8, 3);
  expect_error(index_path(prefix_), "sequence 1 starts at byte 3, not a multiple of the 2-byte token size");
}

TEST_F(CorruptDataset, TruncatedData) {
  data_.resize(data_.size() - 2);
  expect_error(data_path(prefix_), "sequence 3 (5 tokens at byte 8) lies outside");
}

TEST_F(CorruptDataset, DocumentIndexNotStartingAtZero) {
  put<int64_t>(kDocumentIndex, 1);
  expect_error(index_path(prefix_), "starts at 1 instead of 0");
}

TEST_F(CorruptDataset, NonMonotonicDocumentIndex) {
  put<int64_t>(kDocumentIndex + 16, 0);
  expect_error(index_path(prefix_), "not monotonic: entry 2 is 0 after 1");
}

TEST_F(CorruptDataset, DocumentIndexNotEndingAtTheLastSequence) {
  put<int64_t>(kDocumentIndex + 32, 3);
  expect_error(index_path(prefix_), "ends at sequence 3 but there are 4 sequences");
}

// Opening either throws hai::Error or gives a dataset whose every sequence and document reads in bounds.
// Returns whether it opened.
bool expect_consistent_or_error(const std::string& prefix) {
  try {
    IndexedDataset dataset(prefix);
    int64_t total = 0;
    for (int64_t sequence = 0; sequence < dataset.sequence_count(); ++sequence) {
      TokenSpan span = dataset.sequence(sequence);
      EXPECT_EQ(span.size(), dataset.sequence_length(sequence));
      std::vector<int32_t> tokens(static_cast<size_t>(span.size()));
      span.copy_to(0, tokens);
      total += span.size();
    }
    EXPECT_EQ(total, dataset.total_tokens());
    for (int64_t document = 0; document < dataset.document_count(); ++document) {
      EXPECT_LE(dataset.document_begin(document), dataset.document_end(document));
      EXPECT_LE(dataset.document_end(document), dataset.sequence_count());
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST_F(CorruptDataset, FuzzTruncationsAndFlippedBytes) {
  const std::vector<char> index = index_;
  const std::vector<char> data = data_;
  for (size_t size = 0; size < index.size(); ++size) {
    testing::write_bytes(index_path(prefix_), std::vector<char>(index.begin(), index.begin() + size));
    EXPECT_THROW(IndexedDataset{prefix_}, Error) << "index truncated to " << size << " bytes";
  }
  testing::write_bytes(index_path(prefix_), index);
  for (size_t size = 0; size <= data.size(); ++size) {
    testing::write_bytes(data_path(prefix_), std::vector<char>(data.begin(), data.begin() + size));
    expect_consistent_or_error(prefix_);
  }
  testing::write_bytes(data_path(prefix_), data);

  CounterRng rng(/*seed=*/42, /*stream=*/0);
  int loaded = 0;
  constexpr int kCases = 3000;
  for (int trial = 0; trial < kCases; ++trial) {
    std::vector<char> damaged = index;
    int flips = 1 + static_cast<int>(rng.bits(4 * trial) % 3);
    for (int flip = 0; flip < flips; ++flip) {
      uint32_t word = rng.bits(4 * trial + 1 + flip);
      size_t offset = word % damaged.size();
      // Half the cases flip one bit (small, plausible damage), half write a random byte.
      damaged[offset] = (word & 0x10000) ? static_cast<char>(damaged[offset] ^ (1 << ((word >> 17) % 8)))
                                         : static_cast<char>(word >> 24);
    }
    testing::write_bytes(index_path(prefix_), damaged);
    loaded += expect_consistent_or_error(prefix_) ? 1 : 0;
  }
  // Some damage is harmless (a token-free document boundary, an equal byte): both outcomes must occur.
  EXPECT_GT(loaded, 0);
  EXPECT_LT(loaded, kCases);
}

}  // namespace
}  // namespace hai
