// docs/config.md cannot fall behind the schema: its key reference is exactly the one generated from the schema.

#include <gtest/gtest.h>

#include <fstream>

#include "framework/config/reference.h"
#include "framework/config/schema.h"
#include "framework/config/write.h"
#include "tests/framework/config/config_test_util.h"

namespace hai {
namespace {

const std::string begin_marker = "<!-- key reference: generated from framework/config/schema.cc -->\n";
const std::string end_marker = "<!-- end of key reference -->\n";

std::string documented_reference() {
  std::string docs = testing::read_text_file(testing::source_path("docs/config.md"));
  std::size_t begin = docs.find(begin_marker), end = docs.find(end_marker);
  if (begin == std::string::npos || end == std::string::npos) return "";
  begin += begin_marker.size();
  return docs.substr(begin, end - begin);
}

TEST(ConfigDocs, KeyReferenceMatchesTheSchema) {
  std::string expected = config_reference_markdown();
  std::string documented = documented_reference();
  if (documented != expected) {
    std::string path = ::testing::TempDir() + "config_reference.md";
    std::ofstream(path) << expected;
    FAIL() << "docs/config.md is out of date: put " << path << " between its key reference markers";
  }
}

TEST(ConfigDocs, EveryKeyAppearsWithItsDefault) {
  std::string documented = documented_reference();
  const Config defaults;
  for (const ConfigKey& key : config_schema()) {
    std::string row = "| `" + key.path + "` |";
    std::size_t at = documented.find(row);
    ASSERT_NE(at, std::string::npos) << key.path;
    std::string line = documented.substr(at, documented.find('\n', at) - at);
    EXPECT_NE(line.find("`" + key.text(defaults) + "`"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace hai
