// IndexedDatasetWriter makes the directory its prefix names (hai-data --output data/new/x on a fresh clone).

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/data/indexed_dataset.h"
#include "framework/data/indexed_dataset_writer.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

TEST(IndexedDatasetWriter, CreatesTheDirectoryOfItsPrefix) {
  testing::TempDirectory directory;
  std::string prefix = directory.file("data/new/corpus");
  IndexedDatasetWriter writer(prefix, TokenDType::u16);
  writer.add_document(std::vector<int32_t>{1, 2, 3});
  writer.finalize();
  IndexedDataset dataset(prefix);
  EXPECT_EQ(dataset.document_count(), 1);
}

}  // namespace
}  // namespace hai
