#include "framework/core/rng.h"

#include <cmath>
#include <numbers>

namespace hai {
namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;
constexpr uint32_t kWeyl1 = 0xBB67AE85;

void mul_hi_lo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(kMultiplier0, counter[0], &hi0, &lo0);
    mul_hi_lo(kMultiplier1, counter[2], &hi1, &lo1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
    key = {key[0] + kWeyl0, key[1] + kWeyl1};
  }
  return counter;
}

PhiloxCounter CounterRng::block(uint64_t block) const {
  PhiloxCounter counter = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                           static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)};
  PhiloxKey key = {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)};
  return philox4x32_10(counter, key);
}

uint32_t CounterRng::bits(uint64_t index) const { return block(index / 4)[index % 4]; }

float CounterRng::uniform(uint64_t index) const {
  return static_cast<float>(bits(index) >> 8) * (1.0f / 16777216.0f);
}

float CounterRng::normal(uint64_t index) const {
  PhiloxCounter words = block(index / 2);
  int half = static_cast<int>(index % 2) * 2;
  // u1 in (0, 1] so that log(u1) is finite.
  double u1 = (static_cast<double>(words[half]) + 1.0) / 4294967296.0;
  double u2 = static_cast<double>(words[half + 1]) / 4294967296.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

}  // namespace hai
