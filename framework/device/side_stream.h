#pragma once
// A stream beside the compute stream (the default stream that every op queues on unless told otherwise), for work
// that may run under the compute stream's later kernels, and the marks that order the two: the side stream waits
// for what the compute stream queued so far (wait_for_compute), and the compute stream waits for a point the side
// stream reached (StreamMark). On the CPU everything runs in call order: a SideStream's stream() is the default
// one and the waits are no-ops, so code written with them is exactly the synchronous code there.

#include <memory>

#include "framework/tensor/tensor.h"

namespace hai {

class StreamMark;

class SideStream {
 public:
  // At the lowest priority on CUDA: the block scheduler hands the compute stream's waiting blocks the freed
  // multiprocessors first, and the side stream's work fills what is left.
  explicit SideStream(Device device);
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  Stream stream() const { return stream_; }
  // Work queued on stream() from now on runs after everything queued on the compute stream so far.
  void wait_for_compute();
  // Records in `mark` the point stream() has reached: what it queued so far.
  void mark(StreamMark& mark);

 private:
  Device device_;
  Stream stream_;
  void* compute_point_ = nullptr;  // a cudaEvent_t on CUDA
};

class StreamMark {
 public:
  explicit StreamMark(Device device);
  ~StreamMark();
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;

  // Work queued on the compute stream from now on runs after the marked point (nothing to wait for before a mark).
  void join_compute();

 private:
  friend class SideStream;
  Device device_;
  void* event_ = nullptr;  // a cudaEvent_t on CUDA
  bool recorded_ = false;
};

}  // namespace hai
