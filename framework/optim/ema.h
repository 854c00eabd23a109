#pragma once
// ParameterEma: an exponential moving average of the parameters in host memory (fp32), updated by a background
// thread so that the training step does not wait for it.
//
// submit(values) copies the master values into a staging buffer and returns; the worker then applies
//   ema = decay * ema + (1 - decay) * staged
// There is one staging buffer, so submit first waits for the previous update if it is still running (it has had a
// whole training step to finish). Every submitted update is therefore applied exactly once, in submission order.
// wait() blocks until the last submitted update is applied (call it before checkpointing or evaluating with the
// EMA weights). An update that fails in the worker (a non-finite value: the EMA is left unchanged) is rethrown by
// the next wait(), submit() or values(). The destructor applies a pending update and stops the thread.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "framework/tensor/tensor.h"

namespace hai {

class ParameterEma {
 public:
  // initial: [N] fp32 on any device; the EMA starts equal to it.
  ParameterEma(const Tensor& initial, double decay);
  ~ParameterEma();
  ParameterEma(const ParameterEma&) = delete;
  ParameterEma& operator=(const ParameterEma&) = delete;

  // values: [N] fp32 on any device (a device-to-host copy for device tensors).
  void submit(const Tensor& values);
  // The same with the values written by fill(staging) ([N] fp32 host), for values kept in several buffers.
  void submit(const std::function<void(const Tensor& staging)>& fill);
  void wait();
  // [N] fp32 host: the EMA after every submitted update (waits for them). Writable, for loading a checkpoint.
  Tensor values();
  int64_t updates_applied();

 private:
  void run_worker();
  void apply_staged();
  void wait_locked(std::unique_lock<std::mutex>& lock);

  float decay_;
  OwnedTensor ema_;      // [N] fp32 host
  OwnedTensor staging_;  // [N] fp32 host

  std::mutex mutex_;
  std::condition_variable changed_;
  bool pending_ = false;  // staging_ holds an update the worker has not finished applying
  bool stopping_ = false;
  int64_t updates_applied_ = 0;
  std::exception_ptr failure_;
  std::thread worker_;  // last: started once everything above exists
};

}  // namespace hai
