#include "apps/hai-train/training_data.h"

#include "apps/hai-train/user_error.h"
#include "framework/config/config_error.h"
#include "framework/core/error.h"
#include "framework/data/dataset_info.h"
#include "framework/data/indexed_dataset.h"
#include "framework/data/packed_window_source.h"
#include "framework/data/synthetic_source.h"
#include "framework/data/token_id_check.h"

namespace hai {
namespace {

// A dataset made by hai-data records its tokenizer (PREFIX.json, docs/formats.md): the model needs an embedding
// row for every id it can hold.
void check_vocab_size(const Config& config, const std::string& key, const std::string& prefix) {
  std::optional<DatasetInfo> info;
  try {
    info = read_dataset_info(prefix);
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& error) {  // a malformed PREFIX.json
    throw ConfigError(key, error.message());
  }
  if (!info || info->vocab_size <= config.model.vocab_size) return;
  throw ConfigError("model.vocab_size",
                    fmt::format("{} is smaller than the vocabulary of the tokenizer of {} {} ({}: {} ids)",
                                config.model.vocab_size, key, prefix, info->tokenizer_name, info->vocab_size));
}

// The indexed dataset that config key `key` names, its ids checked against model.vocab_size: one that cannot be
// read is the user's error, named by the key.
std::shared_ptr<const IndexedDataset> open_dataset(const Config& config, const char* key, const std::string& prefix) {
  try {
    auto dataset = std::make_shared<const IndexedDataset>(prefix);
    check_token_ids(*dataset, config.model.vocab_size);
    return dataset;
  } catch (const Error& error) {
    throw UserError(fmt::format("{}: {}{}", key, error.message(), relative_path_note(prefix)),
                    kExitInputError, fmt::format("{}:{}", error.file(), error.line()));
  }
}

// data.eval_path read whole: it must open, hold only ids below vocab_size, and fill at least one window.
std::shared_ptr<const SampleSource> open_eval_path(const Config& config) {
  auto dataset = open_dataset(config, "data.eval_path", config.data.eval_path);
  try {
    return make_packed_window_source(dataset, DataSplit::train, 0.0, config.train.seq_len);
  } catch (const Error& error) {
    throw UserError(fmt::format("data.eval_path: {}: {}", config.data.eval_path, error.message()), kExitInputError,
                    fmt::format("{}:{}", error.file(), error.line()));
  }
}

}  // namespace

void check_dataset_vocab_sizes(const Config& config) {
  if (config.data.source == DataSource::indexed) check_vocab_size(config, "data.path", config.data.path);
  if (!config.data.eval_path.empty()) check_vocab_size(config, "data.eval_path", config.data.eval_path);
}

TrainingData open_training_data(const Config& config) {
  int64_t seq_len = config.train.seq_len;
  TrainingData data;
  check_dataset_vocab_sizes(config);
  if (config.data.source == DataSource::synthetic) {
    auto seed = static_cast<uint64_t>(config.train.seed);
    data.train = std::make_shared<SyntheticSource>(config.model.vocab_size, seq_len, seed);
    data.eval = config.data.eval_path.empty()
                    ? std::make_shared<SyntheticSource>(config.model.vocab_size, seq_len, seed + 1)
                    : open_eval_path(config);
    return data;
  }
  auto dataset = open_dataset(config, "data.path", config.data.path);
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
