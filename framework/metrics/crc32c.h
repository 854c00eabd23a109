#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord files, and TFRecord's masked form.

#include <cstdint>
#include <span>

namespace hai {

uint32_t crc32c(std::span<const uint8_t> bytes);

// ((crc >> 15) | (crc << 17)) + 0xa282ead8: what TFRecord stores, so that a CRC of data holding CRCs stays strong.
uint32_t masked_crc32c(std::span<const uint8_t> bytes);

}  // namespace hai
