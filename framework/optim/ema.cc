#include "framework/optim/ema.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hai {

ParameterEma::ParameterEma(const Tensor& initial, double decay)
    : decay_(static_cast<float>(decay)),
      ema_(Shape{initial.numel()}, DType::f32),
      staging_(Shape{initial.numel()}, DType::f32) {
  HAI_CHECK(decay > 0.0 && decay < 1.0, "EMA decay must be in (0, 1), got {}", decay);
  check_dtype(initial, DType::f32, "EMA initial values");
  copy_tensor(ema_, initial.reshape(ema_.shape()));
  worker_ = std::thread([this] { run_worker(); });
}

ParameterEma::~ParameterEma() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void ParameterEma::submit(const Tensor& values) {
  HAI_CHECK(values.numel() == ema_.numel(), "EMA of {} values submitted {}", ema_.numel(), values.str());
  check_dtype(values, DType::f32, "EMA values");
  submit([&](const Tensor& staging) { copy_tensor(staging, values.reshape(staging.shape())); });
}

void ParameterEma::submit(const std::function<void(const Tensor& staging)>& fill) {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_locked(lock);
  fill(staging_.tensor());
  pending_ = true;
  lock.unlock();
  changed_.notify_all();
}

void ParameterEma::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_locked(lock);
}

Tensor ParameterEma::values() {
  wait();
  return ema_.tensor();
}

int64_t ParameterEma::updates_applied() {
  std::lock_guard<std::mutex> lock(mutex_);
  return updates_applied_;
}

void ParameterEma::wait_locked(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [this] { return !pending_; });
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void ParameterEma::run_worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return pending_ || stopping_; });
    if (!pending_) return;  // stopping with nothing left to apply
    lock.unlock();
    // NOTE: ema_ and staging_ are read and written without the lock: while pending_ is set, submit(), wait() and
    // values() all block before touching them.
    std::exception_ptr failure;
    try {
      apply_staged();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    pending_ = false;
    if (failure) failure_ = failure;
    else ++updates_applied_;
    changed_.notify_all();
  }
}

// All or nothing: a non-finite staged value throws before the EMA changes.
void ParameterEma::apply_staged() {
  float* ema = ema_.data<float>();                // [N]
  const float* staged = staging_.data<float>();  // [N]
  int64_t numel = ema_.numel();
  const float* bad = std::find_if(staged, staged + numel, [](float value) { return !std::isfinite(value); });
  HAI_CHECK(bad == staged + numel, "EMA update: parameter element {} is {}", bad - staged, *bad);
  float keep = decay_, take = 1.0f - decay_;
  for (int64_t i = 0; i < numel; ++i) ema[i] = keep * ema[i] + take * staged[i];
}

}  // namespace hai
