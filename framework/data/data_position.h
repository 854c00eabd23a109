#pragma once
// DataPosition: where a DataLoader stands, saved in checkpoints so that a resumed run reads exactly the samples
// it would have read. The seed and the windows per epoch are kept to detect a resume with another seed or dataset.

#include <cstdint>
#include <string>
#include <string_view>

namespace hai {

struct DataPosition {
  uint64_t consumed_samples = 0;  // global samples consumed, all DP ranks together
  uint64_t seed = 0;
  uint64_t windows_per_epoch = 0;

  // "consumed_samples=120 seed=1234 windows_per_epoch=5000"
  std::string serialize() const;
  // The inverse of serialize(); throws hai::Error for anything else.
  static DataPosition parse(std::string_view text);

  bool operator==(const DataPosition&) const = default;
};

}  // namespace hai
