#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/random_permutation.h"

namespace hai {
namespace {

std::vector<uint64_t> materialise(const RandomPermutation& permutation) {
  std::vector<uint64_t> images(permutation.size());
  for (uint64_t i = 0; i < permutation.size(); ++i) images[i] = permutation(i);
  return images;
}

TEST(RandomPermutation, IsABijectionForEverySize) {
  for (uint64_t size : {1, 2, 3, 4, 5, 7, 16, 17, 100, 1000, 4097}) {
    std::vector<uint64_t> images = materialise(RandomPermutation(size, 1234, 0));
    std::sort(images.begin(), images.end());
    std::vector<uint64_t> expected(size);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(images, expected) << "size " << size;
  }
}

TEST(RandomPermutation, DependsOnlyOnSizeSeedAndStream) {
  std::vector<uint64_t> first = materialise(RandomPermutation(1000, 7, 3));
  EXPECT_EQ(first, materialise(RandomPermutation(1000, 7, 3)));
  EXPECT_NE(first, materialise(RandomPermutation(1000, 8, 3)));
  EXPECT_NE(first, materialise(RandomPermutation(1000, 7, 4)));
  // Shuffled: few fixed points (about one expected for a random permutation).
  int fixed = 0;
  for (uint64_t i = 0; i < first.size(); ++i) fixed += first[i] == i ? 1 : 0;
  EXPECT_LT(fixed, 10);
}

TEST(RandomPermutation, HandlesHugeSizesWithoutMemory) {
  uint64_t size = (uint64_t{1} << 62) + 12345;
  RandomPermutation permutation(size, 1, 2);
  for (uint64_t index : {uint64_t{0}, uint64_t{1}, size / 2, size - 1}) EXPECT_LT(permutation(index), size);
  EXPECT_NE(permutation(0), permutation(1));
  EXPECT_THROW(permutation(size), Error);
}

}  // namespace
}  // namespace hai
