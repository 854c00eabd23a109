#pragma once
// The padded head widths the bf16 attention kernels are compiled for: the real widths (multiples of 8, at most 256)
// are padded with zero columns up to the first pair that holds them. (192, 128) is DeepSeek-V3's MLA.

#include <type_traits>

namespace hai::cuda::kernels::attention_widths {

template <int value>
using Width = std::integral_constant<int, value>;

// Calls launch(Width<qk_width>{}, Width<v_width>{}) with the smallest compiled pair of padded widths that holds
// qk_dim and v_dim, and returns its result.
template <typename Launch>
auto with_padded_widths(int qk_dim, int v_dim, Launch&& launch) {
  if (qk_dim <= 32 && v_dim <= 32) return launch(Width<32>{}, Width<32>{});
  if (qk_dim <= 64 && v_dim <= 64) return launch(Width<64>{}, Width<64>{});
  if (qk_dim <= 128 && v_dim <= 128) return launch(Width<128>{}, Width<128>{});
  if (qk_dim <= 192 && v_dim <= 128) return launch(Width<192>{}, Width<128>{});
  return launch(Width<256>{}, Width<256>{});
}

}  // namespace hai::cuda::kernels::attention_widths
