#include "framework/checkpoint/crc32c.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace hai {
namespace {

std::span<const std::byte> bytes_of(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

TEST(Crc32c, CheckValue) { EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u); }

TEST(Crc32c, EmptyIsZero) { EXPECT_EQ(crc32c({}), 0u); }

// The test vectors of RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32c, Rfc3720Vectors) {
  std::vector<std::byte> zeros(32, std::byte{0x00});
  std::vector<std::byte> ones(32, std::byte{0xff});
  std::vector<std::byte> ascending(32);
  std::vector<std::byte> descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<std::byte>(i);
    descending[i] = static_cast<std::byte>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, ContinuesAcrossPieces) {
  std::span<const std::byte> all = bytes_of("123456789");
  for (size_t split = 0; split <= all.size(); ++split) {
    EXPECT_EQ(crc32c(all.subspan(split), crc32c(all.first(split))), 0xE3069283u) << "split at " << split;
  }
}

}  // namespace
}  // namespace hai
