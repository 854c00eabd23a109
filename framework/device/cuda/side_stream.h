#pragma once
// The CUDA streams and events behind framework/device/side_stream.h (opaque handles: cudaStream_t, cudaEvent_t).

#include "framework/tensor/tensor.h"

namespace hai::cuda {

Stream create_low_priority_stream(Device device);
void* create_event(Device device);
// Either handle may be null. Unchecked: called from destructors.
void destroy_stream_and_event(Stream stream, void* event);
void record_event(Device device, void* event, Stream stream);
// `stream` waits for the point `from` has reached, through `event`.
void stream_waits_for(Device device, Stream stream, void* event, Stream from);
// The compute (default) stream waits for the recorded `event`.
void compute_waits_for(Device device, void* event);

}  // namespace hai::cuda
