#pragma once
// Times a GPU operation with CUDA events: warm-up calls first, then the mean of the timed calls.

#include <functional>

namespace hai::bench {

struct TimingOptions {
  int warmup = 3;       // untimed calls (cuBLASLt heuristics, caches, clocks)
  int iterations = 20;  // timed calls; the result is their mean
};

// Mean milliseconds per call of `op`, which queues work on the default stream.
double time_ms(const std::function<void()>& op, const TimingOptions& options);

// TFLOP/s of `flops` floating-point operations done in `ms` milliseconds.
double tflops(double flops, double ms);

}  // namespace hai::bench
