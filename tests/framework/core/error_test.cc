#include <gtest/gtest.h>

#include <string>

#include "framework/core/error.h"

namespace hai {
namespace {

TEST(Error, CarriesRankFileAndLine) {
  try {
    HAI_THROW("bad value {}", 42);
    FAIL() << "no throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "bad value 42");
    EXPECT_EQ(error.rank(), process_rank());
    EXPECT_NE(std::string(error.file()).find("error_test.cc"), std::string::npos);
    EXPECT_GT(error.line(), 0);
    std::string text = error.what();
    EXPECT_NE(text.find("[rank 0] bad value 42"), std::string::npos) << text;
    EXPECT_NE(text.find("error_test.cc:"), std::string::npos) << text;
  }
}

TEST(Error, CheckNamesTheCondition) {
  int heads = 3;
  try {
    HAI_CHECK(heads % 2 == 0, "heads = {}", heads);
    FAIL() << "no throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "check failed: heads % 2 == 0: heads = 3");
  }
  EXPECT_NO_THROW(HAI_CHECK(heads == 3, "never"));
}

}  // namespace
}  // namespace hai
