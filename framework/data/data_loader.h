#pragma once
// DataLoader: the deterministic sampler of docs/architecture.md "Datasets".
//   - Global sample g reads window perm_e(g mod W) of the source, where W = windows per epoch, e = g / W the
//     epoch, and perm_e a RandomPermutation keyed by (seed, epoch): each epoch uses every window once, in a fresh
//     order.
//   - Samples are dealt in global micro-batches of dp_size * micro_batch_size: DP rank r takes the rows
//     [r * B, (r + 1) * B) of each. A step of global_batch_size = B * micro_batches * dp samples therefore reads
//     the samples [consumed, consumed + global_batch_size) whatever dp is: the global batch does not depend on
//     the data-parallel layout.
//   - The position (consumed samples) is global, equal on every rank, and saved in checkpoints.

#include <cstdint>
#include <memory>

#include "framework/data/data_position.h"
#include "framework/data/sample_source.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct DataLoaderOptions {
  int64_t micro_batch_size = 1;
  int dp_rank = 0;
  int dp_size = 1;
  uint64_t seed = 0;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const SampleSource> source, DataLoaderOptions options);

  // tokens: [micro_batch_size, seq_len + 1] i32 cpu <- this rank's rows of the next global micro-batch.
  void next(const Tensor& tokens);
  // The same into a new tensor [micro_batch_size, seq_len + 1] i32.
  OwnedTensor next();

  // The source window that global sample `sample` reads.
  uint64_t window_of(uint64_t sample) const;
  // The epoch of the next sample.
  uint64_t epoch() const { return consumed_samples_ / source_->window_count(); }

  DataPosition position() const;
  // Throws hai::Error if the position was saved with another seed or a dataset of another size.
  void set_position(const DataPosition& position);

  int64_t seq_len() const { return source_->seq_len(); }
  int64_t micro_batch_size() const { return options_.micro_batch_size; }

 private:
  std::shared_ptr<const SampleSource> source_;
  DataLoaderOptions options_;
  uint64_t consumed_samples_ = 0;
};

}  // namespace hai
