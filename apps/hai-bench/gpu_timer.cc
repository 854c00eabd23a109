#include "apps/hai-bench/gpu_timer.h"

#include <cuda_runtime.h>

#include "framework/core/check.h"

namespace hai::bench {
namespace {

// A CUDA event, destroyed with its owner.
class Event {
 public:
  Event() { HAI_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }  // NOTE: unchecked: a destructor must not throw
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

double time_ms(const std::function<void()>& op, const TimingOptions& options) {
  for (int i = 0; i < options.warmup; ++i) op();
  HAI_CUDA_CHECK(cudaDeviceSynchronize());
  Event start, stop;
  HAI_CUDA_CHECK(cudaEventRecord(start.get()));
  for (int i = 0; i < options.iterations; ++i) op();
  HAI_CUDA_CHECK(cudaEventRecord(stop.get()));
  HAI_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float elapsed_ms = 0.0f;
  HAI_CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, start.get(), stop.get()));
  return static_cast<double>(elapsed_ms) / options.iterations;
}

double tflops(double flops, double ms) { return flops / (ms * 1e-3) / 1e12; }

}  // namespace hai::bench
