// The tfevents encoding: CRC-32C against published vectors, TFRecord's framing and masking, and the Event protobuf
// bytes, field by field.

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "framework/metrics/crc32c.h"
#include "framework/metrics/tensorboard_event.h"

namespace hai {
namespace {

Bytes bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

template <typename T>
Bytes little_endian(T value) {
  Bytes bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const Bytes& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// RFC 3720 (iSCSI) B.4 and the classic check value.
TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(Bytes(32, 0x00)), 0x8A9136AAu);
  EXPECT_EQ(crc32c(Bytes(32, 0xFF)), 0x62A8AB43u);
  Bytes ascending(32);
  std::iota(ascending.begin(), ascending.end(), uint8_t{0});
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  Bytes descending(ascending.rbegin(), ascending.rend());
  EXPECT_EQ(crc32c(descending), 0x113FDB5Cu);
  EXPECT_EQ(crc32c(Bytes{}), 0u);
}

TEST(Crc32c, MaskedAsTfRecordStoresIt) {
  uint32_t crc = crc32c(bytes_of("123456789"));
  EXPECT_EQ(masked_crc32c(bytes_of("123456789")), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  // The length field of every tfevents file's first record (24 bytes: the file_version event), as TensorFlow
  // writes it: 18 00 00 00 00 00 00 00 a3 7f 4b 22.
  EXPECT_EQ(masked_crc32c(little_endian<uint64_t>(24)), 0x224B7FA3u);
}

TEST(TfRecord, FramesLengthDataAndTheirMaskedCrcs) {
  Bytes data = bytes_of("hello tensorboard");
  Bytes record = tf_record(data);
  Bytes length = little_endian<uint64_t>(data.size());
  EXPECT_EQ(record, concat({length, little_endian(masked_crc32c(length)), data, little_endian(masked_crc32c(data))}));
}

TEST(TensorBoardEvent, FileVersionEvent) {
  Bytes event = file_version_event(1.5);
  Bytes expected = concat({{0x09}, little_endian(1.5), {0x1A, 13}, bytes_of("brain.Event:2")});
  EXPECT_EQ(event, expected);
  EXPECT_EQ(tf_record(event).size(), 8u + 4u + 24u + 4u);  // 24 bytes, as TensorFlow's own first record
}

TEST(TensorBoardEvent, ScalarsEvent) {
  Bytes event = scalars_event(1.5, 300, {{"a", 2.0f}, {"eval/loss", 0.25f}});
  Bytes first = concat({{0x0A, 1}, bytes_of("a"), {0x15}, little_endian(2.0f)});           // Value{tag, simple}
  Bytes second = concat({{0x0A, 9}, bytes_of("eval/loss"), {0x15}, little_endian(0.25f)});
  Bytes summary = concat({{0x0A, static_cast<uint8_t>(first.size())}, first,                // Summary{value...}
                          {0x0A, static_cast<uint8_t>(second.size())}, second});
  Bytes expected = concat({{0x09}, little_endian(1.5),                                     // wall_time
                           {0x10, 0xAC, 0x02},                                              // step 300 (varint)
                           {0x2A, static_cast<uint8_t>(summary.size())}, summary});        // summary
  EXPECT_EQ(event, expected);
}

TEST(TensorBoardEvent, SessionStartEvent) {
  Bytes expected = concat({{0x09}, little_endian(2.0), {0x10, 40}, {0x32, 2, 0x08, 0x01}});
  EXPECT_EQ(session_start_event(2.0, 40), expected);
}

}  // namespace
}  // namespace hai
