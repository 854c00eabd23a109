#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "framework/checkpoint/safetensors_reader.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::expect_error;
using testing::file_bytes;
using testing::ScratchDir;
using testing::write_bytes;

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span<const T>(values));
}

template <typename T>
std::vector<T> read_values(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsEntry* entry = file.find(name);
  EXPECT_NE(entry, nullptr) << name;
  std::vector<T> values(entry->bytes() / sizeof(T));
  file.read(*entry, std::as_writable_bytes(std::span<T>(values)));
  return values;
}

// A file of `header` (unpadded) followed by `data_bytes` zero bytes.
std::vector<char> raw_file(const std::string& header, size_t data_bytes) {
  uint64_t length = header.size();
  std::vector<char> bytes(8 + header.size() + data_bytes, '\0');
  std::memcpy(bytes.data(), &length, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

TEST(Safetensors, WritesTheExactLayout) {
  ScratchDir dir;
  std::vector<float> a = {1.0f, 2.0f};
  std::vector<uint8_t> b = {7, 8, 9};
  uint64_t size = write_safetensors(dir / "x.safetensors",
                                    {{"a", DType::f32, {2}, bytes_of(a)}, {"b", DType::u8, {3}, bytes_of(b)}},
                                    {{"format", "pt"}});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::vector<char> bytes = file_bytes(dir / "x.safetensors");
  ASSERT_EQ(bytes.size(), size);
  ASSERT_EQ(size, 8 + header.size() + 11);
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  EXPECT_EQ(length, header.size());
  EXPECT_EQ(length % 8, 0u);
  EXPECT_EQ(std::string(bytes.data() + 8, length), header);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + length, a.data(), 8), 0);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + length + 8, b.data(), 3), 0);
}

TEST(Safetensors, RoundTripsDtypesAndShapes) {
  ScratchDir dir;
  std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, -6.5f};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x7f80};
  std::vector<uint16_t> f16 = {0x3c00};
  std::vector<uint8_t> e4m3 = {0x38, 0xb8, 0x7e, 0x00};
  std::vector<int32_t> i32 = {-1, 2147483647};
  std::vector<int64_t> i64 = {-9000000000LL};
  std::vector<float> scalar = {42.0f};
  std::vector<float> empty;
  write_safetensors(dir / "x.safetensors",
                    {{"f32", DType::f32, {2, 3}, bytes_of(f32)},
                     {"bf16", DType::bf16, {3}, bytes_of(bf16)},
                     {"f16", DType::f16, {1, 1, 1}, bytes_of(f16)},
                     {"e4m3", DType::e4m3, {2, 2}, bytes_of(e4m3)},
                     {"i32", DType::i32, {2}, bytes_of(i32)},
                     {"i64", DType::i64, {1}, bytes_of(i64)},
                     {"scalar", DType::f32, {}, bytes_of(scalar)},
                     {"empty", DType::f32, {0, 4}, bytes_of(empty)}},
                    {{"format", "pt"}, {"note", "hello"}});
  SafetensorsFile file(dir / "x.safetensors");
  EXPECT_EQ(file.tensors().size(), 8u);
  EXPECT_EQ(file.metadata().at("note"), "hello");
  EXPECT_EQ(read_values<float>(file, "f32"), f32);
  EXPECT_EQ(read_values<uint16_t>(file, "bf16"), bf16);
  EXPECT_EQ(read_values<uint16_t>(file, "f16"), f16);
  EXPECT_EQ(read_values<uint8_t>(file, "e4m3"), e4m3);
  EXPECT_EQ(read_values<int32_t>(file, "i32"), i32);
  EXPECT_EQ(read_values<int64_t>(file, "i64"), i64);
  EXPECT_EQ(read_values<float>(file, "scalar"), scalar);
  EXPECT_EQ(file.find("f32")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.find("e4m3")->dtype, DType::e4m3);
  EXPECT_EQ(file.find("scalar")->shape, std::vector<int64_t>{});
  EXPECT_EQ(file.find("empty")->bytes(), 0u);
  EXPECT_EQ(file.find("absent"), nullptr);
}

TEST(Safetensors, ReadsUnpaddedHeadersAndAnyKeyOrder) {
  ScratchDir dir;
  std::vector<char> bytes = raw_file(
      R"({"b":{"data_offsets":[4,6],"shape":[1],"dtype":"BF16"},"a":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
      6);
  bytes[bytes.size() - 6] = 5;
  write_bytes(dir / "x.safetensors", bytes);
  SafetensorsFile file(dir / "x.safetensors");
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "a");  // in data order
  EXPECT_EQ(read_values<int32_t>(file, "a"), std::vector<int32_t>{5});
}

struct BadFile {
  std::string header;
  size_t data_bytes;
  std::string fragment;  // expected in the message besides the path
};

TEST(Safetensors, RefusesMalformedFilesNamingFileAndTensor) {
  ScratchDir dir;
  std::vector<BadFile> cases = {
      {"", 0, "not start with"},
      {"[1, 2]", 0, "not start with"},
      {"{\"a\": ", 0, "not valid JSON"},
      {R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8, "tensor 'w' has dtype 'F64'"},
      {R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "tensor 'w' spans 8 bytes"},
      {R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "tensor 'w'"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "tensor 'w' ends before"},
      {R"({"w":{"dtype":"F32","shape":[2]}})", 8, "tensor 'w' needs data_offsets"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8, "unknown field 'x'"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "tensor 'w' ends at byte 8"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 12, "cover 8 of the 12"},
      {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "gap in the data before tensor 'w'"},
      {R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       8, "overlaps"},
      {R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0, "too large"},
      {R"({"__metadata__":{"a":1}})", 0, "__metadata__ 'a'"},
  };
  for (const BadFile& bad : cases) {
    SCOPED_TRACE(bad.header);
    write_bytes(dir / "bad.safetensors", raw_file(bad.header, bad.data_bytes));
    expect_error([&] { SafetensorsFile file(dir / "bad.safetensors"); }, {dir / "bad.safetensors", bad.fragment});
  }
}

TEST(Safetensors, RefusesADeeplyNestedHeaderWithoutOverflowingTheStack) {
  ScratchDir dir;
  constexpr size_t kDepth = 200'000;
  write_bytes(dir / "deep.safetensors",
              raw_file("{\"w\":" + std::string(kDepth, '[') + std::string(kDepth, ']') + "}", 0));
  expect_error([&] { SafetensorsFile file(dir / "deep.safetensors"); }, {dir / "deep.safetensors", "tensor 'w'"});
}

TEST(Safetensors, RefusesShortFilesAndHeaderLengthsBeyondTheFile) {
  ScratchDir dir;
  write_bytes(dir / "short.safetensors", {1, 2, 3});
  expect_error([&] { SafetensorsFile file(dir / "short.safetensors"); }, {dir / "short.safetensors", "too short"});
  std::vector<char> bytes = raw_file("{}", 0);
  bytes[0] = 9;  // claims a 9-byte header in a 10-byte file
  write_bytes(dir / "long.safetensors", bytes);
  expect_error([&] { SafetensorsFile file(dir / "long.safetensors"); }, {dir / "long.safetensors", "header length 9"});
  expect_error([&] { SafetensorsFile file(dir / "missing.safetensors"); }, {dir / "missing.safetensors"});
}

}  // namespace
}  // namespace hai
