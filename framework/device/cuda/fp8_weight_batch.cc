#include "framework/device/cuda/fp8_weight_batch.h"

#include "framework/device/cuda/fp8_quantize_kernels.h"
#include "framework/device/cuda/launch.h"

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
