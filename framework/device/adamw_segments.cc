#include "framework/device/adamw_segments.h"

#include <algorithm>

namespace hai {

std::vector<AdamWSegment> adamw_runs(std::span<const AdamWSegment> segments) {
  std::vector<AdamWSegment> runs;
  for (const AdamWSegment& segment : segments) {
    HAI_CHECK(segment.value_offset >= 0 && segment.state_offset >= 0 && segment.numel >= 0,
              "adamw segment: value offset {}, state offset {}, {} elements", segment.value_offset,
              segment.state_offset, segment.numel);
    int64_t done = 0;
    while (done < segment.numel) {
      int64_t value_offset = segment.value_offset + done;
      // NOTE: the first run ends where the value offset reaches a multiple of 4, so the later ones start aligned.
      int64_t misalignment = value_offset % 4;
      int64_t limit = misalignment == 0 ? kAdamWRunElements : kAdamWRunElements - misalignment;
      int64_t numel = std::min(limit, segment.numel - done);
      runs.push_back({value_offset, segment.state_offset + done, numel, segment.weight_decay});
      done += numel;
    }
  }
  return runs;
}

AdamWSegmentTable::AdamWSegmentTable(std::span<const AdamWSegment> segments, Device device) : device_(device) {
  std::vector<AdamWSegment> runs = adamw_runs(segments);
  run_count_ = static_cast<int64_t>(runs.size());
  OwnedTensor host(Shape{run_count_, kAdamWRunColumns}, DType::i64);  // [runs, 4]
  int64_t* rows = host.data<int64_t>();
  for (const AdamWSegment& run : runs) {
    *rows++ = run.value_offset;
    *rows++ = run.state_offset;
    *rows++ = run.numel;
    *rows++ = run.weight_decay ? 1 : 0;
    value_end_ = std::max(value_end_, run.value_offset + run.numel);
    state_end_ = std::max(state_end_, run.state_offset + run.numel);
  }
  if (device.is_cpu()) {
    runs_ = std::move(host);
    return;
  }
  runs_ = OwnedTensor(host.shape(), DType::i64, device);
  copy_tensor(runs_, host);
}

}  // namespace hai
