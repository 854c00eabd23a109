#pragma once
// PeerChannels: ordered point-to-point messages between this rank and its peers, the transport of the pipeline
// engine (parallel/pipeline/engine.h). Messages travel on numbered channels (the engine uses one for activations
// and one for gradients); between two ranks, on one channel and in one direction, they are matched in the order
// they were posted: the first sent is the first received. The pipeline validator (simulator.h) proves that every
// schedule keeps that order.
//
// A send does not wait for its receiver; its tensor must stay alive and untouched until send_done() of its ticket
// is true or wait_sends() returns (so a sender may free each tensor as soon as its send completes). A
// receive's tensor holds the message for all work ordered after the call: on the host at once, on a GPU for work
// queued later on the compute stream (a GPU backend may return before the data arrived).
//
// Backends: CommunicatorPeerChannels here (any Communicator's posted sends and receives, the channel as the tag;
// MPI delivers messages of one tag between two ranks in posting order), NcclPeerChannels for GPU ranks
// (framework/comm/cuda/nccl_peer_channels.h). Communicator::peer_channels() gives the group's.

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai {

class Communicator;

class PeerChannels {
 public:
  virtual ~PeerChannels() = default;

  // Returns the send's ticket for send_done().
  virtual int64_t send(const Tensor& tensor, int peer, int channel) = 0;
  virtual void recv(const Tensor& tensor, int peer, int channel) = 0;
  // Whether the send of `ticket` is complete, its tensor free to go, without waiting: taken by its receiver (a GPU
  // backend: its transfer finished on the device). True for a ticket seen complete before or waited for.
  virtual bool send_done(int64_t ticket) = 0;
  // Waits until every send so far has been taken by its receiver (a GPU backend: for the compute stream).
  virtual void wait_sends() = 0;
};

class CommunicatorPeerChannels final : public PeerChannels {
 public:
  // group must outlive this.
  explicit CommunicatorPeerChannels(Communicator& group) : group_(group) {}

  int64_t send(const Tensor& tensor, int peer, int channel) override;
  void recv(const Tensor& tensor, int peer, int channel) override;
  bool send_done(int64_t ticket) override;
  void wait_sends() override;

 private:
  Communicator& group_;
};

}  // namespace hai
