#include "framework/comm/communicator.h"

#include <numeric>
#include <vector>

namespace hai {
namespace {

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.bytes() == 0 || b.bytes() == 0 || !(a.device() == b.device())) return false;
  const char* a_begin = static_cast<const char*>(a.raw());
  const char* b_begin = static_cast<const char*>(b.raw());
  return a_begin < b_begin + b.bytes() && b_begin < a_begin + a.bytes();
}

void check_same_dtype_and_device(const Tensor& a, const Tensor& b, std::string_view operation) {
  HAI_CHECK(a.dtype() == b.dtype(), "{}: dtypes differ: {} and {}", operation, a.str(), b.str());
  HAI_CHECK(a.device() == b.device(), "{}: devices differ: {} and {}", operation, a.str(), b.str());
}

void check_reducible(const Tensor& tensor, std::string_view operation) {
  HAI_CHECK(is_reducible(tensor.dtype()), "{} of {}: dtype {} cannot be reduced", operation, tensor.str(),
            dtype_name(tensor.dtype()));
}

// Every dim after dim 0.
Shape row_shape(const Tensor& tensor) {
  std::vector<int64_t> dims = tensor.shape().to_vector();
  return Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
}

void check_counts(std::span<const int64_t> counts, const Tensor& tensor, int communicator_size,
                  std::string_view which) {
  HAI_CHECK(static_cast<int>(counts.size()) == communicator_size,
            "all_to_all_v: {}_counts has {} entries, expected one per rank ({})", which, counts.size(),
            communicator_size);
  for (int64_t count : counts) {
    HAI_CHECK(count >= 0, "all_to_all_v: negative {} count {}", which, count);
  }
  int64_t rows = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  HAI_CHECK(rows <= tensor.size(0), "all_to_all_v: {}_counts sum to {} rows, but {} tensor {} has {}", which,
            rows, which, tensor.str(), tensor.size(0));
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  HAI_THROW("unknown ReduceOp {}", static_cast<int>(op));
}

bool is_reducible(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::bf16:
    case DType::f16:
    case DType::i32:
    case DType::i64: return true;
    default: return false;
  }
}

void Communicator::all_reduce(const Tensor& tensor, ReduceOp op) {
  check_not_in_group("all_reduce");
  check_reducible(tensor, "all_reduce");
  OperationScope scope(*this, "all_reduce");
  run_all_reduce(tensor, op);
}

void Communicator::reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
  check_not_in_group("reduce_scatter");
  check_same_dtype_and_device(out, in, "reduce_scatter");
  check_reducible(in, "reduce_scatter");
  HAI_CHECK(in.numel() == size() * out.numel(),
            "reduce_scatter: in {} must hold {} ranks x out {} = {} elements, has {}", in.str(), size(), out.str(),
            size() * out.numel(), in.numel());
  const char* own_chunk = static_cast<const char*>(in.raw()) + out.bytes() * static_cast<size_t>(rank());
  HAI_CHECK(out.raw() == own_chunk || !overlaps(out, in),
            "reduce_scatter: out {} overlaps in {} other than as this rank's chunk", out.str(), in.str());
  OperationScope scope(*this, "reduce_scatter");
  run_reduce_scatter(out, in, op);
}

void Communicator::all_gather(const Tensor& out, const Tensor& in) {
  check_not_in_group("all_gather");
  check_same_dtype_and_device(out, in, "all_gather");
  HAI_CHECK(out.numel() == size() * in.numel(),
            "all_gather: out {} must hold {} ranks x in {} = {} elements, has {}", out.str(), size(), in.str(),
            size() * in.numel(), out.numel());
  const char* own_chunk = static_cast<const char*>(out.raw()) + in.bytes() * static_cast<size_t>(rank());
  HAI_CHECK(in.raw() == own_chunk || !overlaps(out, in),
            "all_gather: in {} overlaps out {} other than as this rank's chunk", in.str(), out.str());
  OperationScope scope(*this, "all_gather");
  run_all_gather(out, in);
}

void Communicator::broadcast(const Tensor& tensor, int root) {
  check_not_in_group("broadcast");
  HAI_CHECK(root >= 0 && root < size(), "broadcast: root {} outside the communicator of {} ranks", root, size());
  OperationScope scope(*this, "broadcast");
  run_broadcast(tensor, root);
}

