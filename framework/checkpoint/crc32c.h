#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every tensor slice in a checkpoint.
// Software, table-driven (one byte per step); crc32c("123456789") = 0xE3069283.

#include <cstddef>
#include <cstdint>
#include <span>

namespace hai {

// The CRC32C of `bytes`, continuing from `previous` (the CRC of the bytes before them; 0 to start).
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t previous = 0);

}  // namespace hai
