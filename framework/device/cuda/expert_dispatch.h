#pragma once
// CUDA implementation of framework/device/expert_dispatch.h (operands already checked by the dispatcher).

#include <cstddef>
#include <cstdint>

#include "framework/device/expert_dispatch.h"

namespace hai::cuda {

void count_dispatch_rows(const Tensor& send_counts, const RoutingPlan& plan, Stream stream);
void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts, Stream stream);
void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index, Stream stream);

// DispatchCountReader's page-locked host memory of `bytes` (its event: side_stream.h's create_event).
void* allocate_pinned(Device device, size_t bytes);
// Null does nothing. Unchecked: called from destructors.
void free_pinned(void* pinned);
// values <- counts (i32 on the device): copied on `stream` into `pinned`, `event` recorded after the copy, the host
// waits for the event only.
void read_counts(Device device, int32_t* values, void* pinned, const Tensor& counts, void* event, Stream stream);

}  // namespace hai::cuda
