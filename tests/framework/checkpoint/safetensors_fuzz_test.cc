// Mutated and truncated safetensors files must only ever be refused with hai::Error: never a crash, an
// out-of-bounds read or another exception type. Mutations come from the counter RNG, so every run is the same.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "framework/checkpoint/safetensors_reader.h"
#include "framework/checkpoint/safetensors_writer.h"
#include "framework/core/rng.h"
#include "tests/framework/checkpoint/checkpoint_test_util.h"

namespace hai {
namespace {

using testing::file_bytes;
using testing::ScratchDir;
using testing::write_bytes;
using namespace std::string_view_literals;

constexpr int kCases = 3000;

std::vector<char> valid_file(const ScratchDir& dir) {
  std::vector<float> weights(12, 0.5f);
  std::vector<uint16_t> moments(5, 0x3f80);
  std::vector<int64_t> counters = {3, 4};
  std::string path = dir / "valid.safetensors";
  write_safetensors(path,
                    {{"model.layers.0.weight", DType::f32, {3, 4}, std::as_bytes(std::span(weights))},
                     {"exp_avg", DType::bf16, {5}, std::as_bytes(std::span(moments))},
                     {"step", DType::i64, {2}, std::as_bytes(std::span(counters))}},
                    {{"format", "pt"}});
  return file_bytes(path);
}

// Draws from the counter RNG, one index after another.
class Draws {
 public:
  explicit Draws(uint64_t stream) : rng_(2024, stream) {}
  uint32_t below(uint32_t bound) { return rng_.bits(next_++) % bound; }

 private:
  CounterRng rng_;
  uint64_t next_ = 0;
};

std::vector<char> mutate(std::vector<char> bytes, Draws& draws) {
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  size_t header_end = static_cast<size_t>(8 + header_length);
  constexpr std::string_view kJsonish = "{}[]\",:0123456789-+.eE \\u\x00\xff"sv;
  switch (draws.below(5)) {
    case 0:  // flip bits anywhere in the length or the header
      for (uint32_t n = 1 + draws.below(4); n > 0; --n) {
        bytes[draws.below(static_cast<uint32_t>(header_end))] ^= static_cast<char>(1 << draws.below(8));
      }
      break;
    case 1:  // truncate
      bytes.resize(draws.below(static_cast<uint32_t>(bytes.size())));
      break;
    case 2: {  // another header length, near the true one or anything
      uint64_t length = draws.below(2) ? header_length + draws.below(64) - 32
                                       : (uint64_t{draws.below(0xffffffffu)} << 32) | draws.below(0xffffffffu);
      std::memcpy(bytes.data(), &length, 8);
      break;
    }
    case 3:  // JSON-ish characters written into the header
      for (uint32_t n = 1 + draws.below(6); n > 0; --n) {
        char replacement = kJsonish[draws.below(static_cast<uint32_t>(kJsonish.size()))];
        bytes[8 + draws.below(static_cast<uint32_t>(header_length))] = replacement;
      }
      break;
    default:  // bytes appended or removed at the end of the data
      if (draws.below(2)) {
        bytes.insert(bytes.end(), 1 + draws.below(16), 'x');
      } else {
        bytes.resize(bytes.size() - 1 - draws.below(8));
      }
  }
  return bytes;
}

TEST(SafetensorsFuzz, MutatedFilesOnlyEverThrowHaiError) {
  ScratchDir dir;
  std::vector<char> valid = valid_file(dir);
  std::string path = dir / "fuzz.safetensors";
  int refused = 0;
  int accepted = 0;
  for (int i = 0; i < kCases; ++i) {
    Draws draws(static_cast<uint64_t>(i));
    std::filesystem::remove(path);  // NOTE: a fresh file, not a truncated one, which ext4 flushes on close
    write_bytes(path, mutate(valid, draws));
    try {
      SafetensorsFile file(path);
      for (const SafetensorsEntry& entry : file.tensors()) {
        std::vector<std::byte> bytes(entry.bytes());
        file.read(entry, bytes);
      }
      ++accepted;
    } catch (const Error& error) {
      EXPECT_NE(error.message().find(path), std::string::npos) << error.message();
      ++refused;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "case " << i << ": not a hai::Error: " << error.what();
    }
  }
  EXPECT_EQ(refused + accepted, kCases);
  EXPECT_GT(refused, kCases / 2);  // most mutations break the file
  EXPECT_GT(accepted, 0);          // some are harmless (a changed digit of padding, a flipped space)
}

}  // namespace
}  // namespace hai
