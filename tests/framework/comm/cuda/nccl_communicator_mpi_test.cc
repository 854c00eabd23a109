// The NCCL communicator against the MPI communicator: every rank runs each operation on the same data twice,
// on host tensors through MpiCommunicator and on device tensors through NcclCommunicator, and the results must
// be bitwise equal (the values are small integers, exact in every dtype, except where a test says otherwise).
// Each rank needs a GPU of its own (NCCL refuses two ranks of one communicator on one GPU): with fewer GPUs than
// ranks (CI has none) the tests skip.

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "framework/comm/cuda/nccl_communicator.h"
#include "framework/device/elementwise.h"
#include "tests/framework/comm/comm_test_util.h"
#include "tests/framework/comm/cuda/gpu_per_rank_test.h"

namespace hai {
namespace {

using testing::make_tensor;
using testing::values_of;

class NcclAgainstMpi : public testing::GpuPerRankTest {
 protected:
  void SetUp() override {
    GpuPerRankTest::SetUp();
    if (IsSkipped()) return;
    nccl_ = std::make_unique<NcclCommunicator>(duplicate_of_world(), device_, NcclOptions{});
  }

  // The device tensor's values once the NCCL communicator's queued work is done.
  std::vector<double> values_after_nccl(const Tensor& device_tensor) const {
    nccl_->synchronize();
    return values_of(host_copy(device_tensor));
  }

  std::unique_ptr<NcclCommunicator> nccl_;
};

// Small signed integers that differ between ranks and elements (u8: 0..250).
double mixed_value(int rank, int64_t i, DType dtype) {
  int64_t value = (i * 7 + rank * 13) % 23;
  return dtype == DType::u8 ? static_cast<double>((i * 7 + rank * 13) % 251) : static_cast<double>(value - 11);
}

TEST_F(NcclAgainstMpi, AllReduceMatchesMpiForEveryDtypeAndOperation) {
  for (DType dtype : testing::kReducibleDtypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      OwnedTensor host = make_tensor(Shape{3, 37}, dtype, [&](int64_t i) { return mixed_value(rank(), i, dtype); });
      OwnedTensor device = on_device(host);
      mpi_->all_reduce(host, op);
      nccl_->all_reduce(device, op);
      EXPECT_EQ(values_after_nccl(device), values_of(host)) << dtype_name(dtype) << " " << reduce_op_name(op);
    }
  }
  EXPECT_EQ(nccl_->last_operation().name, "all_reduce");
  EXPECT_EQ(nccl_->last_operation().sequence, 15u);
}

// Rank 0 holds a value where the half-precision spacing is 2, the others 0.75 each: rounding after every addition
// would lose them, the contract's single rounding of the fp32 sum keeps their total (both backends alike).
TEST_F(NcclAgainstMpi, HalfPrecisionSumsRoundOnceLikeMpi) {
  struct Case {
    DType dtype;
    double large;
  };
  for (Case test : {Case{DType::bf16, 256.0}, Case{DType::f16, 2048.0}}) {
    OwnedTensor host = make_tensor(Shape{64}, test.dtype, [&](int64_t) { return rank() == 0 ? test.large : 0.75; });
    OwnedTensor device = on_device(host);
    mpi_->all_reduce(host, ReduceOp::sum);
    nccl_->all_reduce(device, ReduceOp::sum);
    float exact = static_cast<float>(test.large + 0.75 * (size() - 1));
    EXPECT_EQ(values_after_nccl(device), std::vector<double>(64, round_to_dtype(exact, test.dtype)))
        << dtype_name(test.dtype);
    EXPECT_EQ(values_after_nccl(device), values_of(host)) << dtype_name(test.dtype);
  }
}

TEST_F(NcclAgainstMpi, ReduceScatterMatchesMpi) {
  constexpr int64_t kChunk = 29;
  for (DType dtype : testing::kReducibleDtypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      OwnedTensor host_in =
          make_tensor(Shape{size() * kChunk}, dtype, [&](int64_t i) { return mixed_value(rank(), i, dtype); });
      OwnedTensor host_out(Shape{kChunk}, dtype);
      OwnedTensor device_in = on_device(host_in);
      OwnedTensor device_out = on_device(host_out);
      mpi_->reduce_scatter(host_out, host_in, op);
      nccl_->reduce_scatter(device_out, device_in, op);
      EXPECT_EQ(values_after_nccl(device_out), values_of(host_out)) << dtype_name(dtype) << " " << reduce_op_name(op);
    }
  }
}

