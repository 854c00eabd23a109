// The token dispatch's device layout (framework/device/expert_dispatch.h) on hand-worked examples: the send counts,
// the receive side's offsets, segments and row maps (sized by the rows that arrive), the row gather with its zero
// rows, and the counts read on the host.

#include <gtest/gtest.h>

#include <vector>

#include "framework/device/expert_dispatch.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

std::vector<int32_t> values_of(const Tensor& tensor) {
  return {tensor.data<int32_t>(), tensor.data<int32_t>() + tensor.numel()};
}

// i32 views of one buffer, for a layout.
struct IndexBuffer {
  explicit IndexBuffer(int64_t size) : storage(Shape{size}, DType::i32) {}
  Tensor take(int64_t count) {
    Tensor view = storage.tensor().slice(used, used + count);
    used += count;
    return view;
  }
  OwnedTensor storage;
  int64_t used = 0;
};

// 3 tokens, K = 2, E = 4 over ep = 2 ranks (L = 2). Assignments a = t * K + k choose experts [0, 3 | 1, 2 | 3, 1];
// sorted stably by expert: e0 <- a0; e1 <- a2, a5; e2 <- a3; e3 <- a1, a4: rank 0 gets sorted rows 0..2, rank 1
// rows 3..5.
TEST(ExpertDispatch, SendCountsAreTheRowsOfEachDestinationsExperts) {
  OwnedTensor topk(Shape{3, 2}, DType::i32);
  int32_t experts[6] = {0, 3, 1, 2, 3, 1};
  std::copy(experts, experts + 6, topk.data<int32_t>());
  OwnedRoutingPlan plan(3, 2, 4);
  build_routing_plan(plan, topk);
  OwnedTensor send_counts(Shape{2, 2}, DType::i32);
  count_dispatch_rows(send_counts, plan);
  EXPECT_EQ(values_of(send_counts), (std::vector<int32_t>{1, 2, 1, 2}));
  OwnedTensor wrong(Shape{2, 3}, DType::i32);  // 6 experts: not the plan's 4
  EXPECT_THROW(count_dispatch_rows(wrong, plan), Error);
  DispatchCountReader reader(Device::cpu());
  EXPECT_EQ(reader.read(send_counts), (std::vector<int32_t>{1, 2, 1, 2}));
}

// The receive layout of ep ranks, L local experts and R rows, in one buffer.
DispatchReceiveLayout receive_layout(IndexBuffer& buffer, int64_t ranks, int64_t local, int64_t rows) {
  return {.local_offsets = buffer.take(local + 1),
          .segments = buffer.take(local * ranks + 1),
          .padded_segments = buffer.take(local * ranks + 1),
          .padded_local_offsets = buffer.take(local + 1),
          .arrival_starts = buffer.take(ranks * local),
          .local_arrival = buffer.take(rows),
          .arrival_local = buffer.take(rows)};
}

// ep = 2, L = 2. Source 0 sends 2 rows for local expert 0 and 1 for expert 1; source 1 one for each: R = 5.
// Arrival rows: [s0e0, s0e0, s0e1 | s1e0, s1e1]; local order: e0 <- s0 (2), s1 (1); e1 <- s0 (1), s1 (1).
TEST(ExpertDispatch, ReceiveLayoutOrdersByLocalExpertThenSource) {
  OwnedTensor recv_counts(Shape{2, 2}, DType::i32);
  int32_t counts[4] = {2, 1, 1, 1};
  std::copy(counts, counts + 4, recv_counts.data<int32_t>());
  IndexBuffer buffer(3 + 5 + 5 + 3 + 4 + 5 + 5);
  DispatchReceiveLayout layout = receive_layout(buffer, 2, 2, 5);
  plan_dispatch_receive(layout, recv_counts);
  EXPECT_EQ(values_of(layout.local_offsets), (std::vector<int32_t>{0, 3, 5}));
  EXPECT_EQ(values_of(layout.segments), (std::vector<int32_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(values_of(layout.padded_segments), (std::vector<int32_t>{0, 128, 256, 384, 512}));
  EXPECT_EQ(values_of(layout.padded_local_offsets), (std::vector<int32_t>{0, 256, 512}));
  EXPECT_EQ(values_of(layout.arrival_starts), (std::vector<int32_t>{0, 2, 3, 4}));
  EXPECT_EQ(values_of(layout.local_arrival), (std::vector<int32_t>{0, 1, 3, 2, 4}));
  EXPECT_EQ(values_of(layout.arrival_local), (std::vector<int32_t>{0, 1, 3, 2, 4}));

  // Maps of another size than the rows that arrive: the CPU op says so.
  IndexBuffer wrong(3 + 5 + 5 + 3 + 4 + 6 + 6);
  EXPECT_THROW(plan_dispatch_receive(receive_layout(wrong, 2, 2, 6), recv_counts), Error);
}

TEST(ExpertDispatch, GatherRowsCopiesRowsAndZeroesUnusedOnes) {
  OwnedTensor in = testing::tensor_of(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  OwnedTensor out(Shape{4, 2}, DType::f32);
  gather_rows(out, in, testing::indices_of({2, -1, 0, 2}));
  std::vector<float> got(out.data<float>(), out.data<float>() + 8);
  EXPECT_EQ(got, (std::vector<float>{5, 6, 0, 0, 1, 2, 5, 6}));
  // Any dtype: bytes of a row.
  OwnedTensor bytes_in(Shape{2, 3}, DType::u8), bytes_out(Shape{2, 3}, DType::u8);
  for (int i = 0; i < 6; ++i) bytes_in.data<uint8_t>()[i] = static_cast<uint8_t>(i + 1);
  gather_rows(bytes_out, bytes_in, testing::indices_of({1, 0}));
  std::vector<uint8_t> got_bytes(bytes_out.data<uint8_t>(), bytes_out.data<uint8_t>() + 6);
  EXPECT_EQ(got_bytes, (std::vector<uint8_t>{4, 5, 6, 1, 2, 3}));
  EXPECT_THROW(gather_rows(out, in, testing::indices_of({3, 0, 0, 0})), Error);  // past the 3 rows
  EXPECT_THROW(gather_rows(out, in, testing::indices_of({0, 0})), Error);        // one index a row
}

}  // namespace
}  // namespace hai
