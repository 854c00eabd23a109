// The backend-independent half of Communicator: argument checks, operation numbering and group nesting, on a
// fake backend of any size that records which hooks ran.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "framework/comm/communicator.h"
#include "tests/framework/comm/comm_test_util.h"

namespace hai {
namespace {

using testing::error_of;

class FakeCommunicator final : public Communicator {
 public:
  FakeCommunicator(int rank, int size) : rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  [[noreturn]] void abort(int code) override { std::exit(code); }

  std::vector<std::string> hooks_run;

 protected:
  void run_all_reduce(const Tensor&, ReduceOp) override { hooks_run.push_back("all_reduce"); }
  void run_reduce_scatter(const Tensor&, const Tensor&, ReduceOp) override {
    hooks_run.push_back("reduce_scatter");
  }
  void run_all_gather(const Tensor&, const Tensor&) override { hooks_run.push_back("all_gather"); }
  void run_broadcast(const Tensor&, int) override { hooks_run.push_back("broadcast"); }
  void run_all_to_all_v(const Tensor&, std::span<const int64_t>, const Tensor&,
                        std::span<const int64_t>) override {
    hooks_run.push_back("all_to_all_v");
  }
  void run_send(const Tensor&, int, int) override { hooks_run.push_back("send"); }
  void run_recv(const Tensor&, int, int) override { hooks_run.push_back("recv"); }
  void run_group_start() override { hooks_run.push_back("group_start"); }
  void run_group_end() override { hooks_run.push_back("group_end"); }
  void run_barrier() override { hooks_run.push_back("barrier"); }
  std::unique_ptr<Communicator> run_split(int, int) override {
    hooks_run.push_back("split");
    return std::make_unique<FakeCommunicator>(0, 1);
  }

 private:
  int rank_;
  int size_;
};

TEST(Communicator, NumbersEveryOperation) {
  FakeCommunicator communicator(1, 4);
  OwnedTensor vector(Shape{8}, DType::f32), chunk(Shape{2}, DType::f32), rows(Shape{4, 2}, DType::f32);
  std::vector<int64_t> counts = {1, 1, 1, 1};
  EXPECT_EQ(communicator.last_operation().sequence, 0u);
  EXPECT_EQ(communicator.last_operation().name, "");

  communicator.all_reduce(vector, ReduceOp::sum);
  EXPECT_EQ(communicator.last_operation().name, "all_reduce");
  EXPECT_EQ(communicator.last_operation().sequence, 1u);
  communicator.reduce_scatter(chunk, vector, ReduceOp::max);
  communicator.all_gather(vector, chunk);
  communicator.broadcast(vector, 3);
  OwnedTensor received(Shape{4, 2}, DType::f32);
  communicator.all_to_all_v(rows, counts, received, counts);
  communicator.barrier();
  EXPECT_EQ(communicator.last_operation().name, "barrier");
  EXPECT_EQ(communicator.last_operation().sequence, 6u);
  communicator.send(vector, 0, 0);
  communicator.recv(vector, 2, 0);
  communicator.split(0, 0);
  EXPECT_EQ(communicator.last_operation().name, "split");
  EXPECT_EQ(communicator.last_operation().sequence, 9u);
  EXPECT_EQ(communicator.hooks_run,
            (std::vector<std::string>{"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all_v",
                                      "barrier", "send", "recv", "split"}));
}

TEST(Communicator, RejectedOperationsAreNotNumbered) {
  FakeCommunicator communicator(0, 2);
  OwnedTensor bytes(Shape{4}, DType::u8);
  EXPECT_THROW(communicator.all_reduce(bytes, ReduceOp::sum), Error);
  EXPECT_EQ(communicator.last_operation().sequence, 0u);
  EXPECT_TRUE(communicator.hooks_run.empty());
}

TEST(Communicator, NestedGroupsReachTheBackendOnce) {
  FakeCommunicator communicator(0, 2);
  OwnedTensor tensor(Shape{3}, DType::f32);
  communicator.group_start();
  communicator.group_start();
  communicator.send(tensor, 1, 0);
  communicator.send(tensor, 0, 0);  // to itself: allowed inside a group
  communicator.group_end();
  EXPECT_TRUE(communicator.in_group());
  communicator.recv(tensor, 1, 0);
  communicator.group_end();
  EXPECT_FALSE(communicator.in_group());
  EXPECT_EQ(communicator.hooks_run,
            (std::vector<std::string>{"group_start", "send", "send", "recv", "group_end"}));
  EXPECT_EQ(communicator.last_operation().name, "group_end");
  EXPECT_EQ(communicator.last_operation().sequence, 7u);
  EXPECT_THROW(communicator.group_end(), Error);
}

TEST(Communicator, OnlySendAndRecvMayBeGrouped) {
  FakeCommunicator communicator(0, 2);
  OwnedTensor tensor(Shape{4}, DType::f32), half(Shape{2}, DType::f32);
  communicator.group_start();
  EXPECT_NE(error_of([&] { communicator.all_reduce(tensor, ReduceOp::sum); }).find("all_reduce inside group"),
            std::string::npos);
  EXPECT_THROW(communicator.reduce_scatter(half, tensor, ReduceOp::sum), Error);
  EXPECT_THROW(communicator.all_gather(tensor, half), Error);
  EXPECT_THROW(communicator.broadcast(tensor, 0), Error);
  EXPECT_THROW(communicator.barrier(), Error);
  EXPECT_THROW(communicator.split(0, 0), Error);
  communicator.group_end();
}

TEST(Communicator, ReductionsNeedReducibleDtypes) {
  FakeCommunicator communicator(0, 1);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64}) {
    OwnedTensor tensor(Shape{2}, dtype);
    EXPECT_NO_THROW(communicator.all_reduce(tensor, ReduceOp::min)) << dtype_name(dtype);
  }
  for (DType dtype : {DType::u8, DType::e4m3, DType::u16}) {
    OwnedTensor tensor(Shape{2}, dtype), out(Shape{2}, dtype);
    EXPECT_THROW(communicator.all_reduce(tensor, ReduceOp::sum), Error) << dtype_name(dtype);
    EXPECT_THROW(communicator.reduce_scatter(out, tensor, ReduceOp::sum), Error) << dtype_name(dtype);
  }
}

