// split into sub-communicators: ranks, sizes and collectives inside each part, and independent numbering.

#include <vector>

#include "framework/comm/communicator.h"
#include "tests/framework/comm/comm_test_util.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using testing::make_tensor;

using Split = testing::World;

TEST_F(Split, EvenAndOddRanksFormTwoCommunicators) {
  int color = rank() % 2;
  std::unique_ptr<Communicator> part = world_->split(color, rank());
  int members = (size() - color + 1) / 2;  // world ranks color, color + 2, ...
  ASSERT_EQ(part->size(), members);
  EXPECT_EQ(part->rank(), rank() / 2);

  OwnedTensor world_rank = make_tensor(Shape{1}, DType::i32, [&](int64_t) { return rank(); });
  OwnedTensor total = make_tensor(Shape{1}, DType::i32, [&](int64_t) { return rank(); });
  part->all_reduce(total, ReduceOp::sum);
  int expected_total = 0;
  for (int member = color; member < size(); member += 2) expected_total += member;
  EXPECT_EQ(total.data<int32_t>()[0], expected_total);

  OwnedTensor gathered(Shape{members}, DType::i32);
  part->all_gather(gathered, world_rank);
  for (int i = 0; i < members; ++i) EXPECT_EQ(gathered.data<int32_t>()[i], color + 2 * i);

  OwnedTensor from_root = make_tensor(Shape{1}, DType::f32, [&](int64_t) { return rank() * 1.5; });
  part->broadcast(from_root, 0);
  EXPECT_EQ(from_root.data<float>()[0], color * 1.5f);
}

TEST_F(Split, KeyOrdersTheNewRanks) {
  std::unique_ptr<Communicator> reversed = world_->split(0, -rank());
  EXPECT_EQ(reversed->size(), size());
  EXPECT_EQ(reversed->rank(), size() - 1 - rank());
  OwnedTensor mine = make_tensor(Shape{1}, DType::i64, [&](int64_t) { return rank(); });
  OwnedTensor gathered(Shape{size()}, DType::i64);
  reversed->all_gather(gathered, mine);
  for (int i = 0; i < size(); ++i) EXPECT_EQ(gathered.data<int64_t>()[i], size() - 1 - i);
}

// The odd part runs more operations than the even part: each communicator numbers its own, and the parts do
// not wait for each other.
TEST_F(Split, PartsNumberTheirOperationsIndependently) {
  int color = rank() % 2;
  std::unique_ptr<Communicator> part = world_->split(color, rank());
  EXPECT_EQ(world_->last_operation().name, "split");
  EXPECT_EQ(world_->last_operation().sequence, 1u);
  EXPECT_EQ(part->last_operation().sequence, 0u);
  int rounds = color == 0 ? 1 : 3;
  OwnedTensor tensor = make_tensor(Shape{2}, DType::f32, [](int64_t i) { return 1.0 + i; });
  for (int round = 0; round < rounds; ++round) part->all_reduce(tensor, ReduceOp::sum);
  EXPECT_EQ(part->last_operation().name, "all_reduce");
  EXPECT_EQ(part->last_operation().sequence, static_cast<uint64_t>(rounds));
  double growth = 1.0;
  for (int round = 0; round < rounds; ++round) growth *= part->size();
  EXPECT_EQ(tensor.data<float>()[1], 2.0 * growth);
  world_->barrier();
  EXPECT_EQ(world_->last_operation().sequence, 2u);
}

}  // namespace
}  // namespace hai
