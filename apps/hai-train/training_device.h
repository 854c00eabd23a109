#pragma once
// The device of a job of one rank, from runtime.device (several ranks: training_world.h):
//   cpu   the CPU backend;
//   cuda  the node-local rank's GPU (local rank modulo the GPUs this process sees); it is an error to have none;
//   auto  cuda when this process sees a GPU, else cpu.
// A CUDA device is made current for the calling thread.

#include "framework/config/config.h"
#include "framework/tensor/tensor.h"

namespace hai {

Device single_rank_training_device(RuntimeDevice setting, int local_rank);

// The peak memory of training on `device` in GiB: on a GPU the most its caching pool has handed out at once
// (framework/tensor/device_memory.h), on the CPU the process's peak resident set.
double peak_memory_gib(Device device);

}  // namespace hai
