#include "apps/hai-train/training_data.h"

#include "framework/data/indexed_dataset.h"
#include "framework/data/packed_window_source.h"
#include "framework/data/synthetic_source.h"

namespace hai {

TrainingData open_training_data(const Config& config) {
  int64_t seq_len = config.train.seq_len;
  TrainingData data;
  if (config.data.source == DataSource::synthetic) {
    auto seed = static_cast<uint64_t>(config.train.seed);
    data.train = std::make_shared<SyntheticSource>(config.model.vocab_size, seq_len, seed);
    data.eval = std::make_shared<SyntheticSource>(config.model.vocab_size, seq_len, seed + 1);
    return data;
  }
  auto dataset = std::make_shared<const IndexedDataset>(config.data.path);
  double valid_fraction = config.data.valid_fraction;
  data.train = make_packed_window_source(dataset, DataSplit::train, valid_fraction, seq_len);
  if (!config.data.eval_path.empty()) {
    auto eval_dataset = std::make_shared<const IndexedDataset>(config.data.eval_path);
    data.eval = make_packed_window_source(eval_dataset, DataSplit::train, 0.0, seq_len);
  } else if (valid_fraction > 0) {
    data.eval = make_packed_window_source(dataset, DataSplit::valid, valid_fraction, seq_len);
  }
  return data;
}

}  // namespace hai
