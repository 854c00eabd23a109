// A side stream runs after what the compute stream queued before wait_for_compute(), and the compute stream runs
// what it queues after join_compute() after the marked side-stream work: the results are those of one stream.

#include <gtest/gtest.h>

#include "framework/device/elementwise.h"
#include "framework/device/side_stream.h"
#include "tests/framework/device/cuda/parity.h"

namespace hai {
namespace {

TEST(CudaSideStream, OrdersItsWorkAfterTheComputeStreamAndTheComputeStreamAfterAMark) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  constexpr int64_t kCount = 1 << 24;  // 64 MiB: each pass takes long enough for a missing wait to show
  OwnedTensor values(Shape{kCount}, DType::f32, gpu);
  SideStream side(gpu);
  StreamMark done(gpu);
  done.join_compute();                             // nothing marked yet: no wait
  fill_tensor(values, 3.0f);                       // compute stream
  side.wait_for_compute();
  for (int pass = 0; pass < 10; ++pass) scale_tensor(values, 2.0f, side.stream());  // 3 * 2^10
  side.mark(done);
  done.join_compute();
  add_scaled(values, values, 1.0f);  // compute stream, after the mark: 2 * 3 * 2^10
  OwnedTensor result = host_copy(values);
  for (int64_t i = 0; i < kCount; i += 4099) ASSERT_EQ(result.data<float>()[i], 6144.0f) << i;
  ASSERT_EQ(result.data<float>()[kCount - 1], 6144.0f);
}

}  // namespace
}  // namespace hai
