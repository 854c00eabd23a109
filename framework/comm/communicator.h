#pragma once
// Communicator: the one interface every piece of parallel code talks through (docs/architecture.md "Parallel
// layout").
// Backends: MpiCommunicator for host tensors (framework/comm/mpi_communicator.h), NCCL for device tensors later.
//
// The public operations check their arguments once, here, for every backend (shapes, dtypes, counts, peers),
// number the operation, then call the backend's run_* hook. Semantics, the same on every backend:
// - Every rank of the communicator calls the same collectives in the same order.
// - Reductions (sum, max, min) apply to f32, bf16, f16, i32 and i64. bf16 and f16 reduce in fp32 precision:
//   every contribution is widened exactly to fp32, reduced in fp32, and the result is rounded once (to nearest,
//   ties to even) back to the tensor's dtype. The result is bitwise identical on every rank.
// - Data movement (all_gather, broadcast, all_to_all_v, send, recv) applies to every dtype, u8 included.
// - Inside group_start()/group_end() only send and recv may be issued: they are posted without blocking, and
//   group_end() completes them all, so paired exchanges (a ring, a halo swap) cannot deadlock. Their tensors
//   must stay alive and untouched until group_end() returns. Groups nest; the outermost group_end() completes.
// - A communicator is used by one thread at a time; last_operation() alone may be read from any thread.
// - An OperationObserver (a watchdog, collective_watchdog.h) may be told when each operation starts and returns.

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>

#include "framework/comm/peer_channels.h"
#include "framework/tensor/tensor.h"

namespace hai {

enum class ReduceOp : uint8_t { sum, max, min };

// A point of a side stream (Communicator::mark_side_stream): the work queued there before it. Backend-defined.
class SideStreamMark {
 public:
  virtual ~SideStreamMark() = default;
};
std::string_view reduce_op_name(ReduceOp op);

// Whether reductions (all_reduce, reduce_scatter) accept this dtype.
bool is_reducible(DType dtype);

// The operation most recently issued on a communicator: its name ("all_reduce", "send", "group_end", ...) and
// its sequence number, counting from 1 (0 and an empty name before the first operation). Collectives are
// issued in the same order on every rank, so their sequence numbers agree across ranks; a watchdog names a
// hung operation with it. `name` points at a string literal, valid for the whole program.
struct OperationRecord {
  std::string_view name;
  uint64_t sequence = 0;
};

class Communicator;

// Told when each operation of a communicator starts and when it returns (normally or by an exception), on the
// thread that issued it. The communicator is alive and inside the operation between the two calls.
class OperationObserver {
 public:
  virtual ~OperationObserver() = default;
  virtual void operation_started(Communicator& communicator, OperationRecord operation) = 0;
  virtual void operation_finished(Communicator& communicator) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // tensor: any shape, reducible dtype. In place: every rank ends with the element-wise reduction over ranks.
  void all_reduce(const Tensor& tensor, ReduceOp op);

  // out: n elements, in: size() * n elements (any shapes), same reducible dtype. Viewing `in` flat as size()
  // chunks of n, rank r receives the reduction over ranks of chunk r. `out` may be this rank's own chunk of `in`
  // (reducing in place; the other chunks of `in` are undefined afterwards); otherwise the two must not overlap.
  void reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op);

  // in: n elements, out: size() * n elements (any shapes), same dtype. Viewing `out` flat as size() chunks of
  // n, chunk r is rank r's `in`. `in` may be this rank's own chunk of `out` (gathering in place); otherwise the
  // two must not overlap.
  void all_gather(const Tensor& out, const Tensor& in);

  // tensor: any shape and dtype, the same on every rank. Every rank ends with root's values.
  void broadcast(const Tensor& tensor, int root);

