#include "apps/hai-train/training_data.h"

#include "framework/core/error.h"
#include "framework/data/indexed_dataset.h"
#include "framework/data/packed_window_source.h"
#include "framework/data/synthetic_source.h"
#include "framework/data/token_id_check.h"

namespace hai {

namespace {

// data.eval_path read whole: it must open, hold only ids below vocab_size, and fill at least one window.
std::shared_ptr<const SampleSource> open_eval_path(const Config& config) {
  try {
    auto dataset = std::make_shared<const IndexedDataset>(config.data.eval_path);
    check_token_ids(*dataset, config.model.vocab_size);
    return make_packed_window_source(dataset, DataSplit::train, 0.0, config.train.seq_len);
  } catch (const Error& error) {
    HAI_THROW("data.eval_path {}: {}", config.data.eval_path, error.message());
  }
}

}  // namespace

TrainingData open_training_data(const Config& config) {
  int64_t seq_len = config.train.seq_len;
  TrainingData data;
  if (config.data.source == DataSource::synthetic) {
    auto seed = static_cast<uint64_t>(config.train.seed);
    data.train = std::make_shared<SyntheticSource>(config.model.vocab_size, seq_len, seed);
    data.eval = config.data.eval_path.empty()
                    ? std::make_shared<SyntheticSource>(config.model.vocab_size, seq_len, seed + 1)
                    : open_eval_path(config);
    return data;
  }
  auto dataset = std::make_shared<const IndexedDataset>(config.data.path);
  check_token_ids(*dataset, config.model.vocab_size);
  double valid_fraction = config.data.valid_fraction;
  data.train = make_packed_window_source(dataset, DataSplit::train, valid_fraction, seq_len);
  if (!config.data.eval_path.empty()) {
    data.eval = open_eval_path(config);
  } else if (valid_fraction > 0) {
    data.eval = make_packed_window_source(dataset, DataSplit::valid, valid_fraction, seq_len);
  }
  return data;
}

}  // namespace hai
