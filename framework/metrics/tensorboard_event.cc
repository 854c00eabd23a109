#include "framework/metrics/tensorboard_event.h"

#include <bit>
#include <cstring>

#include "framework/metrics/crc32c.h"

namespace hai {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// The protobuf fields of the messages written (tensorboard_event.h).
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5,
                   kEventSessionLog = 6;
constexpr uint32_t kSummaryValue = 1, kValueTag = 1, kValueSimpleValue = 2;
constexpr uint32_t kSessionLogStatus = 1, kSessionLogStart = 1;

void put_varint(Bytes& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

template <typename T>
void put_little_endian(Bytes& out, T value) {
  static_assert(std::endian::native == std::endian::little, "the tfevents writer assumes a little-endian host");
  size_t end = out.size();
  out.resize(end + sizeof(T));
  std::memcpy(out.data() + end, &value, sizeof(T));
}

void put_key(Bytes& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

void put_bytes(Bytes& out, uint32_t field, const uint8_t* data, size_t size) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, size);
  out.insert(out.end(), data, data + size);
}

void put_string(Bytes& out, uint32_t field, const std::string& text) {
  put_bytes(out, field, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

void put_message(Bytes& out, uint32_t field, const Bytes& message) {
  put_bytes(out, field, message.data(), message.size());
}

// Event {wall_time, step} (step 0 is the default and, as protobuf does, not written).
Bytes event_header(double wall_time, int64_t step) {
  Bytes event;
  put_key(event, kEventWallTime, kFixed64);
  put_little_endian(event, wall_time);
  if (step != 0) {
    put_key(event, kEventStep, kVarint);
    put_varint(event, static_cast<uint64_t>(step));
  }
  return event;
}

}  // namespace

Bytes file_version_event(double wall_time) {
  Bytes event = event_header(wall_time, 0);
  put_string(event, kEventFileVersion, "brain.Event:2");
  return event;
}

Bytes scalars_event(double wall_time, int64_t step, const std::vector<TensorBoardScalar>& scalars) {
  Bytes summary;
  for (const TensorBoardScalar& scalar : scalars) {
    Bytes value;
    put_string(value, kValueTag, scalar.tag);
    put_key(value, kValueSimpleValue, kFixed32);
    put_little_endian(value, scalar.value);
    put_message(summary, kSummaryValue, value);
  }
  Bytes event = event_header(wall_time, step);
  put_message(event, kEventSummary, summary);
  return event;
}

Bytes session_start_event(double wall_time, int64_t step) {
  Bytes session_log;
  put_key(session_log, kSessionLogStatus, kVarint);
  put_varint(session_log, kSessionLogStart);
  Bytes event = event_header(wall_time, step);
  put_message(event, kEventSessionLog, session_log);
  return event;
}

Bytes tf_record(const Bytes& data) {
  Bytes record;
  put_little_endian(record, static_cast<uint64_t>(data.size()));
  put_little_endian(record, masked_crc32c(std::span<const uint8_t>(record.data(), sizeof(uint64_t))));
  record.insert(record.end(), data.begin(), data.end());
  put_little_endian(record, masked_crc32c(data));
  return record;
}

}  // namespace hai