  // send: [S, ...row], recv: [R, ...row], the same dtype and the same row shape (every dim after dim 0).
  // Counts are in rows of dim 0, one per rank: send_counts[p] rows go to rank p, taken consecutively from row 0
  // of `send` in rank order; recv_counts[p] rows arrive from rank p, stored consecutively from row 0 of `recv`
  // in rank order. sum(send_counts) <= S and sum(recv_counts) <= R; rows beyond are neither sent nor written.
  // recv_counts[p] on this rank must equal send_counts[this rank] on rank p (exchange the counts first, e.g.
  // with an all_to_all_v of one row each).
  void all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                    std::span<const int64_t> recv_counts);

  // Point to point, any dtype; the receiver's tensor has exactly as many elements as the sender's. tag >= 0
  // tells apart messages between the same pair of ranks. Outside a group both block until done, so a rank
  // may not send to itself there; inside a group they are posted and complete at group_end().
  void send(const Tensor& tensor, int peer, int tag);
  void recv(const Tensor& tensor, int peer, int tag);

  // A send the sender does not wait for (outside a group, to another rank): posted now, matched by a recv of the
  // same tag like send; `tensor` must stay alive and untouched until posted_send_done() says so or
  // wait_posted_sends() returns. A pipeline engine sends this way, so that two ranks may receive in another order
  // than the other sent. Returns the send's ticket (>= 0, unique on this communicator).
  int64_t post_send(const Tensor& tensor, int peer, int tag);
  // Whether the posted send of `ticket` is complete (its tensor may be freed), without waiting; true for a ticket
  // already completed or waited for. Not an operation of the group: nothing is numbered or observed.
  bool posted_send_done(int64_t ticket);
  // Waits until every send posted by post_send has been taken by its receiver.
  void wait_posted_sends();

  void group_start();
  void group_end();
  bool in_group() const { return group_depth_ > 0; }

  void barrier();

  // Ranks calling with the same color (>= 0) form a new communicator, ranked by key (ties by rank here).
  // Every rank of this communicator must call it.
  std::unique_ptr<Communicator> split(int color, int key);

  // The ordered point-to-point channels of this rank with `peers` (peer_channels.h), `channels` channels each.
  // Every rank of this communicator calls it, naming the ranks it will exchange messages with (a rank it names
  // names it too). The base gives CommunicatorPeerChannels over this communicator, which must outlive them.
  virtual std::unique_ptr<PeerChannels> peer_channels(std::span<const int> peers, int channels);

  // A communicator of the same ranks whose operations on device tensors run beside later device work: each is
  // queued on a stream of its own, after the work queued so far on this communicator's stream (the compute
  // stream), and join_side_stream() on it makes the compute stream wait for everything it queued so far. So a
  // collective started there overlaps whatever the compute stream does next, and work joined after it sees its
  // results. Collective over this communicator. Host operations block until done, so the base gives a duplicate
  // (split) and join_side_stream() has nothing to wait for.
  virtual std::unique_ptr<Communicator> side_stream_duplicate();
  virtual void join_side_stream() {}
  // Records in `mark` (made here when null) the point a side stream has reached: what it queued so far. Joining
  // the mark (join_side_stream_mark) then makes the compute stream wait for that work alone, not for what the side stream queued since.
  // The base's operations are done when they return: it records nothing, and joining waits for nothing.
  virtual void mark_side_stream(std::unique_ptr<SideStreamMark>& mark) { (void)mark; }
  virtual void join_side_stream_mark(const SideStreamMark* mark) { (void)mark; }

  // Ends every process of the job with this exit code, without waiting for anyone. Never returns.
  [[noreturn]] virtual void abort(int code) = 0;

  OperationRecord last_operation() const;

  // Reports every later operation of this communicator, and of the communicators split from it afterwards, to
  // `observer` (null: to none).
  void set_observer(std::shared_ptr<OperationObserver> observer) { observer_ = std::move(observer); }

 protected:
  // Backend hooks, called after the arguments were checked and the operation numbered. run_send/run_recv see
  // in_group() to decide between blocking and posting; run_group_start/run_group_end are called for the
  // outermost group only.
  virtual void run_all_reduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual void run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) = 0;
  virtual void run_all_gather(const Tensor& out, const Tensor& in) = 0;
  virtual void run_broadcast(const Tensor& tensor, int root) = 0;
  virtual void run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                                std::span<const int64_t> recv_counts) = 0;
  virtual void run_send(const Tensor& tensor, int peer, int tag) = 0;
  virtual void run_recv(const Tensor& tensor, int peer, int tag) = 0;
  // Backends without posted sends keep these, which refuse.
  virtual int64_t run_post_send(const Tensor& tensor, int peer, int tag);
  virtual bool run_posted_send_done(int64_t ticket);
  virtual void run_wait_posted_sends();
  virtual void run_group_start() = 0;
  virtual void run_group_end() = 0;
  virtual void run_barrier() = 0;
  virtual std::unique_ptr<Communicator> run_split(int color, int key) = 0;

 private:
  // Numbers an operation and tells the observer; tells it again when the scope ends.
  class OperationScope {
   public:
    OperationScope(Communicator& communicator, std::string_view name);
    ~OperationScope();
    OperationScope(const OperationScope&) = delete;
    OperationScope& operator=(const OperationScope&) = delete;

   private:
    Communicator& communicator_;
  };

  void record(std::string_view name);
  void check_not_in_group(std::string_view name) const;
  void check_peer(int peer, std::string_view name) const;

  mutable std::mutex record_mutex_;  // guards last_ against a watchdog thread reading it
  OperationRecord last_;
  int group_depth_ = 0;
  std::shared_ptr<OperationObserver> observer_;
};

}  // namespace hai
