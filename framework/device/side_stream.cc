#include "framework/device/side_stream.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/side_stream.h"
#endif

namespace hai {

SideStream::SideStream(Device device) : device_(device) {
#ifdef HAI_WITH_CUDA
  if (device.is_cuda()) {
    stream_ = cuda::create_low_priority_stream(device);
    compute_point_ = cuda::create_event(device);
  }
#endif
}

SideStream::~SideStream() {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::destroy_stream_and_event(stream_, compute_point_);
#endif
}

void SideStream::wait_for_compute() {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::stream_waits_for(device_, stream_, compute_point_, Stream{});
#endif
}

void SideStream::mark(StreamMark& mark) {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::record_event(device_, mark.event_, stream_);
#endif
  mark.recorded_ = true;
}

StreamMark::StreamMark(Device device) : device_(device) {
#ifdef HAI_WITH_CUDA
  if (device.is_cuda()) event_ = cuda::create_event(device);
#endif
}

StreamMark::~StreamMark() {
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::destroy_stream_and_event(Stream{}, event_);
#endif
}

void StreamMark::join_compute() {
  if (!recorded_) return;
#ifdef HAI_WITH_CUDA
  if (device_.is_cuda()) cuda::compute_waits_for(device_, event_);
#endif
}

}  // namespace hai
