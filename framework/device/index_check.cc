#include "framework/device/index_check.h"

namespace hai {

void check_indices_in_range(const Tensor& indices, int64_t end, const char* what, std::optional<int32_t> ignored) {
  check_dtype(indices, DType::i32, what);
  if (!indices.device().is_cpu()) return;
  const int32_t* data = indices.data<int32_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    if (ignored && data[i] == *ignored) continue;
    HAI_CHECK(data[i] >= 0 && data[i] < end, "{} [{}] = {} is outside [0, {})", what, i, data[i], end);
  }
}

}  // namespace hai
