#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/data/dataset_info.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

TEST(DatasetInfo, RoundTripsAndIsAbsentForOtherDatasets) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("corpus");
  EXPECT_EQ(read_dataset_info(prefix), std::nullopt);
  DatasetInfo info{.tokenizer_name = "deepseek-v3",
                   .tokenizer_path = "/t/tokenizer.json",
                   .vocab_size = 128815,
                   .eod_id = 1,
                   .eod_token = "<｜end▁of▁sentence｜>",
                   .documents = 3,
                   .tokens = 42};
  write_dataset_info(prefix, info);
  std::optional<DatasetInfo> read = read_dataset_info(prefix);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->tokenizer_name, "deepseek-v3");
  EXPECT_EQ(read->tokenizer_path, "/t/tokenizer.json");
  EXPECT_EQ(read->vocab_size, 128815);
  EXPECT_EQ(read->eod_id, 1);
  EXPECT_EQ(read->eod_token, "<｜end▁of▁sentence｜>");
  EXPECT_EQ(read->documents, 3);
  EXPECT_EQ(read->tokens, 42);
}

TEST(DatasetInfo, AMalformedFileIsAnErrorNamingIt) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("corpus");
  testing::write_text(prefix + ".json", "{\"format\": \"hai-data dataset info\", \"tokenizer\": {}}");
  try {
    read_dataset_info(prefix);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find(prefix + ".json: malformed dataset info file"), std::string::npos)
        << error.message();
  }
}

}  // namespace
}  // namespace hai
