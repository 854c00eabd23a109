// HostDeviceCommunicator against the MPI communicator: every rank runs each operation on the same data twice, on
// host tensors through MpiCommunicator and on device tensors through the host-device communicator (NCCL for the
// collectives, host staging + MPI for point to point), and the results must be bitwise equal (small integers,
// exact in every dtype). Host tensors given to the host-device communicator go over MPI. Mixing host and device
// tensors in one operation is an error naming it. Each rank needs a GPU of its own: with fewer GPUs than ranks
// (CI has none) the tests skip.

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "framework/comm/cuda/host_device_communicator.h"
#include "framework/device/elementwise.h"
#include "tests/framework/comm/comm_test_util.h"
#include "tests/framework/comm/cuda/gpu_per_rank_test.h"

namespace hai {
namespace {

using testing::make_tensor;
using testing::values_of;

class HostDeviceAgainstMpi : public testing::GpuPerRankTest {
 protected:
  void SetUp() override {
    GpuPerRankTest::SetUp();
    if (IsSkipped()) return;
    both_ = std::make_unique<HostDeviceCommunicator>(
        runtime_.world(), std::make_unique<NcclCommunicator>(duplicate_of_world(), device_, NcclOptions{}));
  }

  int next() const { return (rank() + 1) % size(); }
  int previous() const { return (rank() + size() - 1) % size(); }

  // NOTE: host_copy is a synchronous copy on the default stream, where the NCCL operations queue.
  static std::vector<double> device_values(const Tensor& device_tensor) { return values_of(host_copy(device_tensor)); }

  std::unique_ptr<HostDeviceCommunicator> both_;
};

// Small signed integers that differ between ranks and elements.
double mixed_value(int rank, int64_t i) { return static_cast<double>((i * 7 + rank * 13) % 23 - 11); }

TEST_F(HostDeviceAgainstMpi, AllReduceOfDeviceTensorsMatchesMpi) {
  for (DType dtype : testing::kReducibleDtypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      OwnedTensor host = make_tensor(Shape{3, 37}, dtype, [&](int64_t i) { return mixed_value(rank(), i); });
      OwnedTensor device = on_device(host);  // [3, 37]
      mpi_->all_reduce(host, op);
      both_->all_reduce(device, op);
      EXPECT_EQ(device_values(device), values_of(host)) << dtype_name(dtype) << " " << reduce_op_name(op);
    }
  }
}

TEST_F(HostDeviceAgainstMpi, HostTensorsGoOverMpi) {
  OwnedTensor expected = make_tensor(Shape{41}, DType::f32, [&](int64_t i) { return mixed_value(rank(), i); });
  OwnedTensor host = make_tensor(Shape{41}, DType::f32, [&](int64_t i) { return mixed_value(rank(), i); });
  mpi_->all_reduce(expected, ReduceOp::sum);
  both_->all_reduce(host, ReduceOp::sum);
  EXPECT_EQ(values_of(host), values_of(expected));
  OwnedTensor gathered(Shape{size(), 2}, DType::i64);  // [ranks, 2]
  OwnedTensor mine = make_tensor(Shape{2}, DType::i64, [&](int64_t i) { return rank() * 10 + i; });
  both_->all_gather(gathered, mine);
  for (int peer = 0; peer < size(); ++peer) {
    EXPECT_EQ(gathered.data<int64_t>()[peer * 2], peer * 10);
    EXPECT_EQ(gathered.data<int64_t>()[peer * 2 + 1], peer * 10 + 1);
  }
}

TEST_F(HostDeviceAgainstMpi, ReduceScatterAndAllGatherOfDeviceTensorsMatchMpi) {
  const int64_t chunk = 29;
  OwnedTensor host_in = make_tensor(Shape{size() * chunk}, DType::bf16, [&](int64_t i) { return mixed_value(rank(), i); });
  OwnedTensor device_in = on_device(host_in);                            // [size * chunk]
  OwnedTensor host_out(Shape{chunk}, DType::bf16);                       // [chunk]
  OwnedTensor device_out(Shape{chunk}, DType::bf16, device_);            // [chunk]
  mpi_->reduce_scatter(host_out, host_in, ReduceOp::sum);
  both_->reduce_scatter(device_out, device_in, ReduceOp::sum);
  EXPECT_EQ(device_values(device_out), values_of(host_out));

  OwnedTensor host_all(Shape{size(), chunk}, DType::bf16);               // [size, chunk]
  OwnedTensor device_all(Shape{size(), chunk}, DType::bf16, device_);    // [size, chunk]
  mpi_->all_gather(host_all, host_out);
  both_->all_gather(device_all, device_out);
  EXPECT_EQ(device_values(device_all), values_of(host_all));
}

TEST_F(HostDeviceAgainstMpi, BroadcastOfDeviceTensorsMatchesMpi) {
  for (int root = 0; root < size(); ++root) {
    OwnedTensor host = make_tensor(Shape{17}, DType::i32, [&](int64_t i) { return mixed_value(rank(), i); });
    OwnedTensor device = on_device(host);  // [17]
    mpi_->broadcast(host, root);
    both_->broadcast(device, root);
    EXPECT_EQ(device_values(device), values_of(host)) << "root " << root;
  }
}

// Rank r sends (r + 2p) % 3 rows of 5 to rank p (zeros and itself included).
TEST_F(HostDeviceAgainstMpi, AllToAllVOfDeviceTensorsMatchesMpi) {
  std::vector<int64_t> send_counts(static_cast<size_t>(size())), recv_counts(static_cast<size_t>(size()));
  for (int peer = 0; peer < size(); ++peer) {
    send_counts[static_cast<size_t>(peer)] = (rank() + 2 * peer) % 3;
    recv_counts[static_cast<size_t>(peer)] = (peer + 2 * rank()) % 3;
  }
  int64_t send_rows = std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0});
  int64_t recv_rows = std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0});
  OwnedTensor host_send =
      make_tensor(Shape{send_rows, 5}, DType::f32, [&](int64_t i) { return mixed_value(rank(), i); });
  OwnedTensor device_send = on_device(host_send);                        // [send rows, 5]
  OwnedTensor host_recv(Shape{recv_rows, 5}, DType::f32);                // [recv rows, 5]
  OwnedTensor device_recv(Shape{recv_rows, 5}, DType::f32, device_);     // [recv rows, 5]
  mpi_->all_to_all_v(host_send, send_counts, host_recv, recv_counts);
  both_->all_to_all_v(device_send, send_counts, device_recv, recv_counts);
  EXPECT_EQ(device_values(device_recv), values_of(host_recv));
}

