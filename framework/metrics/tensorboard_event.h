#pragma once
// The bytes of a TensorBoard event file (tfevents), encoded by hand: a file is a sequence of TFRecords
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
// whose data are serialized tensorflow.Event protobufs. The fields written (tensorflow/core/util/event.proto,
// summary.proto):
//   Event      { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//                SessionLog session_log = 6; }
//   Summary    { repeated Value value = 1; }    Value { string tag = 1; float simple_value = 2; }
//   SessionLog { SessionStatus status = 1; }    (START = 1: TensorBoard drops the events at and after its step
//                                                that an earlier file holds: the steps a resumed run redoes)

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hai {

using Bytes = std::vector<uint8_t>;

struct TensorBoardScalar {
  std::string tag;
  float value = 0.0f;
};

// The first event of every file: {wall_time, file_version: "brain.Event:2"}.
Bytes file_version_event(double wall_time);
// One event holding `scalars` at `step`.
Bytes scalars_event(double wall_time, int64_t step, const std::vector<TensorBoardScalar>& scalars);
// A SessionLog START at `step` (a run resumed from the checkpoint of step `step`).
Bytes session_start_event(double wall_time, int64_t step);

// `data` framed as one TFRecord.
Bytes tf_record(const Bytes& data);

}  // namespace hai
