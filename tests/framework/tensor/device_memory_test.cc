// The CUDA caching pool behind Buffer: its statistics follow live buffers, freed memory stays reserved for reuse,
// and the peak restarts on request. The CPU has no pool. The CUDA case skips without a GPU (fails under
// HAI_REQUIRE_GPU=1).

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "framework/tensor/device_memory.h"
#include "framework/tensor/tensor.h"

namespace hai {
namespace {

constexpr size_t kMiB = 1024 * 1024;

TEST(DeviceMemory, TheCpuHasNoPoolStatistics) {
  DeviceMemoryStats stats = device_memory_stats(Device::cpu());
  EXPECT_EQ(stats.allocated_bytes, 0u);
  EXPECT_EQ(stats.peak_allocated_bytes, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_NO_THROW(reset_peak_device_memory(Device::cpu()));
  EXPECT_NO_THROW(make_device_current(Device::cpu()));
}

// Host Buffers count their bytes: a live tensor's bytes are counted until it is freed (or moved from and then
// freed once), and the peak holds the most live at once until it is reset.
TEST(DeviceMemory, HostBytesFollowLiveBuffers) {
  size_t before = host_memory_stats().allocated_bytes;
  {
    OwnedTensor a(Shape{kMiB / 4}, DType::f32);  // 1 MiB
    EXPECT_EQ(host_memory_stats().allocated_bytes, before + kMiB);
    OwnedTensor moved = std::move(a);
    EXPECT_EQ(host_memory_stats().allocated_bytes, before + kMiB);
    EXPECT_GE(host_memory_stats().peak_allocated_bytes, before + kMiB);
  }
  EXPECT_EQ(host_memory_stats().allocated_bytes, before);
  reset_peak_host_memory();
  EXPECT_EQ(host_memory_stats().peak_allocated_bytes, before);
}

TEST(DeviceMemory, ZeroFillAsyncCopyAndHostCopyOnTheCpu) {
  OwnedTensor source(Shape{2, 3}, DType::f32), destination(Shape{2, 3}, DType::f32);
  for (int64_t i = 0; i < 6; ++i) source.data<float>()[i] = static_cast<float>(i) + 0.5f;
  copy_tensor_async(destination, source);
  OwnedTensor copy = host_copy(destination);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(copy.data<float>()[i], static_cast<float>(i) + 0.5f);
  zero_fill(destination.tensor().slice(1, 2));
  EXPECT_EQ(destination.data<float>()[2], 2.5f);
  for (int64_t i = 3; i < 6; ++i) EXPECT_EQ(destination.data<float>()[i], 0.0f);
  OwnedTensor wrong(Shape{3, 2}, DType::f32);
  EXPECT_THROW(copy_tensor_async(wrong, source), Error);
}

TEST(DeviceMemory, TheCudaPoolCountsLiveBuffersAndKeepsFreedMemory) {
  if (cuda_device_count() == 0) {
    const char* required = std::getenv("HAI_REQUIRE_GPU");
    if (required != nullptr && std::string(required) == "1") FAIL() << "HAI_REQUIRE_GPU=1, no GPU";
    GTEST_SKIP() << "no CUDA device";
  }
  Device gpu = Device::cuda(0);
  OwnedTensor probe = zero_tensor(Shape{1}, DType::f32, gpu);  // copied back to wait for the queued frees
  reset_peak_device_memory(gpu);
  DeviceMemoryStats before = device_memory_stats(gpu);
  {
    OwnedTensor tensor = zero_tensor(Shape{static_cast<int64_t>(4 * kMiB / sizeof(float))}, DType::f32, gpu);
    DeviceMemoryStats during = device_memory_stats(gpu);
    EXPECT_GE(during.allocated_bytes, before.allocated_bytes + 4 * kMiB);
    EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
    EXPECT_GE(during.reserved_bytes, during.allocated_bytes);
    OwnedTensor back = host_copy(tensor);
    EXPECT_EQ(back.data<float>()[12345], 0.0f);
  }
  host_copy(probe);
  DeviceMemoryStats after = device_memory_stats(gpu);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(after.peak_allocated_bytes, before.allocated_bytes + 4 * kMiB);
  EXPECT_GE(after.reserved_bytes, before.allocated_bytes + 4 * kMiB);  // kept by the pool for reuse
  reset_peak_device_memory(gpu);
  EXPECT_EQ(device_memory_stats(gpu).peak_allocated_bytes, after.allocated_bytes);
}

}  // namespace
}  // namespace hai
