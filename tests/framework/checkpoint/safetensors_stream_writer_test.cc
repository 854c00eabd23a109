// SafetensorsStreamWriter: a file written tensor by tensor is byte-identical to write_safetensors' file of the
// same tensors, and writing more, fewer or wrongly sized tensors than declared is refused naming the tensor.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "framework/checkpoint/safetensors_reader.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::ScratchDir;

TEST(SafetensorsStreamWriterTest, StreamedFileEqualsTheOneShotFile) {
  ScratchDir dir;
  std::vector<float> weights = {1.0f, -2.0f, 3.5f, 0.25f, 8.0f, -0.5f};
  std::vector<uint16_t> moments = {0x3f80, 0x4000, 0xc040};
  std::span<const std::byte> weight_bytes = std::as_bytes(std::span(weights));
  std::span<const std::byte> moment_bytes = std::as_bytes(std::span(moments));
  write_safetensors(dir / "whole.safetensors",
                    {{"w", DType::f32, {2, 3}, weight_bytes}, {"m", DType::bf16, {3}, moment_bytes}},
                    {{"format", "pt"}});
  SafetensorsStreamWriter writer(dir / "streamed.safetensors", {{"w", DType::f32, {2, 3}}, {"m", DType::bf16, {3}}},
                                 {{"format", "pt"}});
  writer.write_next(weight_bytes);
  writer.write_next(moment_bytes);
  uint64_t size = writer.finish();
  EXPECT_EQ(size, std::filesystem::file_size(dir / "streamed.safetensors"));
  EXPECT_EQ(testing::file_bytes(dir / "streamed.safetensors"), testing::file_bytes(dir / "whole.safetensors"));
  SafetensorsFile file(dir / "streamed.safetensors");
  std::vector<float> back(6);
  file.read(*file.find("w"), std::as_writable_bytes(std::span(back)));
  EXPECT_EQ(back, weights);
}

TEST(SafetensorsStreamWriterTest, RefusesWhatWasNotDeclared) {
  ScratchDir dir;
  std::vector<float> four(4, 1.0f);
  std::span<const std::byte> bytes = std::as_bytes(std::span(four));
  std::vector<SafetensorsLayoutEntry> reserved = {{"__metadata__", DType::f32, {4}}};
  testing::expect_error([&] { SafetensorsStreamWriter(dir / "a.safetensors", reserved, {}); },
                        {"'__metadata__' is reserved or repeated"});
  EXPECT_FALSE(std::filesystem::exists(dir / "a.safetensors"));  // refused before the file is created

  SafetensorsStreamWriter wrong_size(dir / "b.safetensors", {{"x", DType::f32, {3}}}, {});
  testing::expect_error([&] { wrong_size.write_next(bytes); }, {"tensor 'x' has 16 bytes", "need 12"});

  SafetensorsStreamWriter too_many(dir / "c.safetensors", {{"x", DType::f32, {4}}}, {});
  too_many.write_next(bytes);
  testing::expect_error([&] { too_many.write_next(bytes); }, {"more tensors written than the 1 declared"});

  SafetensorsStreamWriter too_few(dir / "d.safetensors", {{"x", DType::f32, {4}}, {"y", DType::f32, {4}}}, {});
  too_few.write_next(bytes);
  testing::expect_error([&] { too_few.finish(); }, {"1 of the 2 declared tensors written"});
}

}  // namespace
}  // namespace hai
