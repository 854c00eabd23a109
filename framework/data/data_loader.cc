#include "framework/data/data_loader.h"

#include <span>
#include <utility>

#include "framework/core/error.h"
#include "framework/data/random_permutation.h"

namespace hai {
namespace {

// NOTE: the shuffle of epoch e uses stream kShuffleStream + e under the training seed; the offset keeps it apart
// from the small stream numbers other users of the seed take.
constexpr uint64_t kShuffleStream = 0x5348'5546'0000'0000;  // "SHUF"

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const SampleSource> source, DataLoaderOptions options)
    : source_(std::move(source)), options_(options) {
  HAI_CHECK(source_ != nullptr, "a data loader needs a source");
  HAI_CHECK(options_.micro_batch_size > 0, "micro_batch_size {} must be positive", options_.micro_batch_size);
  HAI_CHECK(options_.dp_size > 0 && options_.dp_rank >= 0 && options_.dp_rank < options_.dp_size,
            "dp_rank {} of dp_size {}", options_.dp_rank, options_.dp_size);
  HAI_CHECK(source_->window_count() > 0, "the data source has no windows");
}

void DataLoader::next(const Tensor& tokens) {
  int64_t rows = options_.micro_batch_size;
  int64_t width = seq_len() + 1;
  check_shape(tokens, Shape{rows, width}, "data loader tokens");
  check_dtype(tokens, DType::i32, "data loader tokens");
  HAI_CHECK(tokens.device().is_cpu(), "data loader tokens must be on the CPU, not {}", to_string(tokens.device()));
  uint64_t first = consumed_samples_ + static_cast<uint64_t>(options_.dp_rank * rows);
  int32_t* data = tokens.data<int32_t>();
  for (int64_t row = 0; row < rows; ++row) {
    std::span<int32_t> window(data + row * width, static_cast<size_t>(width));
    source_->read_window(window_of(first + static_cast<uint64_t>(row)), window);
  }
  consumed_samples_ += static_cast<uint64_t>(options_.dp_size * rows);
}

OwnedTensor DataLoader::next() {
  OwnedTensor tokens(Shape{options_.micro_batch_size, seq_len() + 1}, DType::i32);
  next(tokens);
  return tokens;
}

uint64_t DataLoader::window_of(uint64_t sample) const {
  uint64_t windows = source_->window_count();
  RandomPermutation shuffle(windows, options_.seed, kShuffleStream + sample / windows);
  return shuffle(sample % windows);
}

DataPosition DataLoader::position() const {
  return {.consumed_samples = consumed_samples_, .seed = options_.seed, .windows_per_epoch = source_->window_count()};
}

void DataLoader::set_position(const DataPosition& position) {
  if (position.seed != options_.seed) {
    HAI_THROW("cannot resume the data position: it was saved with seed {}, this run uses seed {}", position.seed,
              options_.seed);
  }
  if (position.windows_per_epoch != source_->window_count()) {
    HAI_THROW("cannot resume the data position: it was saved with {} windows per epoch, the data now has {} "
              "(another dataset, split or seq_len?)",
              position.windows_per_epoch, source_->window_count());
  }
  consumed_samples_ = position.consumed_samples;
}

}  // namespace hai
