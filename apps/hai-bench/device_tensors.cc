#include "apps/hai-bench/device_tensors.h"

#include <numeric>

#include "framework/core/rng.h"
#include "framework/device/cpu/parallel.h"

namespace hai::bench {
namespace {

// A fixed pattern of 1001 values in [-0.5, 0.5].
float pattern_value(int64_t i) { return static_cast<float>((i * 7919) % 1001 - 500) / 1000.0f; }

}  // namespace

OwnedTensor filled_device_tensor(Shape shape, DType dtype) {
  HAI_CHECK(dtype == DType::f32 || dtype == DType::bf16, "benchmark tensors are fp32 or bf16, not {}",
            dtype_name(dtype));
  OwnedTensor host(shape, dtype);
  for (int64_t i = 0; i < host.numel(); ++i) {
    if (dtype == DType::bf16) {
      host.data<bf16>()[i].bits = float_to_bf16(pattern_value(i));
    } else {
      host.data<float>()[i] = pattern_value(i);
    }
  }
  OwnedTensor device(shape, dtype, Device::cuda(0));
  copy_tensor(device, host);
  return device;
}

OwnedTensor normal_device_tensor(Shape shape, uint64_t seed) {
  OwnedTensor host(shape, DType::f32);
  float* values = host.data<float>();
  CounterRng rng(seed, 0);
  cpu::parallel_for(host.numel(), 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) values[i] = rng.normal(static_cast<uint64_t>(i));
  });
  OwnedTensor device(shape, DType::f32, Device::cuda(0));
  copy_tensor(device, host);
  return device;
}

OwnedTensor even_expert_offsets(int64_t experts, int64_t rows) {
  OwnedTensor host(Shape{experts + 1}, DType::i32);
  for (int64_t e = 0; e < experts; ++e) host.data<int32_t>()[e] = static_cast<int32_t>(e * (rows / experts));
  host.data<int32_t>()[experts] = static_cast<int32_t>(rows);
  OwnedTensor device(Shape{experts + 1}, DType::i32, Device::cuda(0));
  copy_tensor(device, host);
  return device;
}

std::vector<int32_t> uneven_expert_rows(int64_t experts, int64_t rows) {
  int64_t mean = rows / experts, spread = mean / 4, pairs = experts / 2;
  std::vector<int32_t> result;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t pair = e / 2;
    int64_t d = pairs > 0 ? spread - spread * pair / pairs : 0;
    result.push_back(static_cast<int32_t>(e % 2 == 0 ? mean - d : mean + d));
  }
  int64_t others = std::accumulate(result.begin(), result.end() - 1, int64_t{0});
  result.back() = static_cast<int32_t>(rows - others);  // the remainder: R rows in all
  return result;
}

OwnedTensor expert_offsets(const std::vector<int32_t>& rows_per_expert) {
  int64_t experts = static_cast<int64_t>(rows_per_expert.size());
  OwnedTensor host(Shape{experts + 1}, DType::i32);
  host.data<int32_t>()[0] = 0;
  for (int64_t e = 0; e < experts; ++e) host.data<int32_t>()[e + 1] = host.data<int32_t>()[e] + rows_per_expert[e];
  OwnedTensor device(Shape{experts + 1}, DType::i32, Device::cuda(0));
  copy_tensor(device, host);
  return device;
}

OwnedTensor index_device_tensor(int64_t count, int64_t bound) {
  OwnedTensor host(Shape{count}, DType::i32);
  for (int64_t i = 0; i < count; ++i) host.data<int32_t>()[i] = static_cast<int32_t>((i * 7919 + 13) % bound);
  OwnedTensor device(Shape{count}, DType::i32, Device::cuda(0));
  copy_tensor(device, host);
  return device;
}

}  // namespace hai::bench
