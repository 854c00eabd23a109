#include "apps/hai-train/training_device.h"

#include <sys/resource.h>

#include "framework/tensor/device_memory.h"

namespace hai {

Device single_rank_training_device(RuntimeDevice setting, int local_rank) {
  if (setting == RuntimeDevice::cpu) return Device::cpu();
  int gpus = cuda_device_count();
  if (setting == RuntimeDevice::automatic && gpus == 0) return Device::cpu();
  HAI_CHECK(gpus > 0, "runtime.device is cuda, but this process sees no GPU (or the build has no CUDA backend)");
  Device device = Device::cuda(local_rank % gpus);
  make_device_current(device);
  return device;
}

double peak_memory_gib(Device device) {
  constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
  if (device.is_cuda()) return static_cast<double>(device_memory_stats(device).peak_allocated_bytes) / kGib;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0 / kGib;  // ru_maxrss is in KiB on Linux
}

}  // namespace hai
