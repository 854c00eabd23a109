#include "framework/tensor/device_memory.h"

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#ifdef HAI_WITH_CUDA
#include "framework/core/check.h"
#endif

namespace hai {
namespace {

// NOTE: process-wide like the CUDA pool's statistics; relaxed atomics, one add per host allocation and free.
std::atomic<size_t> host_live_bytes{0};
std::atomic<size_t> host_peak_bytes{0};

}  // namespace

HostMemoryStats host_memory_stats() { return {host_live_bytes.load(), host_peak_bytes.load()}; }

void reset_peak_host_memory() { host_peak_bytes.store(host_live_bytes.load()); }

void detail::count_host_bytes(std::ptrdiff_t bytes) noexcept {
  size_t live = host_live_bytes.fetch_add(static_cast<size_t>(bytes), std::memory_order_relaxed) +
                static_cast<size_t>(bytes);
  size_t peak = host_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !host_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

#ifdef HAI_WITH_CUDA
namespace {

// The default pool of `device`, set up once per device to keep what is freed (release threshold: never).
cudaMemPool_t caching_pool(int device) {
  static std::mutex mutex;
  static std::vector<bool> prepared;
  std::lock_guard<std::mutex> lock(mutex);
  cudaMemPool_t pool = nullptr;
  HAI_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  if (static_cast<size_t>(device) >= prepared.size()) prepared.resize(static_cast<size_t>(device) + 1, false);
  if (!prepared[static_cast<size_t>(device)]) {
    uint64_t keep_everything = std::numeric_limits<uint64_t>::max();
    HAI_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
    prepared[static_cast<size_t>(device)] = true;
  }
  return pool;
}

size_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  uint64_t value = 0;
  HAI_CUDA_CHECK(cudaMemPoolGetAttribute(pool, attribute, &value));
  return static_cast<size_t>(value);
}

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // NOTE: no driver or no device is an answer (0), not an error to keep
    return 0;
  }
  return count;
}

void make_device_current(Device device) {
  if (device.is_cuda()) HAI_CUDA_CHECK(cudaSetDevice(device.index));
}

size_t device_total_memory(Device device) {
  if (!device.is_cuda()) return 0;
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  size_t free = 0, total = 0;
  HAI_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total;
}

DeviceMemoryStats device_memory_stats(Device device) {
  if (!device.is_cuda()) return {};
  cudaMemPool_t pool = caching_pool(device.index);
  return {.allocated_bytes = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent),
          .peak_allocated_bytes = pool_attribute(pool, cudaMemPoolAttrUsedMemHigh),
          .reserved_bytes = pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent),
          .peak_reserved_bytes = pool_attribute(pool, cudaMemPoolAttrReservedMemHigh)};
}

void reset_peak_device_memory(Device device) {
  if (!device.is_cuda()) return;
  cudaMemPool_t pool = caching_pool(device.index);
  uint64_t zero = 0;  // NOTE: the only value these attributes accept: the peak restarts from the current use
  HAI_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  HAI_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
}

namespace detail {

void* allocate_device_memory(size_t bytes, Device device) {
  HAI_CUDA_CHECK(cudaSetDevice(device.index));
  void* data = nullptr;
  HAI_CUDA_CHECK(cudaMallocFromPoolAsync(&data, bytes, caching_pool(device.index), /*stream=*/nullptr));
  return data;
}

void free_device_memory(void* data, Device device) noexcept {
  // NOTE: not checked: a destructor must not throw, and a failed free leaves nothing to do.
  cudaSetDevice(device.index);
  cudaFreeAsync(data, /*stream=*/nullptr);
}

}  // namespace detail

#else

int cuda_device_count() { return 0; }

void make_device_current(Device device) {
  HAI_CHECK(!device.is_cuda(), "cannot use {}: this build has no CUDA backend", to_string(device));
}

size_t device_total_memory(Device) { return 0; }

DeviceMemoryStats device_memory_stats(Device) { return {}; }

void reset_peak_device_memory(Device) {}

namespace detail {

void* allocate_device_memory(size_t, Device device) {
  HAI_THROW("cannot allocate on {}: this build has no CUDA backend", to_string(device));
}

void free_device_memory(void*, Device) noexcept {}

}  // namespace detail

#endif

}  // namespace hai
