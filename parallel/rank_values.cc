#include "parallel/rank_values.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace hai {

std::vector<double> sum_over_ranks(Communicator& group, std::span<const double> values) {
  auto count = static_cast<int64_t>(values.size());
  // NOTE: doubles travel as their bits in i64 (the communicator reduces no f64); the sum is done here.
  OwnedTensor mine(Shape{count}, DType::i64);                // [count]
  OwnedTensor all(Shape{group.size(), count}, DType::i64);  // [ranks, count]
  for (int64_t i = 0; i < count; ++i) mine.tensor().data<int64_t>()[i] = std::bit_cast<int64_t>(values[i]);
  group.all_gather(all, mine);
  std::vector<double> sums(values.size(), 0.0);
  for (int rank = 0; rank < group.size(); ++rank) {
    for (int64_t i = 0; i < count; ++i) sums[i] += std::bit_cast<double>(all.tensor().data<int64_t>()[rank * count + i]);
  }
  return sums;
}

double sum_over_ranks(Communicator& group, double value) {
  return sum_over_ranks(group, std::span<const double>(&value, 1))[0];
}

std::vector<std::string> all_gather_strings(Communicator& group, const std::string& text) {
  OwnedTensor length(Shape{1}, DType::i64);              // [1]
  OwnedTensor lengths(Shape{group.size()}, DType::i64);  // [ranks]
  length.tensor().data<int64_t>()[0] = static_cast<int64_t>(text.size());
  group.all_gather(lengths, length);
  const int64_t* sizes = lengths.tensor().data<int64_t>();
  int64_t longest = std::max<int64_t>(1, *std::max_element(sizes, sizes + group.size()));
  OwnedTensor mine(Shape{longest}, DType::u8);               // [longest], text then zeros
  OwnedTensor all(Shape{group.size(), longest}, DType::u8);  // [ranks, longest]
  std::memcpy(mine.tensor().raw(), text.data(), text.size());
  group.all_gather(all, mine);
  std::vector<std::string> texts;
  for (int rank = 0; rank < group.size(); ++rank) {
    const char* row = static_cast<const char*>(all.tensor().raw()) + rank * longest;
    texts.emplace_back(row, static_cast<size_t>(sizes[rank]));
  }
  return texts;
}

}  // namespace hai