TEST_F(HostDeviceAgainstMpi, MixingHostAndDeviceTensorsIsAnErrorNamingTheOperation) {
  OwnedTensor host(Shape{size() * 4}, DType::f32);    // [size * 4]
  OwnedTensor device(Shape{4}, DType::f32, device_);  // [4]
  try {
    both_->reduce_scatter(device, host, ReduceOp::sum);
    ADD_FAILURE() << "reduce_scatter of a device out and a host in did not throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("reduce_scatter"), std::string::npos) << error.what();
  }
  try {
    both_->all_gather(host, device);
    ADD_FAILURE() << "all_gather of a host out and a device in did not throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("all_gather"), std::string::npos) << error.what();
  }
}

// Each rank posts two device tensors to the next rank (tags 0, then 1) and receives the previous rank's in the
// other order (tag 1 first): the pipeline engine's pattern, which NCCL's in-order matching could not serve.
TEST_F(HostDeviceAgainstMpi, PostedDeviceSendsAreReceivedInAnotherOrder) {
  OwnedTensor first = on_device(make_tensor(Shape{3, 8}, DType::f32, [&](int64_t i) { return rank() * 100 + i; }));
  OwnedTensor second = on_device(make_tensor(Shape{3, 8}, DType::f32, [&](int64_t i) { return rank() * 100 - i; }));
  both_->post_send(first, next(), 0);
  both_->post_send(second, next(), 1);
  OwnedTensor received_second(Shape{3, 8}, DType::f32, device_);  // [3, 8]
  OwnedTensor received_first(Shape{3, 8}, DType::f32, device_);   // [3, 8]
  both_->recv(received_second, previous(), 1);
  both_->recv(received_first, previous(), 0);
  both_->wait_posted_sends();
  std::vector<double> got_first = device_values(received_first), got_second = device_values(received_second);
  for (int64_t i = 0; i < 24; ++i) {
    EXPECT_EQ(got_first[static_cast<size_t>(i)], previous() * 100 + i);
    EXPECT_EQ(got_second[static_cast<size_t>(i)], previous() * 100 - i);
  }
}

