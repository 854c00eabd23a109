// Data errors that point at the data (docs/reliability.md "Data"): an out-of-vocabulary id is found when the dataset
// is opened (or by hai-data verify), naming the file, the document and the token offset; a dataset file that
// shrinks under a running job is a clear error, not SIGBUS.

#include <gtest/gtest.h>

#include <unistd.h>

#include <array>

#include "apps/hai-train/trainer.h"
#include "framework/data/indexed_dataset.h"
#include "framework/data/packed_window_source.h"
#include "framework/data/token_id_check.h"
#include "tests/apps/faults/dataset_files.h"
#include "tests/apps/faults/fault_tools.h"

namespace hai {
namespace {

using testing::ProcessResult;
using testing::run_shell;
using testing::TempDirectory;

TEST(DataFaultTest, AnOutOfVocabularyIdFailsTheStartNamingFileDocumentAndOffset) {
  TempDirectory dir;
  // The bad id sits in the last document: on main it was found only when its window came up.
  testing::write_token_dataset(dir.file("data"), 400, 40, 257, /*bad_document=*/399, /*bad_token=*/17, 300);
  Config config = testing::tiny_config(dir.path(), {"data.source=indexed", "data.path=" + dir.file("data")});
  try {
    Trainer trainer(config);
    ADD_FAILURE() << "opened a dataset holding id 300 for vocab_size 257";
  } catch (const std::exception& error) {  // the user's error (UserError), naming data.path
    std::string message = error.what();
    EXPECT_NE(message.find(dir.file("data.bin")), std::string::npos) << message;
    EXPECT_NE(message.find("document 399, token 17"), std::string::npos) << message;
    EXPECT_NE(message.find("id 300"), std::string::npos) << message;
  }
}

TEST(DataFaultTest, TheCheckFindsTheFirstBadIdWithAnyNumberOfThreads) {
  TempDirectory dir;
  testing::write_token_dataset(dir.file("data"), 100, 30, 257, 42, 5, -3);
  IndexedDataset dataset(dir.file("data"));
  for (int threads : {1, 2, 7}) {
    std::optional<BadTokenId> bad = find_bad_token_id(dataset, 257, threads);
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->location.document, 42);
    EXPECT_EQ(bad->location.offset, 5);
    EXPECT_EQ(bad->id, -3);
  }
  testing::write_token_dataset(dir.file("good"), 100, 30, 257);
  EXPECT_FALSE(find_bad_token_id(IndexedDataset(dir.file("good")), 257).has_value());
}

TEST(DataFaultTest, HaiDataVerifyChecksTheIdsAgainstTheVocabSize) {
  TempDirectory dir;
  testing::write_token_dataset(dir.file("good"), 50, 30, 257);
  testing::write_token_dataset(dir.file("bad"), 50, 30, 257, 7, 29, 257);
  ProcessResult good = run_shell(std::string(HAI_DATA_BINARY) + " verify " + dir.file("good") + " --vocab-size 257",
                                 dir.path());
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("50 documents, 1500 tokens"), std::string::npos) << good.out;
  ProcessResult bad = run_shell(std::string(HAI_DATA_BINARY) + " verify " + dir.file("bad") + " --vocab-size 257",
                                dir.path());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("document 7, token 29"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("id 257"), std::string::npos) << bad.err;
}

TEST(DataFaultTest, AFileThatShrinksUnderTheReaderIsAClearErrorNotSigbus) {
  TempDirectory dir;
  testing::write_token_dataset(dir.file("data"), 2000, 40, 257);
  auto dataset = std::make_shared<const IndexedDataset>(dir.file("data"));
  auto source = make_packed_window_source(dataset, DataSplit::train, 0.0, 16);
  std::array<int32_t, 17> window{};
  source->read_window(0, window);
  ASSERT_EQ(::truncate(dir.file("data.bin").c_str(), 4096), 0);  // rewritten in place under the job
  try {
    source->read_window(source->window_count() - 1, window);
    ADD_FAILURE() << "read a window of a file that shrank";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("shrank"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.file("data.bin")), std::string::npos) << message;
    EXPECT_NE(message.find("document"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace hai
