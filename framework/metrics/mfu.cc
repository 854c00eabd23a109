#include "framework/metrics/mfu.h"

#include "framework/core/error.h"

namespace hai {

double mfu(double tokens_per_s, double flops_per_token, double peak_tflops, int64_t gpus) {
  HAI_CHECK(peak_tflops > 0.0 && gpus > 0, "MFU needs a positive peak and GPU count, got {} TFLOP/s x {}",
            peak_tflops, gpus);
  return tokens_per_s * flops_per_token / (peak_tflops * 1e12 * static_cast<double>(gpus));
}

}  // namespace hai
