#pragma once
// CUDA device memory: which GPUs exist, the stream-ordered caching pool that every CUDA Buffer comes from, and its
// allocation statistics.
//
// Buffers on CUDA are allocated with cudaMallocAsync and released with cudaFreeAsync on the default stream, from
// the device's default memory pool. The pool keeps freed memory (its release threshold is raised to "never
// release"), so the allocations a training step repeats are served from memory the pool already holds, without a
// cudaMalloc or a synchronisation. Memory freed on the default stream is reused by later work on that stream in
// stream order; ops on other streams must order themselves after the default stream's work on shared memory.
// In a build without CUDA there are no GPUs: cuda_device_count() is 0 and the statistics are zero.

#include <cstddef>

#include "framework/tensor/tensor.h"

namespace hai {

// GPUs visible to this process; 0 without CUDA, without a driver or without a device (never throws).
int cuda_device_count();
// Makes a CUDA device the calling thread's current one (where CUDA libraries create their state); nothing for the
// CPU.
void make_device_current(Device device);

struct DeviceMemoryStats {
  size_t allocated_bytes = 0;       // held by live Buffers now
  size_t peak_allocated_bytes = 0;  // the most held at once since the last reset_peak_device_memory
  size_t reserved_bytes = 0;        // held by the pool (live Buffers and cached free memory)
  size_t peak_reserved_bytes = 0;
};

// The memory of a CUDA device in bytes (cudaMemGetInfo's total); 0 for the CPU.
size_t device_total_memory(Device device);

// The pool statistics of a CUDA device (all zero for the CPU).
DeviceMemoryStats device_memory_stats(Device device);
// Restarts the peaks from the current values.
void reset_peak_device_memory(Device device);

// Host (CPU) Buffers of this process: the bytes live now and the most live at once since reset_peak_host_memory,
// counted by Buffer itself (what the CPU reference's tensors hold; memory measurements on CPU ranks read it).
struct HostMemoryStats {
  size_t allocated_bytes = 0;
  size_t peak_allocated_bytes = 0;
};
HostMemoryStats host_memory_stats();
void reset_peak_host_memory();

namespace detail {
// Buffer's count of its host allocations: +bytes when it allocates, -bytes when it frees.
void count_host_bytes(std::ptrdiff_t bytes) noexcept;
// The allocation behind Buffer: bytes from `device`'s caching pool, stream-ordered on the default stream.
void* allocate_device_memory(size_t bytes, Device device);
void free_device_memory(void* data, Device device) noexcept;
}  // namespace detail

}  // namespace hai
