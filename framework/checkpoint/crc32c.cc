#include "framework/checkpoint/crc32c.h"

#include <array>

namespace hai {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

// table[b] = the CRC register after shifting the byte b through eight reflected polynomial steps.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ kReflectedPolynomial : crc >> 1;
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(std::span<const std::byte> bytes, uint32_t previous) {
  uint32_t crc = ~previous;
  for (std::byte value : bytes) crc = kTable[(crc ^ static_cast<uint32_t>(value)) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace hai
