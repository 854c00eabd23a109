#include "framework/data/indexed_dataset.h"

#include <cstring>

#include "framework/core/error.h"
#include "framework/data/indexed_format.h"

namespace hai {
namespace {

// The little-endian value of type T at `offset` (the index arrays are not aligned: they start at byte 34).
template <typename T>
T read_at(std::span<const std::byte> bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace

int64_t TokenSpan::operator[](int64_t index) const {
  HAI_CHECK(index >= 0 && index < size(), "token {} of a sequence of {}", index, size());
  int32_t token = 0;
  if (token_dtype_size(dtype_) <= sizeof(int32_t)) {
    copy_to(index, {&token, 1});
    return token;
  }
  return read_at<int64_t>(bytes_, static_cast<size_t>(index) * sizeof(int64_t));
}

void TokenSpan::copy_to(int64_t begin, std::span<int32_t> tokens) const {
  int64_t count = static_cast<int64_t>(tokens.size());
  HAI_CHECK(begin >= 0 && count <= size() - begin, "tokens [{}, {}) of a sequence of {}", begin, begin + count,
            size());
  size_t token_size = token_dtype_size(dtype_);
  tokens_to_int32(bytes_.subspan(static_cast<size_t>(begin) * token_size, tokens.size() * token_size), dtype_,
                  tokens);
}

IndexedDataset::IndexedDataset(const std::string& prefix)
    : prefix_(prefix), index_file_(index_path(prefix)), data_file_(data_path(prefix)) {
  read_header();
  validate_sequences();
  validate_document_index();
}

void IndexedDataset::read_header() {
  std::span<const std::byte> bytes = index_file_.bytes();
  const std::string& path = index_file_.path();
  if (bytes.size() < kIndexHeaderBytes) {
    HAI_THROW("{}: truncated: {} bytes, the header alone needs {}", path, bytes.size(), kIndexHeaderBytes);
  }
  if (std::memcmp(bytes.data(), kIndexMagic.data(), kIndexMagic.size()) != 0) {
    HAI_THROW("{}: bad magic: not a Megatron indexed dataset index (expected \"MMIDIDX\\0\\0\")", path);
  }
  uint64_t version = read_at<uint64_t>(bytes, kIndexVersionOffset);
  if (version != kIndexVersion) HAI_THROW("{}: unsupported version {} (expected {})", path, version, kIndexVersion);

  uint8_t code = read_at<uint8_t>(bytes, kIndexDTypeOffset);
  std::optional<TokenDType> dtype = token_dtype_from_code(code);
  if (!dtype) HAI_THROW("{}: unknown dtype code {} (Megatron defines 1 to 8)", path, code);
  if (!is_integer_token_dtype(*dtype)) {
    HAI_THROW("{}: dtype code {} ({}) holds floating-point values, not token ids", path, code,
              token_dtype_name(*dtype));
  }
  dtype_ = *dtype;

  // NOTE: the counts are untrusted 64-bit values: compare them with the room left before multiplying.
  uint64_t sequences = read_at<uint64_t>(bytes, kIndexSequenceCountOffset);
  uint64_t entries = read_at<uint64_t>(bytes, kIndexDocumentCountOffset);
  uint64_t room = bytes.size() - kIndexHeaderBytes;
  constexpr uint64_t kBytesPerSequence = sizeof(int32_t) + sizeof(int64_t);
  if (sequences > room / kBytesPerSequence) {
    HAI_THROW("{}: sequence count {} does not fit the file size ({} bytes)", path, sequences, bytes.size());
  }
  room -= sequences * kBytesPerSequence;
  if (room % sizeof(int64_t) != 0 || entries != room / sizeof(int64_t)) {
    HAI_THROW("{}: size {} bytes does not match the header ({} sequences, {} document index entries)", path,
              bytes.size(), sequences, entries);
  }
  if (entries == 0) HAI_THROW("{}: the document index is empty (it must start with 0)", path);
  sequence_count_ = static_cast<int64_t>(sequences);
  document_index_entries_ = static_cast<int64_t>(entries);
}

void IndexedDataset::validate_sequences() {
  const std::string& path = index_file_.path();
  int64_t data_size = static_cast<int64_t>(data_file_.bytes().size());
  int64_t token_size = static_cast<int64_t>(token_dtype_size(dtype_));
  for (int64_t i = 0; i < sequence_count_; ++i) {
    int64_t length = sequence_length(i);
    int64_t pointer = sequence_pointer(i);
    if (length < 0) HAI_THROW("{}: sequence {} has a negative length {}", path, i, length);
    if (pointer < 0 || pointer % token_size != 0) {
      HAI_THROW("{}: sequence {} starts at byte {}, not a multiple of the {}-byte token size", path, i, pointer,
                token_size);
    }
    if (pointer > data_size || length > (data_size - pointer) / token_size) {
      HAI_THROW("{}: sequence {} ({} tokens at byte {}) lies outside {} ({} bytes)", path, i, length, pointer,
                data_file_.path(), data_size);
    }
    total_tokens_ += length;
  }
}

void IndexedDataset::validate_document_index() const {
  const std::string& path = index_file_.path();
  if (document_index_entry(0) != 0) {
    HAI_THROW("{}: the document index starts at {} instead of 0", path, document_index_entry(0));
  }
  for (int64_t entry = 1; entry < document_index_entries_; ++entry) {
    if (document_index_entry(entry) < document_index_entry(entry - 1)) {
      HAI_THROW("{}: the document index is not monotonic: entry {} is {} after {}", path, entry,
                document_index_entry(entry), document_index_entry(entry - 1));
    }
  }
  int64_t last = document_index_entry(document_index_entries_ - 1);
  if (last != sequence_count_) {
    HAI_THROW("{}: the document index ends at sequence {} but there are {} sequences", path, last,
              sequence_count_);
  }
}

int64_t IndexedDataset::sequence_length(int64_t sequence) const {
  HAI_CHECK(sequence >= 0 && sequence < sequence_count_, "sequence {} of {} in {}", sequence, sequence_count_,
            prefix_);
  size_t offset = kIndexHeaderBytes + static_cast<size_t>(sequence) * sizeof(int32_t);
  return read_at<int32_t>(index_file_.bytes(), offset);
}

int64_t IndexedDataset::sequence_pointer(int64_t sequence) const {
  size_t offset = kIndexHeaderBytes + static_cast<size_t>(sequence_count_) * sizeof(int32_t) +
                  static_cast<size_t>(sequence) * sizeof(int64_t);
  return read_at<int64_t>(index_file_.bytes(), offset);
}

int64_t IndexedDataset::document_index_entry(int64_t entry) const {
  size_t offset = kIndexHeaderBytes + static_cast<size_t>(sequence_count_) * (sizeof(int32_t) + sizeof(int64_t)) +
                  static_cast<size_t>(entry) * sizeof(int64_t);
  return read_at<int64_t>(index_file_.bytes(), offset);
}

TokenSpan IndexedDataset::sequence(int64_t sequence) const {
  int64_t length = sequence_length(sequence);
  size_t token_size = token_dtype_size(dtype_);
  return TokenSpan(data_file_.bytes().subspan(static_cast<size_t>(sequence_pointer(sequence)),
                                              static_cast<size_t>(length) * token_size),
                   dtype_);
}

int64_t IndexedDataset::document_begin(int64_t document) const {
  HAI_CHECK(document >= 0 && document < document_index_entries_, "document {} of {} in {}", document,
            document_count(), prefix_);
  return document_index_entry(document);
}

TokenLocation IndexedDataset::locate(int64_t sequence, int64_t index) const {
  // The last document starting at or before `sequence` (documents are ascending runs of sequences).
  int64_t low = 0, high = document_count() - 1;
  while (low < high) {
    int64_t middle = low + (high - low + 1) / 2;
    if (document_begin(middle) <= sequence) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  int64_t offset = index;
  for (int64_t earlier = document_begin(low); earlier < sequence; ++earlier) offset += sequence_length(earlier);
  return {.document = low, .sequence = sequence, .offset = offset};
}

}  // namespace hai
