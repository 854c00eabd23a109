#pragma once
// The sample sources a run reads, from the config's data section: the training split, and the evaluation source
// (the validation split of the same dataset, or data.eval_path read whole, whatever data.source is). Every dataset
// is checked when it is opened: ids below model.vocab_size (token_id_check.h), at least one window; an error names
// the key, the file and what is wrong.

#include <memory>

#include "framework/config/config.h"
#include "framework/data/sample_source.h"

namespace hai {

struct TrainingData {
  std::shared_ptr<const SampleSource> train;
  std::shared_ptr<const SampleSource> eval;  // null when the config asks for no evaluation data
};

// Checks model.vocab_size first (check_dataset_vocab_sizes).
TrainingData open_training_data(const Config& config);

// Throws ConfigError naming model.vocab_size when it is below the vocabulary of the tokenizer that data.path's or
// data.eval_path's dataset records (PREFIX.json, written by hai-data); datasets without that file are not checked.
void check_dataset_vocab_sizes(const Config& config);

}  // namespace hai
