#include "framework/comm/cuda/host_device_communicator.h"

#include <utility>

#include "framework/comm/cuda/nccl_peer_channels.h"
#include "framework/core/error.h"

namespace hai {

HostDeviceCommunicator::HostDeviceCommunicator(std::unique_ptr<Communicator> host,
                                               std::unique_ptr<NcclCommunicator> device)
    : host_(std::move(host)), device_(std::move(device)) {
  HAI_CHECK(host_ != nullptr && device_ != nullptr, "HostDeviceCommunicator needs a host and a device communicator");
  HAI_CHECK(host_->rank() == device_->rank() && host_->size() == device_->size(),
            "HostDeviceCommunicator: the host communicator (rank {} of {}) and the device one (rank {} of {}) "
            "differ",
            host_->rank(), host_->size(), device_->rank(), device_->size());
}

void HostDeviceCommunicator::abort(int code) { device_->abort(code); }

void HostDeviceCommunicator::run_all_reduce(const Tensor& tensor, ReduceOp op) {
  backend_of(tensor).all_reduce(tensor, op);
}

void HostDeviceCommunicator::run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
  backend_of(in).reduce_scatter(out, in, op);
}

void HostDeviceCommunicator::run_all_gather(const Tensor& out, const Tensor& in) {
  backend_of(in).all_gather(out, in);
}

void HostDeviceCommunicator::run_broadcast(const Tensor& tensor, int root) {
  backend_of(tensor).broadcast(tensor, root);
}

void HostDeviceCommunicator::run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts,
                                              const Tensor& recv, std::span<const int64_t> recv_counts) {
  backend_of(send).all_to_all_v(send, send_counts, recv, recv_counts);
}

void HostDeviceCommunicator::run_send(const Tensor& tensor, int peer, int tag) {
  if (!tensor.device().is_cuda()) {
    host_->send(tensor, peer, tag);
    return;
  }
  OwnedTensor staging = staged_copy(tensor);  // [tensor's shape] on the host
  host_->send(staging, peer, tag);
  if (in_group()) grouped_send_staging_.push_back(std::move(staging));
}

void HostDeviceCommunicator::run_recv(const Tensor& tensor, int peer, int tag) {
  if (!tensor.device().is_cuda()) {
    host_->recv(tensor, peer, tag);
    return;
  }
  OwnedTensor staging(tensor.shape(), tensor.dtype());  // [tensor's shape] on the host
  host_->recv(staging, peer, tag);
  if (in_group()) {
    grouped_receives_.push_back({std::move(staging), tensor});
  } else {
    unstage(tensor, staging);
  }
}

int64_t HostDeviceCommunicator::run_post_send(const Tensor& tensor, int peer, int tag) {
  if (!tensor.device().is_cuda()) return host_->post_send(tensor, peer, tag);
  OwnedTensor staging = staged_copy(tensor);  // [tensor's shape] on the host
  int64_t ticket = host_->post_send(staging, peer, tag);
  posted_send_staging_.emplace(ticket, std::move(staging));
  return ticket;
}

bool HostDeviceCommunicator::run_posted_send_done(int64_t ticket) {
  if (!host_->posted_send_done(ticket)) return false;
  posted_send_staging_.erase(ticket);
  return true;
}

void HostDeviceCommunicator::run_wait_posted_sends() {
  host_->wait_posted_sends();
  posted_send_staging_.clear();
}

void HostDeviceCommunicator::run_group_start() { host_->group_start(); }

void HostDeviceCommunicator::run_group_end() {
  std::vector<OwnedTensor> sent = std::move(grouped_send_staging_);
  std::vector<StagedReceive> received = std::move(grouped_receives_);
  grouped_send_staging_.clear();
  grouped_receives_.clear();
  host_->group_end();
  for (const StagedReceive& receive : received) unstage(receive.destination, receive.staging);
}

void HostDeviceCommunicator::run_barrier() {
  device_->synchronize();
  host_->barrier();
}

std::unique_ptr<Communicator> HostDeviceCommunicator::run_split(int color, int key) {
  std::unique_ptr<Communicator> host_part = host_->split(color, key);
  std::unique_ptr<Communicator> device_part = device_->split(color, key);
  // NOTE: NcclCommunicator::run_split makes an NcclCommunicator; the cast only recovers its type.
  auto* nccl_part = static_cast<NcclCommunicator*>(device_part.release());
  return std::make_unique<HostDeviceCommunicator>(std::move(host_part), std::unique_ptr<NcclCommunicator>(nccl_part));
}

std::unique_ptr<Communicator> HostDeviceCommunicator::side_stream_duplicate() {
  std::unique_ptr<Communicator> host_part = host_->split(0, host_->rank());
  std::unique_ptr<Communicator> device_part = device_->side_stream_duplicate();
  // NOTE: NcclCommunicator::side_stream_duplicate makes an NcclCommunicator; the cast only recovers its type.
  auto* nccl_part = static_cast<NcclCommunicator*>(device_part.release());
  return std::make_unique<HostDeviceCommunicator>(std::move(host_part), std::unique_ptr<NcclCommunicator>(nccl_part));
}

std::unique_ptr<PeerChannels> HostDeviceCommunicator::peer_channels(std::span<const int> peers, int channels) {
  return std::make_unique<NcclPeerChannels>(*this, peers, channels);
}

Communicator& HostDeviceCommunicator::backend_of(const Tensor& tensor) {
  if (tensor.device().is_cuda()) return *device_;
  return *host_;
}

OwnedTensor HostDeviceCommunicator::staged_copy(const Tensor& tensor) const {
  OwnedTensor staging(tensor.shape(), tensor.dtype());  // [tensor's shape] on the host
  // NOTE: into pageable host memory the copy returns once done, so it waits for the stream's earlier work.
  copy_tensor_async(staging, tensor, device_->stream());
  return staging;
}

void HostDeviceCommunicator::unstage(const Tensor& destination, const Tensor& staging) const {
  // NOTE: from pageable host memory the copy reads `staging` before returning, so it may be freed after.
  copy_tensor_async(destination, staging, device_->stream());
}

}  // namespace hai
