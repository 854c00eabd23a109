#pragma once
// Shared by the ZeRO-1 tests, beside the optimizer tests' parameter list and settings (optimizer_test_util.h).

#include <vector>

#include "framework/config/config.h"
#include "framework/params/parameter_store.h"
#include "tests/framework/device/test_util.h"
#include "tests/framework/optim/optimizer_test_util.h"

namespace hai::testing {

// Fills the store's gradients with the gradients of `rank` at `step` (known, different per rank and step).
inline void fill_rank_grads(ParameterStore& store, int rank, int64_t step) {
  OwnedTensor random = random_tensor(Shape{store.grads().numel()}, 100 * static_cast<uint64_t>(step) + rank);
  copy_tensor(store.grads(), random);
}

}  // namespace hai::testing
