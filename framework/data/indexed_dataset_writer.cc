#include "framework/data/indexed_dataset_writer.h"

#include <cstring>
#include <filesystem>
#include <limits>

#include "framework/core/error.h"
#include "framework/data/indexed_format.h"

namespace hai {
namespace {

// Appends the little-endian bytes of `value` to `bytes`.
template <typename T>
void append(std::vector<std::byte>& bytes, T value) {
  size_t end = bytes.size();
  bytes.resize(end + sizeof(T));
  std::memcpy(bytes.data() + end, &value, sizeof(T));
}

// `prefix`, after creating the directory it names (hai-data --output data/x makes data/).
const std::string& with_directory(const std::string& prefix) {
  std::filesystem::path directory = std::filesystem::path(prefix).parent_path();
  std::error_code error;
  if (!directory.empty()) std::filesystem::create_directories(directory, error);
  if (error) HAI_THROW("cannot create the directory {} of {}: {}", directory.string(), prefix, error.message());
  return prefix;
}

}  // namespace

IndexedDatasetWriter::IndexedDatasetWriter(const std::string& prefix, TokenDType dtype)
    : dtype_(dtype), data_file_(data_path(with_directory(prefix))), index_file_(index_path(prefix)) {
  HAI_CHECK(is_integer_token_dtype(dtype), "token dtype {} is not an integer type", token_dtype_name(dtype));
}

void IndexedDatasetWriter::add_document(std::span<const int32_t> tokens) {
  HAI_CHECK(!finalized_, "add_document after finalize on {}", data_file_.path());
  HAI_CHECK(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
            "a document of {} tokens does not fit the int32 sequence length", tokens.size());
  encoded_.resize(tokens.size() * token_dtype_size(dtype_));
  int32_to_tokens(tokens, dtype_, encoded_);
  data_file_.write(encoded_);
  sequence_lengths_.push_back(static_cast<int32_t>(tokens.size()));
  token_count_ += static_cast<int64_t>(tokens.size());
}

void IndexedDatasetWriter::finalize() {
  HAI_CHECK(!finalized_, "{} is already finalized", data_file_.path());
  write_index();
  data_file_.sync();
  index_file_.sync();
  data_file_.publish();
  index_file_.publish();
  finalized_ = true;
}

void IndexedDatasetWriter::write_index() {
  uint64_t sequences = sequence_lengths_.size();
  std::vector<std::byte> index;
  index.reserve(kIndexHeaderBytes + sequences * (sizeof(int32_t) + sizeof(int64_t)) +
                (sequences + 1) * sizeof(int64_t));
  index.resize(kIndexMagic.size());
  std::memcpy(index.data(), kIndexMagic.data(), kIndexMagic.size());
  append<uint64_t>(index, kIndexVersion);
  append<uint8_t>(index, token_dtype_code(dtype_));
  append<uint64_t>(index, sequences);
  append<uint64_t>(index, sequences + 1);  // document index entries: one sequence per document, plus the leading 0
  for (int32_t length : sequence_lengths_) append<int32_t>(index, length);
  int64_t pointer = 0;
  for (int32_t length : sequence_lengths_) {
    append<int64_t>(index, pointer);
    pointer += static_cast<int64_t>(length) * static_cast<int64_t>(token_dtype_size(dtype_));
  }
  for (uint64_t entry = 0; entry <= sequences; ++entry) append<int64_t>(index, static_cast<int64_t>(entry));
  index_file_.write(index);
}

}  // namespace hai
