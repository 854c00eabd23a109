#include "framework/device/fp8_weight_batch.h"

#include <utility>

#include "framework/device/dispatch.h"
#include "framework/device/fp8_quantize.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/fp8_quantize_kernels.h"
#include "framework/device/cuda/launch.h"

// The CUDA backend's host side: the checked tensors to fp8_quantize's launchers (no kernel of its own).
namespace hai::cuda {
namespace {

int64_t blocks(int64_t extent) { return (extent + 127) / 128; }

}  // namespace

OwnedTensor fp8_weight_table(const std::vector<Fp8WeightCopy>& copies) {
  std::vector<kernels::Fp8WeightEntry> entries;
  int64_t first_tile = 0;
  for (const Fp8WeightCopy& copy : copies) {
    int64_t rows = copy.x.size(0), cols = copy.x.size(1);
    entries.push_back({.x = copy.x.data<float>(),
                       .q = &copy.q.data<e4m3>()->bits,
                       .scales = copy.scales.data<float>(),
                       .q_t = &copy.q_t.data<e4m3>()->bits,
                       .scales_t = copy.scales_t.data<float>(),
                       .rows = rows,
                       .cols = cols,
                       .first_tile = first_tile});
    first_tile += blocks(rows) * blocks(cols);
  }
  auto bytes = static_cast<int64_t>(entries.size() * sizeof(kernels::Fp8WeightEntry));
  OwnedTensor table(Shape{bytes}, DType::u8, copies.front().x.device());
  copy_tensor(table, Tensor(entries.data(), Shape{bytes}, DType::u8, Device::cpu()));
  return table;
}

void quantize_weight_batch(const Tensor& table, int64_t count, int64_t tiles, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(table.device(), stream);
  check_launch(kernels::quantize_weight_batch(static_cast<const kernels::Fp8WeightEntry*>(table.raw()), count, tiles,
                                              cuda_stream),
               "fp8 weight batch quantisation");
}

}  // namespace hai::cuda
#endif

namespace hai {
namespace {

int64_t blocks(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

void check_copy(const Fp8WeightCopy& copy, Device device) {
  const Tensor& x = copy.x;
  HAI_CHECK(x.rank() == 2, "fp8 weight batch: weights are [N, K] matrices, got {}", x.str());
  int64_t n = x.size(0), k = x.size(1);
  check_dtype(x, DType::f32, "fp8 weight batch: weight");
  check_shape(copy.q, Shape{n, k}, "fp8 weight batch: quantised weight");
  check_shape(copy.q_t, Shape{k, n}, "fp8 weight batch: transposed quantised weight");
  check_shape(copy.scales, Shape{blocks(n), blocks(k)}, "fp8 weight batch: scales");
  check_shape(copy.scales_t, Shape{blocks(k), blocks(n)}, "fp8 weight batch: transposed scales");
  for (const Tensor* tensor : {&copy.q, &copy.q_t}) check_dtype(*tensor, DType::e4m3, "fp8 weight batch: values");
  for (const Tensor* tensor : {&copy.scales, &copy.scales_t}) {
    check_dtype(*tensor, DType::f32, "fp8 weight batch: scales");
  }
  for (const Tensor* tensor : {&copy.x, &copy.q, &copy.scales, &copy.q_t, &copy.scales_t}) {
    HAI_CHECK(tensor->device() == device, "fp8 weight batch: every tensor on {}, got one on {}", to_string(device),
              to_string(tensor->device()));
  }
}

}  // namespace

Fp8WeightBatch::Fp8WeightBatch(std::vector<Fp8WeightCopy> copies) : copies_(std::move(copies)) {
  if (copies_.empty()) return;
  Device device = copies_.front().x.device();
  for (const Fp8WeightCopy& copy : copies_) {
    check_copy(copy, device);
    tiles_ += blocks(copy.x.size(0)) * blocks(copy.x.size(1));
  }
  if (device.is_cpu()) return;
#ifdef HAI_WITH_CUDA
  table_ = cuda::fp8_weight_table(copies_);
#else
  throw_no_backend("fp8 weight batch", device);
#endif
}

void Fp8WeightBatch::quantize([[maybe_unused]] Stream stream) const {
  if (copies_.empty()) return;
  if (copies_.front().x.device().is_cpu()) {
    for (const Fp8WeightCopy& copy : copies_) {
      quantize_128x128(copy.q, copy.scales, copy.x);
      quantize_128x128_transposed(copy.q_t, copy.scales_t, copy.x);
    }
    return;
  }
#ifdef HAI_WITH_CUDA
  cuda::quantize_weight_batch(table_, static_cast<int64_t>(copies_.size()), tiles_, stream);
#endif
}

}  // namespace hai