void Communicator::all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                                std::span<const int64_t> recv_counts) {
  check_not_in_group("all_to_all_v");
  check_same_dtype_and_device(send, recv, "all_to_all_v");
  HAI_CHECK(send.rank() >= 1 && recv.rank() >= 1, "all_to_all_v: send {} and recv {} need a row dimension",
            send.str(), recv.str());
  HAI_CHECK(row_shape(send) == row_shape(recv), "all_to_all_v: rows of send {} and recv {} differ", send.str(),
            recv.str());
  check_counts(send_counts, send, size(), "send");
  check_counts(recv_counts, recv, size(), "recv");
  HAI_CHECK(!overlaps(send, recv), "all_to_all_v: send {} overlaps recv {}", send.str(), recv.str());
  OperationScope scope(*this, "all_to_all_v");
  run_all_to_all_v(send, send_counts, recv, recv_counts);
}

void Communicator::send(const Tensor& tensor, int peer, int tag) {
  check_peer(peer, "send");
  HAI_CHECK(tag >= 0, "send: negative tag {}", tag);
  OperationScope scope(*this, "send");
  run_send(tensor, peer, tag);
}

void Communicator::recv(const Tensor& tensor, int peer, int tag) {
  check_peer(peer, "recv");
  HAI_CHECK(tag >= 0, "recv: negative tag {}", tag);
  OperationScope scope(*this, "recv");
  run_recv(tensor, peer, tag);
}

int64_t Communicator::post_send(const Tensor& tensor, int peer, int tag) {
  check_not_in_group("post_send");
  check_peer(peer, "post_send");
  HAI_CHECK(tag >= 0, "post_send: negative tag {}", tag);
  OperationScope scope(*this, "post_send");
  return run_post_send(tensor, peer, tag);
}

bool Communicator::posted_send_done(int64_t ticket) {
  HAI_CHECK(ticket >= 0, "posted_send_done: negative ticket {}", ticket);
  return run_posted_send_done(ticket);
}

void Communicator::wait_posted_sends() {
  check_not_in_group("wait_posted_sends");
  OperationScope scope(*this, "wait_posted_sends");
  run_wait_posted_sends();
}

std::unique_ptr<Communicator> Communicator::side_stream_duplicate() { return split(0, rank()); }

std::unique_ptr<PeerChannels> Communicator::peer_channels(std::span<const int> peers, int channels) {
  for (int peer : peers) check_peer(peer, "peer_channels");
  HAI_CHECK(channels > 0, "peer_channels: {} channels", channels);
  return std::make_unique<CommunicatorPeerChannels>(*this);
}

int64_t Communicator::run_post_send(const Tensor&, int, int) {
  HAI_THROW("post_send: this communicator's backend has no posted sends");
}

bool Communicator::run_posted_send_done(int64_t) {
  HAI_THROW("posted_send_done: this communicator's backend has no posted sends");
}

void Communicator::run_wait_posted_sends() {
  HAI_THROW("wait_posted_sends: this communicator's backend has no posted sends");
}

void Communicator::group_start() {
  OperationScope scope(*this, "group_start");
  if (group_depth_++ == 0) run_group_start();
}

void Communicator::group_end() {
  HAI_CHECK(group_depth_ > 0, "group_end without group_start");
  OperationScope scope(*this, "group_end");
  if (--group_depth_ == 0) run_group_end();
}

void Communicator::barrier() {
  check_not_in_group("barrier");
  OperationScope scope(*this, "barrier");
  run_barrier();
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  check_not_in_group("split");
  HAI_CHECK(color >= 0, "split: color {} must be >= 0", color);
  OperationScope scope(*this, "split");
  std::unique_ptr<Communicator> part = run_split(color, key);
  part->set_observer(observer_);
  return part;
}

OperationRecord Communicator::last_operation() const {
  std::lock_guard lock(record_mutex_);
  return last_;
}

Communicator::OperationScope::OperationScope(Communicator& communicator, std::string_view name)
    : communicator_(communicator) {
  communicator.record(name);
  if (communicator.observer_) communicator.observer_->operation_started(communicator, communicator.last_operation());
}

Communicator::OperationScope::~OperationScope() {
  if (communicator_.observer_) communicator_.observer_->operation_finished(communicator_);
}

void Communicator::record(std::string_view name) {
  std::lock_guard lock(record_mutex_);
  last_ = {name, last_.sequence + 1};
}

void Communicator::check_not_in_group(std::string_view name) const {
  HAI_CHECK(!in_group(), "{} inside group_start()/group_end(): only send and recv may be grouped", name);
}

void Communicator::check_peer(int peer, std::string_view name) const {
  HAI_CHECK(peer >= 0 && peer < size(), "{}: peer {} outside the communicator of {} ranks", name, peer, size());
  HAI_CHECK(peer != rank() || in_group(), "{}: rank {} to itself outside a group would block forever", name,
            peer);
}

}  // namespace hai
