#include "framework/metrics/phase_clock.h"

#include "framework/core/check.h"

#ifdef HAI_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace hai {

PhaseClock::PhaseClock(Device device) : device_(device) {
#ifndef HAI_WITH_CUDA
  HAI_CHECK(device.is_cpu(), "PhaseClock on {}: this build has no CUDA", to_string(device));
#endif
}

PhaseClock::~PhaseClock() {
#ifdef HAI_WITH_CUDA
  // NOTE: unchecked: a destructor must not throw
  for (void* event : events_) cudaEventDestroy(static_cast<cudaEvent_t>(event));
#endif
}

void PhaseClock::clear() {
  recorded_ = 0;
  host_times_.clear();
}

void PhaseClock::record() {
  if (device_.is_cpu()) {
    host_times_.push_back(std::chrono::steady_clock::now());
    ++recorded_;
    return;
  }
#ifdef HAI_WITH_CUDA
  if (recorded_ == events_.size()) {
    cudaEvent_t event = nullptr;
    HAI_CUDA_CHECK(cudaEventCreate(&event));
    events_.push_back(event);
  }
  HAI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[recorded_]), nullptr));
  ++recorded_;
#endif
}

std::vector<double> PhaseClock::intervals_ms() const {
  std::vector<double> intervals;
  if (recorded_ < 2) return intervals;
  if (device_.is_cpu()) {
    for (size_t i = 1; i < recorded_; ++i) {
      intervals.push_back(std::chrono::duration<double, std::milli>(host_times_[i] - host_times_[i - 1]).count());
    }
    return intervals;
  }
#ifdef HAI_WITH_CUDA
  HAI_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[recorded_ - 1])));
  for (size_t i = 1; i < recorded_; ++i) {
    float elapsed_ms = 0.0f;
    HAI_CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, static_cast<cudaEvent_t>(events_[i - 1]),
                                        static_cast<cudaEvent_t>(events_[i])));
    intervals.push_back(static_cast<double>(elapsed_ms));
  }
#endif
  return intervals;
}

}  // namespace hai
