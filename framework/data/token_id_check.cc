#include "framework/data/token_id_check.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/indexed_format.h"

namespace hai {
namespace {

// The largest id `dtype` can hold (integer dtypes).
int64_t largest_id(TokenDType dtype) {
  switch (dtype) {
    case TokenDType::u8: return 255;
    case TokenDType::i8: return 127;
    case TokenDType::i16: return 32767;
    case TokenDType::u16: return 65535;
    case TokenDType::i32: return std::numeric_limits<int32_t>::max();
    default: return std::numeric_limits<int64_t>::max();
  }
}

bool can_be_negative(TokenDType dtype) { return dtype != TokenDType::u8 && dtype != TokenDType::u16; }

// The index of the first token of `bytes` (stored as T) outside [0, vocab_size), or -1.
template <class T>
int64_t first_bad(std::span<const std::byte> bytes, int64_t vocab_size) {
  size_t count = bytes.size() / sizeof(T);
  for (size_t i = 0; i < count; ++i) {
    T token;
    std::memcpy(&token, bytes.data() + i * sizeof(T), sizeof(T));
    auto id = static_cast<int64_t>(token);
    if (id < 0 || id >= vocab_size) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t first_bad_in(const TokenSpan& tokens, int64_t vocab_size) {
  switch (tokens.dtype()) {
    case TokenDType::u8: return first_bad<uint8_t>(tokens.bytes(), vocab_size);
    case TokenDType::i8: return first_bad<int8_t>(tokens.bytes(), vocab_size);
    case TokenDType::i16: return first_bad<int16_t>(tokens.bytes(), vocab_size);
    case TokenDType::u16: return first_bad<uint16_t>(tokens.bytes(), vocab_size);
    case TokenDType::i32: return first_bad<int32_t>(tokens.bytes(), vocab_size);
    case TokenDType::i64: return first_bad<int64_t>(tokens.bytes(), vocab_size);
    default: HAI_THROW("token dtype {} holds no token ids", token_dtype_name(tokens.dtype()));
  }
}

}  // namespace

std::optional<BadTokenId> find_bad_token_id(const IndexedDataset& dataset, int64_t vocab_size, int threads) {
  HAI_CHECK(vocab_size > 0, "vocab_size {} must be positive", vocab_size);
  HAI_CHECK(is_integer_token_dtype(dataset.dtype()), "{} holds no token ids", dataset.prefix());
  if (largest_id(dataset.dtype()) < vocab_size && !can_be_negative(dataset.dtype())) return std::nullopt;
  int64_t sequences = dataset.sequence_count();
  int workers = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers = static_cast<int>(std::clamp<int64_t>(sequences, 1, workers));
  // Worker w scans sequences [w x sequences / workers, (w + 1) x sequences / workers) and keeps its first bad one.
  std::vector<std::pair<int64_t, int64_t>> found(static_cast<size_t>(workers), {-1, -1});  // (sequence, index)
  auto scan = [&](int worker) {
    int64_t begin = sequences * worker / workers, end = sequences * (worker + 1) / workers;
    for (int64_t sequence = begin; sequence < end; ++sequence) {
      int64_t index = first_bad_in(dataset.sequence(sequence), vocab_size);
      if (index >= 0) {
        found[static_cast<size_t>(worker)] = {sequence, index};
        return;
      }
    }
  };
  std::vector<std::jthread> pool;
  for (int worker = 1; worker < workers; ++worker) pool.emplace_back(scan, worker);
  scan(0);
  pool.clear();  // joins
  for (const auto& [sequence, index] : found) {
    if (sequence < 0) continue;
    return BadTokenId{.location = dataset.locate(sequence, index),
                      .id = dataset.sequence(sequence)[index]};
  }
  return std::nullopt;
}

void check_token_ids(const IndexedDataset& dataset, int64_t vocab_size, int threads) {
  std::optional<BadTokenId> bad = find_bad_token_id(dataset, vocab_size, threads);
  if (!bad) return;
  HAI_THROW("{}: document {}, token {} (sequence {}): id {} is outside the vocabulary [0, {}) (model.vocab_size): "
            "the data was tokenized for another vocabulary",
            data_path(dataset.prefix()), bad->location.document, bad->location.offset, bad->location.sequence,
            bad->id, vocab_size);
}

}  // namespace hai
