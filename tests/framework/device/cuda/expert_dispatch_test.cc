// CPU/GPU parity of the token dispatch's layout and row gather (framework/device/expert_dispatch.h): index maps
// and copies, so bit-identical; and the counts read on the host through pinned memory and an event.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/device/expert_dispatch.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr Tolerance kExact{};

// ep ranks of L local experts, T tokens of K experts each.
struct DispatchShape {
  int64_t ranks, local, tokens, experts_per_token;
  std::string name() const { return fmt::format("ep{}_L{}_T{}_K{}", ranks, local, tokens, experts_per_token); }
};

// One rank and ep 8 of 32 experts (V3's 8 of 256 in small); fewer rows than experts (T K < L).
constexpr DispatchShape kShapes[] = {{1, 4, 9, 2}, {2, 3, 37, 4}, {8, 4, 50, 8}, {4, 8, 1, 1}};

// [T, K] i32: K distinct experts a token ((5 t + k) mod E, E = ep * L >= K).
OwnedTensor distinct_topk(const DispatchShape& shape) {
  const int64_t experts = shape.ranks * shape.local;
  OwnedTensor topk(Shape{shape.tokens, shape.experts_per_token}, DType::i32);
  for (int64_t t = 0; t < shape.tokens; ++t) {
    for (int64_t k = 0; k < shape.experts_per_token; ++k) {
      topk.data<int32_t>()[t * shape.experts_per_token + k] = static_cast<int32_t>((5 * t + k) % experts);
    }
  }
  return topk;
}

TEST(CudaExpertDispatch, SendCountsAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const DispatchShape& shape : kShapes) {
    OwnedRoutingPlan plan(shape.tokens, shape.experts_per_token, shape.ranks * shape.local);
    build_routing_plan(plan, distinct_topk(shape));
    ParityCase parity;
    parity.input(testing::copy_to(plan.plan().positions, Device::cpu()));
    parity.input(testing::copy_to(plan.plan().sources, Device::cpu()));
    parity.input(testing::copy_to(plan.plan().expert_offsets, Device::cpu()));
    parity.output(OwnedTensor(Shape{shape.ranks, shape.local}, DType::i32), kExact);
    parity.run([](const std::vector<Tensor>& t) { count_dispatch_rows(t[3], {t[0], t[1], t[2]}); },
               "count_dispatch_rows " + shape.name());
  }
}

// Counts of 0 to 5 rows each (some sources send an expert none); the maps sized by their sum, R.
OwnedTensor receive_counts(const DispatchShape& shape) {
  OwnedTensor counts(Shape{shape.ranks, shape.local}, DType::i32);
  for (int64_t i = 0; i < counts.numel(); ++i) counts.data<int32_t>()[i] = static_cast<int32_t>((i * 7 + 3) % 6);
  return counts;
}

TEST(CudaExpertDispatch, ReceiveLayoutIsExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const DispatchShape& shape : kShapes) {
    const int64_t ranks = shape.ranks, local = shape.local;
    OwnedTensor counts = receive_counts(shape);
    int64_t received = 0;
    for (int64_t i = 0; i < counts.numel(); ++i) received += counts.data<int32_t>()[i];
    ParityCase parity;
    parity.input(std::move(counts));
    for (int64_t size :
         {local + 1, local * ranks + 1, local * ranks + 1, local + 1, ranks * local, received, received}) {
      parity.output(OwnedTensor(Shape{size}, DType::i32), kExact);
    }
    parity.run(
        [](const std::vector<Tensor>& t) {
          plan_dispatch_receive({.local_offsets = t[1],
                                 .segments = t[2],
                                 .padded_segments = t[3],
                                 .padded_local_offsets = t[4],
                                 .arrival_starts = t[5],
                                 .local_arrival = t[6],
                                 .arrival_local = t[7]},
                                t[0]);
        },
        "plan_dispatch_receive " + shape.name());
  }
}

// The reader copies the device counts through pinned memory: the host values, twice (the second read reuses the
// pinned buffer), and a larger count grows it.
TEST(CudaExpertDispatch, CountReaderReadsTheDeviceCounts) {
  HAI_REQUIRE_CUDA_DEVICE();
  DispatchCountReader reader(Device::cuda(0));
  for (const DispatchShape& shape : kShapes) {
    OwnedTensor counts = receive_counts(shape);
    std::vector<int32_t> expected(counts.data<int32_t>(), counts.data<int32_t>() + counts.numel());
    OwnedTensor on_device = testing::copy_to(counts, Device::cuda(0));
    EXPECT_EQ(reader.read(on_device), expected) << shape.name();
    EXPECT_EQ(reader.read(on_device), expected) << shape.name();
  }
}

// Rows of every copy unit: fp32 width 5 (4 bytes), bf16 width 8 (16), bf16 width 4 (8), bf16 width 3 (2), e4m3
// width 129 (1) and 128 (16); unused rows (-1) come out zero.
// [rows, width] of dtype: random values, or for e4m3 bytes below 0x7f (no NaN).
OwnedTensor random_rows(int64_t rows, int64_t width, DType dtype) {
  if (dtype != DType::e4m3) return testing::converted(testing::random_tensor(Shape{rows, width}, 21), dtype);
  OwnedTensor bytes(Shape{rows, width}, DType::e4m3);
  auto* data = static_cast<uint8_t*>(bytes.tensor().raw());
  for (int64_t i = 0; i < bytes.numel(); ++i) data[i] = static_cast<uint8_t>((i * 37) % 0x7f);
  return bytes;
}

TEST(CudaExpertDispatch, GatherRowsIsExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  struct RowCase {
    DType dtype;
    int64_t width;
  };
  for (RowCase row : {RowCase{DType::f32, 5}, RowCase{DType::bf16, 8}, RowCase{DType::bf16, 4},
                      RowCase{DType::bf16, 3}, RowCase{DType::e4m3, 129}, RowCase{DType::e4m3, 128}}) {
    constexpr int64_t kIn = 37, kOut = 53;
    OwnedTensor index(Shape{kOut}, DType::i32);
    for (int64_t i = 0; i < kOut; ++i) index.data<int32_t>()[i] = i % 4 == 3 ? -1 : static_cast<int32_t>(i * 11 % kIn);
    ParityCase parity;
    parity.output(OwnedTensor(Shape{kOut, row.width}, row.dtype), kExact);
    parity.input(random_rows(kIn, row.width, row.dtype));
    parity.input(std::move(index));
    parity.run([](const std::vector<Tensor>& t) { gather_rows(t[0], t[1], t[2]); },
               fmt::format("gather_rows {} width {}", dtype_name(row.dtype), row.width));
  }
}

}  // namespace
}  // namespace hai
