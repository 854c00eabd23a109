// The MPI communicator in a process started alone (an MPI singleton, no mpirun): every collective is the
// identity on one rank. MPI can be initialised once per process, so one runtime serves the whole suite.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/check.h"
#include "tests/framework/comm/comm_test_util.h"

namespace hai {
namespace {

using testing::make_tensor;
using testing::values_of;

class SingleRank : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { runtime_ = std::make_unique<MpiRuntime>(); }
  static void TearDownTestSuite() { runtime_.reset(); }

  void SetUp() override { world_ = runtime_->world(); }
  void TearDown() override { world_.reset(); }

  inline static std::unique_ptr<MpiRuntime> runtime_;
  std::unique_ptr<Communicator> world_;
};

double ramp(int64_t i) { return 3.0 * static_cast<double>(i) - 5.0; }
double counting(int64_t i) { return static_cast<double>(i) + 1.0; }

TEST_F(SingleRank, WorldIsOneRankDuplicatedFromCommWorld) {
  EXPECT_EQ(world_->rank(), 0);
  EXPECT_EQ(world_->size(), 1);
  int comparison = MPI_UNEQUAL;
  HAI_MPI_CHECK(MPI_Comm_compare(static_cast<MpiCommunicator&>(*world_).handle(), MPI_COMM_WORLD, &comparison));
  EXPECT_EQ(comparison, MPI_CONGRUENT);
  int provided = -1;
  HAI_MPI_CHECK(MPI_Query_thread(&provided));
  EXPECT_EQ(runtime_->thread_level(), provided);
}

TEST_F(SingleRank, AllReduceIsTheIdentity) {
  for (DType dtype : testing::kReducibleDtypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      OwnedTensor tensor = make_tensor(Shape{2, 3}, dtype, ramp);
      world_->all_reduce(tensor, op);
      EXPECT_EQ(values_of(tensor), values_of(make_tensor(Shape{2, 3}, dtype, ramp)))
          << dtype_name(dtype) << " " << reduce_op_name(op);
    }
  }
}

TEST_F(SingleRank, ReduceScatterAndAllGatherCopy) {
  for (DType dtype : testing::kReducibleDtypes) {
    OwnedTensor in = make_tensor(Shape{5}, dtype, ramp), out(Shape{5}, dtype);
    world_->reduce_scatter(out, in, ReduceOp::sum);
    EXPECT_EQ(values_of(out), values_of(in)) << dtype_name(dtype);
  }
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor in = make_tensor(Shape{4}, dtype, counting), out(Shape{2, 2}, dtype);
    world_->all_gather(out, in);
    EXPECT_EQ(values_of(out), values_of(in)) << dtype_name(dtype);
    world_->all_gather(out, out);  // in place: the only chunk is this rank's
    EXPECT_EQ(values_of(out), values_of(in)) << dtype_name(dtype);
  }
}

TEST_F(SingleRank, BroadcastAllToAllVAndBarrier) {
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor tensor = make_tensor(Shape{3}, dtype, counting);
    world_->broadcast(tensor, 0);
    EXPECT_EQ(values_of(tensor), (std::vector<double>{1, 2, 3})) << dtype_name(dtype);

    OwnedTensor send = make_tensor(Shape{3, 2}, dtype, counting);
    OwnedTensor recv = make_tensor(Shape{4, 2}, dtype, [](int64_t) { return 99.0; });
    std::vector<int64_t> counts = {3};
    world_->all_to_all_v(send, counts, recv, counts);
    EXPECT_EQ(values_of(recv), (std::vector<double>{1, 2, 3, 4, 5, 6, 99, 99})) << dtype_name(dtype);
  }
  world_->barrier();
  EXPECT_EQ(world_->last_operation().name, "barrier");
}

TEST_F(SingleRank, SendsToItselfInsideAGroup) {
  OwnedTensor sent = make_tensor(Shape{1000}, DType::f32, ramp), received(Shape{1000}, DType::f32);
  world_->group_start();
  world_->recv(received, 0, 7);
  world_->send(sent, 0, 7);
  world_->group_end();
  EXPECT_EQ(values_of(received), values_of(sent));
}

TEST_F(SingleRank, SplitGivesAnotherSingleRank) {
  std::unique_ptr<Communicator> part = world_->split(5, 0);
  EXPECT_EQ(part->rank(), 0);
  EXPECT_EQ(part->size(), 1);
  OwnedTensor tensor = make_tensor(Shape{2}, DType::i64, counting);
  part->all_reduce(tensor, ReduceOp::sum);
  EXPECT_EQ(values_of(tensor), (std::vector<double>{1, 2}));
  EXPECT_EQ(part->last_operation().sequence, 1u);
  EXPECT_EQ(world_->last_operation().sequence, 1u);
}

TEST_F(SingleRank, RejectsDeviceTensors) {
  float fake_device_memory[4] = {};
  Tensor on_gpu(fake_device_memory, Shape{4}, DType::f32, Device::cuda(0));
  try {
    world_->all_reduce(on_gpu, ReduceOp::sum);
    FAIL() << "no throw";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("all_reduce: the MPI communicator moves host tensors only, got [4] fp32 cuda:0"),
              std::string::npos)
        << error.message();
  }
  EXPECT_THROW(world_->broadcast(on_gpu, 0), Error);
}

}  // namespace
}  // namespace hai
