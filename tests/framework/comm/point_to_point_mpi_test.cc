// send and recv across ranks: blocking pairs, rings and halo exchanges batched in groups (which would deadlock
// as blocking calls), posted sends received in another order, and receives of the wrong size.

#include <string>

#include "framework/comm/communicator.h"
#include "framework/core/error.h"
#include "tests/framework/comm/comm_test_util.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using testing::error_of;
using testing::make_tensor;

using PointToPoint = testing::World;

TEST_F(PointToPoint, BlockingPairsInBothDirections) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks";
  bool even = rank() % 2 == 0;
  int partner = even ? rank() + 1 : rank() - 1;
  if (partner >= size()) GTEST_SKIP() << "the last of an odd number of ranks has no partner";
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor mine = make_tensor(Shape{5}, dtype, [&](int64_t i) { return (rank() + 1) * 10.0 + i; });
    OwnedTensor theirs(Shape{5}, dtype);
    if (even) {
      world_->send(mine, partner, 0);
      world_->recv(theirs, partner, 0);
    } else {
      world_->recv(theirs, partner, 0);
      world_->send(mine, partner, 0);
    }
    for (int64_t i = 0; i < 5; ++i) {
      EXPECT_EQ(testing::value_at(theirs, i), (partner + 1) * 10.0 + i) << dtype_name(dtype);
    }
  }
  EXPECT_EQ(world_->last_operation().sequence, 12u);
}

// Every rank sends before it receives, with messages far beyond any eager limit: as blocking calls this ring
// would deadlock; in a group it completes.
TEST_F(PointToPoint, RingInsideAGroupCompletes) {
  constexpr int64_t kCount = int64_t{1} << 18;
  OwnedTensor mine = make_tensor(Shape{kCount}, DType::f32, [&](int64_t i) { return rank() * 1e6 + i; });
  OwnedTensor from_previous(Shape{kCount}, DType::f32);
  world_->group_start();
  world_->send(mine, next(), 0);
  world_->recv(from_previous, previous(), 0);
  world_->group_end();
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(from_previous.data<float>()[i], previous() * 1e6 + i) << "element " << i;
  }
  EXPECT_EQ(world_->last_operation().name, "group_end");
  EXPECT_EQ(world_->last_operation().sequence, 4u);
}

// Posted sends do not wait for their receivers: every rank posts two large messages to the next rank, then
// receives the previous rank's in the other order (by tag), and only then waits for its own sends.
TEST_F(PointToPoint, PostedSendsAreReceivedInAnyOrder) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr int64_t kCount = int64_t{1} << 18;
  OwnedTensor first = make_tensor(Shape{kCount}, DType::f32, [&](int64_t i) { return rank() * 1e6 + i; });
  OwnedTensor second = make_tensor(Shape{kCount}, DType::f32, [&](int64_t i) { return rank() * 1e6 - i; });
  world_->post_send(first, next(), 1);
  world_->post_send(second, next(), 2);
  OwnedTensor second_received(Shape{kCount}, DType::f32), first_received(Shape{kCount}, DType::f32);
  world_->recv(second_received, previous(), 2);
  world_->recv(first_received, previous(), 1);
  world_->wait_posted_sends();
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(first_received.data<float>()[i], previous() * 1e6 + i) << "element " << i;
    ASSERT_EQ(second_received.data<float>()[i], previous() * 1e6 - i) << "element " << i;
  }
  EXPECT_EQ(world_->last_operation().name, "wait_posted_sends");
  EXPECT_EQ(world_->last_operation().sequence, 5u);
}

// A posted send is tested without waiting: a large one (past MPI's eager size) is not complete before its receiver
// asks for it, and is once the receiver has it (a barrier after the receive orders the two); a ticket seen complete
// stays complete, and a ticket never given is an error.
TEST_F(PointToPoint, PostedSendIsDoneOnceReceived) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr int64_t kCount = int64_t{1} << 20;
  OwnedTensor sent = make_tensor(Shape{kCount}, DType::f32, [&](int64_t i) { return rank() + i; });
  int64_t ticket = world_->post_send(sent, next(), 3);
  EXPECT_FALSE(world_->posted_send_done(ticket));
  world_->barrier();
  OwnedTensor received(Shape{kCount}, DType::f32);
  world_->recv(received, previous(), 3);
  world_->barrier();
  while (!world_->posted_send_done(ticket)) {
  }
  EXPECT_TRUE(world_->posted_send_done(ticket));
  EXPECT_THROW(world_->posted_send_done(ticket + 1), Error);
  world_->wait_posted_sends();
  EXPECT_EQ(received.data<float>()[kCount - 1], previous() + kCount - 1);
}

// Both neighbours at once (on two ranks they are the same rank): tags tell the two messages apart.
TEST_F(PointToPoint, HaloExchangeWithTags) {
  constexpr int kToNext = 1, kToPrevious = 2;
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor to_next = make_tensor(Shape{4}, dtype, [&](int64_t i) { return rank() * 10.0 + i; });
    OwnedTensor to_previous = make_tensor(Shape{4}, dtype, [&](int64_t i) { return rank() * 10.0 + 5 + i; });
    OwnedTensor from_previous(Shape{4}, dtype), from_next(Shape{4}, dtype);
    world_->group_start();
    world_->recv(from_next, next(), kToPrevious);
    world_->send(to_next, next(), kToNext);
    world_->send(to_previous, previous(), kToPrevious);
    world_->recv(from_previous, previous(), kToNext);
    world_->group_end();
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(testing::value_at(from_previous, i), previous() * 10.0 + i) << dtype_name(dtype);
      EXPECT_EQ(testing::value_at(from_next, i), next() * 10.0 + 5 + i) << dtype_name(dtype);
    }
  }
}

TEST_F(PointToPoint, NestedGroupsCompleteAtTheOutermostEnd) {
  OwnedTensor mine = make_tensor(Shape{3}, DType::i32, [&](int64_t i) { return rank() * 3.0 + i; });
  OwnedTensor received(Shape{3}, DType::i32);
  world_->group_start();
  world_->group_start();
  world_->send(mine, next(), 5);
  world_->group_end();
  world_->recv(received, previous(), 5);
  world_->group_end();
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(received.data<int32_t>()[i], previous() * 3 + i);
}

TEST_F(PointToPoint, ReceivesOfTheWrongSizeFail) {
  if (size() < 2) GTEST_SKIP() << "needs two ranks";
  OwnedTensor four(Shape{4}, DType::f32), three(Shape{3}, DType::f32), two(Shape{2}, DType::f32);
  if (rank() == 0) {
    world_->send(four, 1, 3);  // larger than the receiver's tensor
    world_->send(two, 1, 4);   // smaller
    world_->group_start();
    world_->send(two, 1, 5);
    world_->group_end();
  } else if (rank() == 1) {
    EXPECT_NE(error_of([&] { world_->recv(three, 0, 3); }).find("MPI error in MPI_Recv"), std::string::npos);
    std::string message = error_of([&] { world_->recv(three, 0, 4); });
    EXPECT_NE(message.find("recv from rank 0 with tag 4: expected 3 elements, 2 arrived"), std::string::npos)
        << message;
    world_->group_start();
    world_->recv(three, 0, 5);
    EXPECT_NE(error_of([&] { world_->group_end(); }).find("expected 3 elements, 2 arrived"), std::string::npos);
    EXPECT_FALSE(world_->in_group());
  }
  world_->barrier();
}

}  // namespace
}  // namespace hai
