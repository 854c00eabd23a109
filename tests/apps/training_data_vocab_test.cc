// open_training_data checks model.vocab_size against the tokenizer a hai-data dataset records (PREFIX.json).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apps/hai-train/training_data.h"
#include "framework/config/config_error.h"
#include "framework/data/dataset_info.h"
#include "framework/data/indexed_dataset_writer.h"
#include "tests/apps/command.h"
#include "tests/apps/tiny_config.h"

namespace hai {
namespace {

using testing::TempDirectory;
using testing::tiny_config;

// A dataset of 100 tokens below 300 at PREFIX, with a PREFIX.json giving vocab_size (none when it is 0).
std::string write_dataset(const TempDirectory& dir, int64_t vocab_size) {
  std::string prefix = (dir.path() / "data").string();
  IndexedDatasetWriter writer(prefix, TokenDType::u16);
  std::vector<int32_t> tokens(100);
  for (int32_t i = 0; i < 100; ++i) tokens[static_cast<size_t>(i)] = i * 2;
  writer.add_document(tokens);
  writer.finalize();
  if (vocab_size > 0) {
    DatasetInfo info;
    info.tokenizer_name = "tiny-bpe";
    info.vocab_size = vocab_size;
    info.eod_id = 1;
    write_dataset_info(prefix, info);
  }
  return prefix;
}

TEST(TrainingDataVocab, AModelVocabularySmallerThanTheDatasetsTokenizerIsAConfigError) {
  TempDirectory dir;
  std::string prefix = write_dataset(dir, 300);
  Config config = tiny_config(dir.path(), {"data.source=indexed", "data.path=" + prefix});
  try {
    open_training_data(config);
    FAIL() << "no error for model.vocab_size 257 < 300";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key_path(), "model.vocab_size");
    EXPECT_EQ(error.problem(),
              "257 is smaller than the vocabulary of the tokenizer of data.path " + prefix + " (tiny-bpe: 300 ids)");
  }
  config.model.vocab_size = 300;
  EXPECT_NE(open_training_data(config).train, nullptr);
}

TEST(TrainingDataVocab, HaiTrainExitsWithAConfigErrorBeforeTraining) {
  TempDirectory dir;
  std::string prefix = write_dataset(dir, 300);
  testing::CommandResult result = testing::run_hai_train(
      "--config " + testing::write_tiny_config(dir.path()) + " --set data.source=indexed --set data.path=" + prefix,
      dir.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(testing::last_line(result.err),
            "config error: model.vocab_size: 257 is smaller than the vocabulary of the "
            "tokenizer of data.path " +
                prefix + " (tiny-bpe: 300 ids)");
  testing::write_text(prefix + ".json", "{}");
  result = testing::run_hai_train(
      "--config " + testing::write_tiny_config(dir.path()) + " --set data.source=indexed --set data.path=" + prefix,
      dir.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("config error: data.path: " + prefix + ".json: "), std::string::npos) << result.err;
}

TEST(TrainingDataVocab, DatasetsWithoutATokenizerRecordAreNotChecked) {
  TempDirectory dir;
  std::string prefix = write_dataset(dir, 0);
  Config config = tiny_config(dir.path(), {"data.source=indexed", "data.path=" + prefix});
  EXPECT_NE(open_training_data(config).train, nullptr);
}

}  // namespace
}  // namespace hai