TEST_F(NcclAgainstMpi, AllGatherMatchesMpiApartAndInPlace) {
  constexpr int64_t kChunk = 19;
  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor host_in = make_tensor(Shape{kChunk}, dtype, [&](int64_t i) { return mixed_value(rank(), i, dtype); });
    OwnedTensor host_out(Shape{size(), kChunk}, dtype);
    OwnedTensor device_in = on_device(host_in);
    OwnedTensor device_out = on_device(host_out);
    mpi_->all_gather(host_out, host_in);
    nccl_->all_gather(device_out, device_in);
    EXPECT_EQ(values_after_nccl(device_out), values_of(host_out)) << dtype_name(dtype);

    OwnedTensor in_place(Shape{size(), kChunk}, dtype, device_);  // [size, chunk]
    zero_fill(in_place);
    Tensor own_chunk = in_place.tensor().slice(rank(), rank() + 1).reshape(Shape{kChunk});
    copy_tensor(own_chunk, host_in);
    nccl_->all_gather(in_place, own_chunk);
    EXPECT_EQ(values_after_nccl(in_place), values_of(host_out)) << dtype_name(dtype) << " in place";
  }
}

TEST_F(NcclAgainstMpi, BroadcastMatchesMpiFromEveryRoot) {
  for (DType dtype : testing::kAllDtypes) {
    for (int root = 0; root < size(); ++root) {
      OwnedTensor host = make_tensor(Shape{4, 9}, dtype, [&](int64_t i) { return mixed_value(rank(), i, dtype); });
      OwnedTensor device = on_device(host);
      mpi_->broadcast(host, root);
      nccl_->broadcast(device, root);
      EXPECT_EQ(values_after_nccl(device), values_of(host)) << dtype_name(dtype) << " root " << root;
    }
  }
}

// Rank r sends (r + 2p) % 3 rows to rank p (zeros included, itself included); rows beyond the counts stay as
// they were (-1).
TEST_F(NcclAgainstMpi, AllToAllVMatchesMpi) {
  constexpr int64_t kRowWidth = 5;
  std::vector<int64_t> send_counts(static_cast<size_t>(size()));
  for (int peer = 0; peer < size(); ++peer) send_counts[static_cast<size_t>(peer)] = (rank() + 2 * peer) % 3;
  OwnedTensor send_counts_tensor(Shape{size(), 1}, DType::i64);  // [size, 1]
  std::copy(send_counts.begin(), send_counts.end(), send_counts_tensor.data<int64_t>());
  OwnedTensor recv_counts_tensor(Shape{size(), 1}, DType::i64);  // [size, 1]
  std::vector<int64_t> ones(static_cast<size_t>(size()), 1);
  mpi_->all_to_all_v(send_counts_tensor, ones, recv_counts_tensor, ones);
  std::vector<int64_t> recv_counts(recv_counts_tensor.data<int64_t>(), recv_counts_tensor.data<int64_t>() + size());
  int64_t send_rows = std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0});
  int64_t recv_rows = std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0});

  for (DType dtype : testing::kAllDtypes) {
    OwnedTensor host_send = make_tensor(Shape{send_rows + 1, kRowWidth}, dtype,
                                        [&](int64_t i) { return mixed_value(rank(), i, dtype); });
    OwnedTensor host_recv =
        make_tensor(Shape{recv_rows + 2, kRowWidth}, dtype, [&](int64_t) { return dtype == DType::u8 ? 255 : -1; });
    OwnedTensor device_send = on_device(host_send);
    OwnedTensor device_recv = on_device(host_recv);
    mpi_->all_to_all_v(host_send, send_counts, host_recv, recv_counts);
    nccl_->all_to_all_v(device_send, send_counts, device_recv, recv_counts);
    EXPECT_EQ(values_after_nccl(device_recv), values_of(host_recv)) << dtype_name(dtype);
  }
}

