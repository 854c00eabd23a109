#pragma once
// Bytes from the stream-ordered pool for the duration of one op, given back on the same stream after the work queued
// meanwhile (the pool reuses them without a device synchronisation).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/core/check.h"

namespace hai::cuda {

class Scratch {
 public:
  Scratch(int64_t bytes, cudaStream_t stream) : stream_(stream) {
    HAI_CUDA_CHECK(cudaMallocAsync(&data_, static_cast<size_t>(bytes), stream_));
  }
  ~Scratch() { cudaFreeAsync(data_, stream_); }  // NOTE: unchecked: a destructor must not throw
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace hai::cuda