TEST(Communicator, ReduceScatterChecksSizesAndNamesThem) {
  FakeCommunicator communicator(0, 4);
  OwnedTensor in(Shape{7}, DType::f32), out(Shape{2}, DType::f32), ints(Shape{8}, DType::i32);
  std::string message = error_of([&] { communicator.reduce_scatter(out, in, ReduceOp::sum); });
  EXPECT_NE(message.find("reduce_scatter: in [7] fp32 cpu must hold 4 ranks x out [2] fp32 cpu = 8 elements"),
            std::string::npos)
      << message;
  EXPECT_NE(error_of([&] { communicator.reduce_scatter(out, ints, ReduceOp::sum); }).find("dtypes differ"),
            std::string::npos);
  // Rank 0 may reduce into its own chunk of `in` (elements 0 and 1), not into another's.
  OwnedTensor whole(Shape{8}, DType::f32);
  Tensor second_chunk = whole.tensor().slice(2, 4);
  EXPECT_NE(error_of([&] { communicator.reduce_scatter(second_chunk, whole, ReduceOp::sum); })
                .find("overlaps in [8] fp32 cpu other than as this rank's chunk"),
            std::string::npos);
  Tensor straddling = whole.tensor().slice(1, 3);
  EXPECT_NE(error_of([&] { communicator.reduce_scatter(straddling, whole, ReduceOp::sum); }).find("overlaps"),
            std::string::npos);
}

TEST(Communicator, AllGatherChecksSizesAndAllowsOnlyItsOwnChunkInPlace) {
  FakeCommunicator communicator(2, 4);
  OwnedTensor out(Shape{4, 3}, DType::f32), in(Shape{2}, DType::f32);
  std::string message = error_of([&] { communicator.all_gather(out, in); });
  EXPECT_NE(message.find("all_gather: out [4, 3] fp32 cpu must hold 4 ranks x in [2] fp32 cpu = 8"),
            std::string::npos)
      << message;
  EXPECT_NO_THROW(communicator.all_gather(out, out.tensor().slice(2, 3)));
  EXPECT_THROW(communicator.all_gather(out, out.tensor().slice(1, 2)), Error);
}

TEST(Communicator, AllToAllVChecksCountsAndRows) {
  FakeCommunicator communicator(0, 3);
  OwnedTensor send(Shape{5, 2}, DType::f32), recv(Shape{4, 2}, DType::f32);
  OwnedTensor wide(Shape{4, 3}, DType::f32), ints(Shape{4, 2}, DType::i32);
  std::vector<int64_t> fits = {2, 0, 2}, two_entries = {2, 2}, negative = {3, -1, 0}, too_many = {2, 2, 1};
  EXPECT_NO_THROW(communicator.all_to_all_v(send, fits, recv, fits));
  EXPECT_NE(error_of([&] { communicator.all_to_all_v(send, two_entries, recv, fits); })
                .find("send_counts has 2 entries, expected one per rank (3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { communicator.all_to_all_v(send, negative, recv, fits); }).find("negative send count"),
            std::string::npos);
  std::string message = error_of([&] { communicator.all_to_all_v(send, fits, recv, too_many); });
  EXPECT_NE(message.find("recv_counts sum to 5 rows, but recv tensor [4, 2] fp32 cpu has 4"), std::string::npos)
      << message;
  EXPECT_NE(error_of([&] { communicator.all_to_all_v(send, fits, wide, fits); }).find("rows of send"),
            std::string::npos);
  EXPECT_THROW(communicator.all_to_all_v(send, fits, ints, fits), Error);
  EXPECT_THROW(communicator.all_to_all_v(send, fits, send, fits), Error);  // overlapping
}

TEST(Communicator, ChecksPeersRootsTagsAndColors) {
  FakeCommunicator communicator(1, 2);
  OwnedTensor tensor(Shape{2}, DType::f32);
  EXPECT_NE(error_of([&] { communicator.broadcast(tensor, 2); }).find("broadcast: root 2 outside"),
            std::string::npos);
  EXPECT_THROW(communicator.broadcast(tensor, -1), Error);
  EXPECT_NE(error_of([&] { communicator.send(tensor, 2, 0); }).find("send: peer 2 outside"), std::string::npos);
  EXPECT_THROW(communicator.recv(tensor, -1, 0), Error);
  EXPECT_NE(error_of([&] { communicator.send(tensor, 1, 0); }).find("to itself outside a group"),
            std::string::npos);
  EXPECT_NE(error_of([&] { communicator.recv(tensor, 0, -3); }).find("recv: negative tag -3"), std::string::npos);
  EXPECT_THROW(communicator.split(-1, 0), Error);
  EXPECT_TRUE(communicator.hooks_run.empty());
}

TEST(Communicator, ReduceOpNames) {
  EXPECT_EQ(reduce_op_name(ReduceOp::sum), "sum");
  EXPECT_EQ(reduce_op_name(ReduceOp::max), "max");
  EXPECT_EQ(reduce_op_name(ReduceOp::min), "min");
}

}  // namespace
}  // namespace hai
