#pragma once
// NcclPeerChannels: the PeerChannels (peer_channels.h) of GPU ranks, over NCCL, with no host waits: the pipeline
// engine's activations and gradients go GPU to GPU (NVLink within a node) while both ranks go on queueing work.
//
// Links: every pair of neighbouring ranks (r, r + 1) of the group gets one NCCL communicator of its own per channel
// and direction, each driven by a stream of its own on both ranks. A send queues on its link's stream after the
// compute stream's work queued so far (an event), so it reads the finished tensor; a receive queues on its link's
// stream likewise (its buffer may reuse memory the compute stream was still reading), and the compute stream waits
// for it to complete before running anything queued later. So a link's messages match in posting order, as the
// contract asks, and neither a send nor a receive blocks the host or the other links: a rank's compute waits for
// the messages it receives and for nothing else, which is the time model of the pipeline simulator.
// NOTE: only neighbours: every pipeline schedule (1f1b, dualpipe, dualpipev) exchanges messages between adjacent
// pipeline ranks alone; a non-neighbour peer is an error.
//
// Compute stream: the group's device stream (NcclCommunicator::stream(), where the model's work queues).
// send_done() queries an event recorded on the send's link stream after it (the transfer finished: its tensor may be
// freed); wait_sends() makes the compute stream wait for every send queued so far, so that the tensors sent may be
// freed into the stream-ordered pool afterwards. Link streams are non-blocking (they do not synchronise with the legacy
// default stream). A link operation that hangs is not named by the NCCL watchdog of the group; the compute stream
// stalls behind it and the group's next collective is reported (queued_operation_watchdog.h).

#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "framework/comm/cuda/host_device_communicator.h"
#include "framework/comm/peer_channels.h"

namespace hai {

class NcclPeerChannels final : public PeerChannels {
 public:
  // Collective over `group` (every rank calls it with its own peers, each rank +-1). group must outlive this.
  NcclPeerChannels(HostDeviceCommunicator& group, std::span<const int> peers, int channels);
  ~NcclPeerChannels() override;
  NcclPeerChannels(const NcclPeerChannels&) = delete;
  NcclPeerChannels& operator=(const NcclPeerChannels&) = delete;

  int64_t send(const Tensor& tensor, int peer, int channel) override;
  void recv(const Tensor& tensor, int peer, int channel) override;
  bool send_done(int64_t ticket) override;
  void wait_sends() override;

 private:
  // One direction of one channel between this rank and a neighbour: a 2-rank communicator and its stream.
  struct Link {
    std::unique_ptr<Communicator> pair;  // a HostDeviceCommunicator of the two ranks
    NcclCommunicator* device = nullptr;  // its NCCL part, queueing on `stream`
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;  // recorded after the link's last operation
  };
  using LinkKey = std::tuple<int, int, bool>;  // (peer, channel, outgoing)

  // Builds the links of the neighbour pairs starting at even (parity 0) or odd (parity 1) ranks.
  void connect_pairs(int parity, int channels);
  // Sends 64 MiB over a new link and waits for it. NOTE: NCCL connects two ranks at their first transfer,
  // on the host, and waits there for the peer's matching call; ranks that first sent to each other on different
  // links would wait for each other forever. Connected here, in the same link order on both ranks, later
  // transfers queue without host waits.
  void connect(const Link& link, bool outgoing);
  Link& link(int peer, int channel, bool outgoing);
  // Makes `stream` wait for the work queued on `after` so far.
  void order_after(cudaStream_t stream, cudaStream_t after);

  HostDeviceCommunicator& group_;
  cudaStream_t compute_stream_;
  cudaEvent_t compute_mark_ = nullptr;  // recorded on compute_stream_ before each link operation
  std::map<LinkKey, Link> links_;
  std::vector<LinkKey> creation_order_;  // the links in the order both ranks of each created them
  std::map<int64_t, cudaEvent_t> send_events_;  // by ticket: recorded after the send, until seen complete
  std::vector<cudaEvent_t> spare_events_;        // events of completed sends, for reuse
  int64_t next_ticket_ = 0;
};

}  // namespace hai
