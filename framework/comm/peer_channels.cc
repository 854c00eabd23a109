#include "framework/comm/peer_channels.h"

#include "framework/comm/communicator.h"

namespace hai {

void CommunicatorPeerChannels::send(const Tensor& tensor, int peer, int channel) {
  group_.post_send(tensor, peer, channel);
}

void CommunicatorPeerChannels::recv(const Tensor& tensor, int peer, int channel) { group_.recv(tensor, peer, channel); }

void CommunicatorPeerChannels::wait_sends() { group_.wait_posted_sends(); }

}  // namespace hai