// A grouped ring (send to the next rank, receive from the previous one), then blocking pairs: even ranks send
// first, odd ranks receive first. Both backends receive the same values.
TEST_F(NcclAgainstMpi, SendAndRecvMatchMpiGroupedAndInPairs) {
  int next = (rank() + 1) % size();
  int previous = (rank() + size() - 1) % size();
  for (Communicator* communicator : {mpi_.get(), static_cast<Communicator*>(nccl_.get())}) {
    bool on_gpu = communicator == nccl_.get();
    OwnedTensor host_out =
        make_tensor(Shape{33}, DType::bf16, [&](int64_t i) { return mixed_value(rank(), i, DType::bf16); });
    OwnedTensor host_in(Shape{33}, DType::bf16);
    OwnedTensor out = on_gpu ? on_device(host_out) : std::move(host_out);
    OwnedTensor in = on_gpu ? on_device(host_in) : std::move(host_in);
    communicator->group_start();
    communicator->send(out, next, 3);
    communicator->recv(in, previous, 3);
    communicator->group_end();
    std::vector<double> ring = on_gpu ? values_after_nccl(in) : values_of(in);
    std::vector<double> expected(33);
    for (int64_t i = 0; i < 33; ++i) expected[static_cast<size_t>(i)] = mixed_value(previous, i, DType::bf16);
    EXPECT_EQ(ring, expected) << (on_gpu ? "nccl" : "mpi") << " ring";

    if (size() % 2 != 0) continue;
    int partner = rank() % 2 == 0 ? rank() + 1 : rank() - 1;
    if (rank() % 2 == 0) {
      communicator->send(out, partner, 4);
      communicator->recv(in, partner, 4);
    } else {
      communicator->recv(in, partner, 4);
      communicator->send(out, partner, 4);
    }
    std::vector<double> paired = on_gpu ? values_after_nccl(in) : values_of(in);
    for (int64_t i = 0; i < 33; ++i) expected[static_cast<size_t>(i)] = mixed_value(partner, i, DType::bf16);
    EXPECT_EQ(paired, expected) << (on_gpu ? "nccl" : "mpi") << " pairs";
  }
}

// Even and odd ranks form two groups, ranked in reverse (key -rank); each group's NCCL communicator reduces and
// gathers like the MPI one split the same way.
TEST_F(NcclAgainstMpi, SplitGivesEachGroupItsOwnCommunicator) {
  std::unique_ptr<Communicator> mpi_part = mpi_->split(rank() % 2, -rank());
  std::unique_ptr<Communicator> nccl_part = nccl_->split(rank() % 2, -rank());
  EXPECT_EQ(nccl_part->rank(), mpi_part->rank());
  EXPECT_EQ(nccl_part->size(), mpi_part->size());
  OwnedTensor host = make_tensor(Shape{8}, DType::f32, [&](int64_t i) { return rank() * 100.0 + i; });
  OwnedTensor device = on_device(host);
  OwnedTensor host_gathered(Shape{mpi_part->size(), 8}, DType::f32);
  OwnedTensor device_gathered = on_device(host_gathered);
  mpi_part->all_gather(host_gathered, host);
  nccl_part->all_gather(device_gathered, device);
  mpi_part->all_reduce(host, ReduceOp::sum);
  nccl_part->all_reduce(device, ReduceOp::sum);
  EXPECT_EQ(values_after_nccl(device_gathered), values_of(host_gathered));
  EXPECT_EQ(values_after_nccl(device), values_of(host));
  nccl_part->barrier();
  EXPECT_EQ(nccl_part->last_operation().name, "barrier");
  EXPECT_EQ(nccl_part->last_operation().sequence, 3u);
}