// A ring inside a group: device tensors to the next rank and from the previous one, received at group_end().
TEST_F(HostDeviceAgainstMpi, GroupedDeviceSendAndRecvFormARing) {
  OwnedTensor mine = on_device(make_tensor(Shape{6}, DType::bf16, [&](int64_t i) { return rank() * 10 + i; }));
  OwnedTensor received(Shape{6}, DType::bf16, device_);  // [6]
  both_->group_start();
  both_->send(mine, next(), 3);
  both_->recv(received, previous(), 3);
  both_->group_end();
  std::vector<double> got = device_values(received);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], previous() * 10 + i);
}

// Split in reverse rank order: each part is a host-device communicator whose ranks agree on both backends.
TEST_F(HostDeviceAgainstMpi, SplitPartsMoveHostAndDeviceTensors) {
  std::unique_ptr<Communicator> reversed = both_->split(0, size() - rank());
  EXPECT_EQ(reversed->rank(), size() - 1 - rank());
  OwnedTensor device = on_device(make_tensor(Shape{4}, DType::f32, [&](int64_t i) { return rank() + i; }));
  OwnedTensor gathered(Shape{size(), 4}, DType::f32, device_);  // [size, 4], in the part's rank order
  reversed->all_gather(gathered, device);
  std::vector<double> got = device_values(gathered);
  for (int part_rank = 0; part_rank < size(); ++part_rank) {
    int world_rank = size() - 1 - part_rank;
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(got[static_cast<size_t>(part_rank * 4 + i)], world_rank + i);
  }
  OwnedTensor host = make_tensor(Shape{1}, DType::i32, [&](int64_t) { return 1; });  // [1]
  reversed->all_reduce(host, ReduceOp::sum);
  EXPECT_EQ(host.data<int32_t>()[0], size());
  reversed->barrier();
}

// The pipeline engine's transport (NcclPeerChannels): every rank exchanges messages with its neighbours on two
// channels, several per channel, and takes one channel's before the other's (a reordering across channels, as the
// engine does). Each message is written by work queued on the compute stream just before its send, and each is
// read by work queued after its receive, with no host synchronisation between: the links' stream ordering alone
// makes the values right. Once every rank read what it received, each send is done (send_done), with no wait.
TEST_F(HostDeviceAgainstMpi, PeerChannelsMoveDeviceTensorsInOrderPerChannelWithoutHostWaits) {
  std::vector<int> neighbours;
  if (rank() > 0) neighbours.push_back(rank() - 1);
  if (rank() + 1 < size()) neighbours.push_back(rank() + 1);
  std::unique_ptr<PeerChannels> channels = both_->peer_channels(neighbours, 2);
  constexpr int kMessages = 3;
  const Shape shape{256, 1024};  // 1 MiB of fp32: large enough for NCCL's rendezvous protocol
  auto value = [](int sender, int channel, int message, int64_t i) {
    return static_cast<double>(sender * 1000 + channel * 100 + message * 10 + i % 7);
  };
  std::vector<OwnedTensor> sent;
  std::vector<int64_t> tickets;
  for (int peer : neighbours) {
    for (int channel = 0; channel < 2; ++channel) {
      for (int message = 0; message < kMessages; ++message) {
        OwnedTensor tensor(shape, DType::f32, device_);  // [256, 1024]
        fill_tensor(tensor, -1.0f);                      // NOTE: queued; the upload below overwrites it after
        copy_tensor_async(tensor, make_tensor(shape, DType::f32, [&](int64_t i) {
                            return value(rank(), channel, message, i);
                          }));
        tickets.push_back(channels->send(tensor, peer, channel));
        sent.push_back(std::move(tensor));
      }
    }
  }
  for (int peer : neighbours) {
    for (int channel : {1, 0}) {
      for (int message = 0; message < kMessages; ++message) {
        OwnedTensor received(shape, DType::f32, device_);  // [256, 1024]
        channels->recv(received, peer, channel);
        OwnedTensor copy(shape, DType::f32, device_);  // [256, 1024]: queued after the receive
        copy_tensor_async(copy, received);
        std::vector<double> got = device_values(copy);
        for (int64_t i = 0; i < shape.numel(); i += 997) {
          ASSERT_EQ(got[static_cast<size_t>(i)], value(peer, channel, message, i))
              << "from rank " << peer << ", channel " << channel << ", message " << message << ", element " << i;
        }
      }
    }
  }
  both_->barrier();  // every rank has its messages
  HAI_CUDA_CHECK(cudaDeviceSynchronize());  // the link streams' sends finished
  for (int64_t ticket : tickets) EXPECT_TRUE(channels->send_done(ticket)) << "ticket " << ticket;
  channels->wait_sends();
  sent.clear();
  both_->barrier();
}

}  // namespace
}  // namespace hai
