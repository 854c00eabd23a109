#include "framework/device/cpu/ops.h"

#include "framework/device/cpu/adamw_element.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

template <typename Moment>
void update(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
            const AdamWSettings& settings) {
  float* p = params.data<float>();        // [N]
  const float* g = grads.data<float>();   // [N]
  Moment* m = exp_avg.data<Moment>();     // [N]
  Moment* v = exp_avg_sq.data<Moment>();  // [N]
  AdamWConstants constants = adamw_constants(settings);
  constexpr int64_t kWorkPerElement = 16;  // a sqrt, a division and a dozen multiply-adds
  parallel_for(params.numel(), kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) adamw_element(p[i], g[i], m[i], v[i], constants, constants.decay);
  });
}

}  // namespace

void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings) {
  if (exp_avg.dtype() == DType::bf16) return update<bf16>(params, grads, exp_avg, exp_avg_sq, settings);
  update<float>(params, grads, exp_avg, exp_avg_sq, settings);
}

}  // namespace hai::cpu