TEST_F(NcclAgainstMpi, QueuesOnTheStreamItIsGiven) {
  cudaStream_t stream = nullptr;
  HAI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  OwnedTensor host =
      make_tensor(Shape{1000}, DType::f32, [&](int64_t i) { return mixed_value(rank(), i, DType::f32); });
  OwnedTensor device = on_device(host);
  nccl_->set_stream(Stream{stream});
  nccl_->all_reduce(device, ReduceOp::sum);
  mpi_->all_reduce(host, ReduceOp::sum);
  EXPECT_EQ(values_after_nccl(device), values_of(host));
  nccl_->set_stream(Stream{});
  HAI_CUDA_CHECK(cudaStreamDestroy(stream));
}

// A side-stream duplicate's collective runs after the compute stream's work queued before it, and compute work
// queued after join_side_stream() sees its result, with no host wait in between (ZeRO-1's overlapped reductions).
TEST_F(NcclAgainstMpi, SideStreamDuplicateRunsAfterEarlierComputeWorkAndJoinsBack) {
  std::unique_ptr<Communicator> side = nccl_->side_stream_duplicate();
  const Shape shape{1 << 22};  // [4M] fp32: long enough kernels for a misordering to show
  OwnedTensor host = make_tensor(shape, DType::f32, [&](int64_t i) { return mixed_value(rank(), i, DType::f32); });
  OwnedTensor addend = on_device(host);
  OwnedTensor device = on_device(make_tensor(shape, DType::f32, [](int64_t) { return 0.0; }));
  for (int i = 0; i < 20; ++i) scale_tensor(device, 1.0f);  // compute-stream work queued before the addition
  add_scaled(device, addend);                                // device = this rank's values, on the compute stream
  side->all_reduce(device, ReduceOp::sum);
  side->join_side_stream();
  scale_tensor(device, 2.0f);  // after the join: doubles the sum
  mpi_->all_reduce(host, ReduceOp::sum);
  scale_tensor(host, 2.0f);
  EXPECT_EQ(values_after_nccl(device), values_of(host));
  EXPECT_EQ(side->last_operation().name, "all_reduce");
}

// A mark of the side stream, joined later, orders the compute stream after the collective queued before the mark
// (ZeRO-1's all-gathers left running under the next forward); a second mark is reused for the next collective.
TEST_F(NcclAgainstMpi, JoiningASideStreamMarkSeesTheCollectiveBeforeIt) {
  std::unique_ptr<Communicator> side = nccl_->side_stream_duplicate();
  const Shape shape{1 << 22};  // [4M] fp32
  OwnedTensor host = make_tensor(shape, DType::f32, [&](int64_t i) { return mixed_value(rank(), i, DType::f32); });
  OwnedTensor device = on_device(host);
  OwnedTensor other = on_device(host);
  std::unique_ptr<SideStreamMark> mark;
  for (int round = 0; round < 2; ++round) {  // the second round re-records the same mark
    side->all_reduce(device, ReduceOp::sum);
    side->mark_side_stream(mark);
    ASSERT_NE(mark, nullptr);
    side->all_reduce(other, ReduceOp::sum);  // after the mark: not waited for by the join
    side->join_side_stream_mark(mark.get());
    scale_tensor(device, 0.5f);  // after the join: halves the sum
    mpi_->all_reduce(host, ReduceOp::sum);
    scale_tensor(host, 0.5f);
    EXPECT_EQ(values_after_nccl(device), values_of(host)) << round;
    side->join_side_stream();
    copy_tensor(other, device);
  }
}

TEST_F(NcclAgainstMpi, EveryRankHasAGpuOfItsOwn) {
  OwnedTensor mine(Shape{1}, DType::i32);
  mine.data<int32_t>()[0] = device_.index;
  OwnedTensor every(Shape{size()}, DType::i32);
  mpi_->all_gather(every, mine);
  std::vector<int32_t> indices(every.data<int32_t>(), every.data<int32_t>() + size());
  std::sort(indices.begin(), indices.end());
  EXPECT_EQ(std::adjacent_find(indices.begin(), indices.end()), indices.end());
}

TEST_F(NcclAgainstMpi, RefusesHostTensors) {
  OwnedTensor host(Shape{4}, DType::f32);
  try {
    nccl_->all_reduce(host, ReduceOp::sum);
    FAIL() << "a host tensor was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("moves tensors on that GPU only"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace hai
