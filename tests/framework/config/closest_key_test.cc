#include <gtest/gtest.h>

#include "framework/config/closest_key.h"

namespace hai {
namespace {

TEST(EditDistance, KnownValues) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("hidden_sise", "hidden_size"), 1u);
}

TEST(ClosestKey, PrefersSpellingThenSameLastKey) {
  std::vector<std::string> known = {"model.hidden_size", "model.num_heads", "optimizer.lr", "train.steps"};
  EXPECT_EQ(closest_key("model.hiden_size", known), "model.hidden_size");
  EXPECT_EQ(closest_key("train.lr", known), "optimizer.lr");
  EXPECT_EQ(closest_key("train.stepz", known), "train.steps");
  EXPECT_EQ(closest_key("logging.colour", known), std::nullopt);
}

}  // namespace
}  // namespace hai
