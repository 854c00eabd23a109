#include "framework/comm/cuda/nccl_peer_channels.h"

#include <spdlog/spdlog.h>

#include "framework/core/check.h"
#include "framework/core/error.h"

namespace hai {

NcclPeerChannels::NcclPeerChannels(HostDeviceCommunicator& group, std::span<const int> peers, int channels)
    : group_(group), compute_stream_(static_cast<cudaStream_t>(group.device_communicator().stream().handle)) {
  HAI_CHECK(channels > 0, "NCCL peer channels: {} channels", channels);
  for (int peer : peers) {
    HAI_CHECK(peer == group.rank() - 1 || peer == group.rank() + 1,
              "NCCL peer channels: rank {} names peer {}, not a neighbour (only ranks +-1 are linked)", group.rank(),
              peer);
  }
  HAI_CUDA_CHECK(cudaSetDevice(group.device().index));
  HAI_CUDA_CHECK(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming));
  // NOTE: two rounds, pairs (0, 1), (2, 3), ... then (1, 2), (3, 4), ...: each split is collective over the group.
  if (group.size() >= 2) connect_pairs(0, channels);
  if (group.size() >= 3) connect_pairs(1, channels);
}

NcclPeerChannels::~NcclPeerChannels() {
  // NOTE: in creation order, the same on both ranks of a link: ncclCommDestroy waits for the peer's.
  for (const LinkKey& key : creation_order_) {
    Link& link = links_.at(key);
    if (cudaStreamSynchronize(link.stream) != cudaSuccess) spdlog::error("NCCL peer channels: a link stream failed");
    link.pair.reset();
    cudaEventDestroy(link.done);
    cudaStreamDestroy(link.stream);
  }
  for (auto& [ticket, event] : send_events_) cudaEventDestroy(event);
  for (cudaEvent_t event : spare_events_) cudaEventDestroy(event);
  cudaEventDestroy(compute_mark_);
}

void NcclPeerChannels::connect_pairs(int parity, int channels) {
  const int rank = group_.rank(), size = group_.size();
  const int first = rank - (rank - parity + 2) % 2;  // the lower rank of this rank's pair at this parity
  const bool paired = first >= parity && first + 1 < size;
  std::unique_ptr<Communicator> pair = group_.split(paired ? first : size + rank, rank);
  if (!paired) return;
  const int peer = rank == first ? first + 1 : first;
  for (int channel = 0; channel < channels; ++channel) {
    for (bool upward : {true, false}) {  // lower -> upper rank, then upper -> lower
      Link link;
      link.pair = pair->split(0, pair->rank());
      // NOTE: HostDeviceCommunicator::run_split makes a HostDeviceCommunicator; the cast only recovers its type.
      link.device = &static_cast<HostDeviceCommunicator&>(*link.pair).device_communicator();
      HAI_CUDA_CHECK(cudaStreamCreateWithFlags(&link.stream, cudaStreamNonBlocking));
      HAI_CUDA_CHECK(cudaEventCreateWithFlags(&link.done, cudaEventDisableTiming));
      link.device->set_stream(Stream{link.stream});
      bool outgoing = upward == (rank == first);
      connect(link, outgoing);
      links_.emplace(LinkKey{peer, channel, outgoing}, std::move(link));
      creation_order_.push_back(LinkKey{peer, channel, outgoing});
    }
  }
}

void NcclPeerChannels::connect(const Link& link, bool outgoing) {
  // NOTE: 64 MiB, as large as a pipeline boundary tensor, so that NCCL connects every channel a transfer of that
  // size uses (it connects lazily, per channel).
  OwnedTensor token(Shape{16 << 20}, DType::f32, group_.device());  // [16M]
  int other = 1 - link.device->rank();
  if (outgoing) {
    zero_fill(token, Stream{link.stream});
    link.device->send(token, other, 0);
  } else {
    link.device->recv(token, other, 0);
  }
  HAI_CUDA_CHECK(cudaStreamSynchronize(link.stream));
}

NcclPeerChannels::Link& NcclPeerChannels::link(int peer, int channel, bool outgoing) {
  auto found = links_.find(LinkKey{peer, channel, outgoing});
  HAI_CHECK(found != links_.end(), "NCCL peer channels: rank {} has no channel {} {} rank {}", group_.rank(), channel,
            outgoing ? "to" : "from", peer);
  return found->second;
}

void NcclPeerChannels::order_after(cudaStream_t stream, cudaStream_t after) {
  HAI_CUDA_CHECK(cudaEventRecord(compute_mark_, after));
  HAI_CUDA_CHECK(cudaStreamWaitEvent(stream, compute_mark_, 0));
}

int64_t NcclPeerChannels::send(const Tensor& tensor, int peer, int channel) {
  Link& out = link(peer, channel, /*outgoing=*/true);
  order_after(out.stream, compute_stream_);
  out.device->send(tensor, 1 - out.device->rank(), 0);
  HAI_CUDA_CHECK(cudaEventRecord(out.done, out.stream));
  cudaEvent_t sent = nullptr;
  if (spare_events_.empty()) {
    HAI_CUDA_CHECK(cudaEventCreateWithFlags(&sent, cudaEventDisableTiming));
  } else {
    sent = spare_events_.back();
    spare_events_.pop_back();
  }
  HAI_CUDA_CHECK(cudaEventRecord(sent, out.stream));
  send_events_.emplace(next_ticket_, sent);
  return next_ticket_++;
}

bool NcclPeerChannels::send_done(int64_t ticket) {
  HAI_CHECK(ticket >= 0 && ticket < next_ticket_, "NCCL peer channels: send ticket {} was never given", ticket);
  auto found = send_events_.find(ticket);
  if (found == send_events_.end()) return true;
  cudaError_t state = cudaEventQuery(found->second);
  if (state == cudaErrorNotReady) return false;
  HAI_CUDA_CHECK(state);
  spare_events_.push_back(found->second);
  send_events_.erase(found);
  return true;
}

void NcclPeerChannels::recv(const Tensor& tensor, int peer, int channel) {
  Link& in = link(peer, channel, /*outgoing=*/false);
  order_after(in.stream, compute_stream_);
  in.device->recv(tensor, 1 - in.device->rank(), 0);
  HAI_CUDA_CHECK(cudaEventRecord(in.done, in.stream));
  HAI_CUDA_CHECK(cudaStreamWaitEvent(compute_stream_, in.done, 0));
}

void NcclPeerChannels::wait_sends() {
  for (auto& [key, link] : links_) {
    if (std::get<2>(key)) HAI_CUDA_CHECK(cudaStreamWaitEvent(compute_stream_, link.done, 0));
  }
  for (auto& [ticket, event] : send_events_) spare_events_.push_back(event);
  send_events_.clear();
}

}  // namespace hai
