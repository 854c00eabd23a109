#include "framework/comm/peer_channels.h"

#include "framework/comm/communicator.h"

namespace hai {

int64_t CommunicatorPeerChannels::send(const Tensor& tensor, int peer, int channel) {
  return group_.post_send(tensor, peer, channel);
}

void CommunicatorPeerChannels::recv(const Tensor& tensor, int peer, int channel) { group_.recv(tensor, peer, channel); }

bool CommunicatorPeerChannels::send_done(int64_t ticket) { return group_.posted_send_done(ticket); }

void CommunicatorPeerChannels::wait_sends() { group_.wait_posted_sends(); }

}  // namespace hai
