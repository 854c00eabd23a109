#include "framework/text/byte_level.h"

#include <array>
#include <cstdint>

#include "framework/text/utf8.h"

namespace hai {
namespace {

// code_points[b]: the code point that shows byte b.
struct ByteLevelAlphabet {
  std::array<uint32_t, 256> code_points{};
  std::array<int16_t, 512> bytes{};  // bytes[code point] (all code points are < 512); -1 outside the alphabet

  ByteLevelAlphabet() {
    bytes.fill(-1);
    uint32_t next_extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      code_points[b] = printable ? b : next_extra++;
      bytes[code_points[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet instance;
  return instance;
}

}  // namespace

std::optional<std::string> byte_level_to_bytes(std::string_view symbols) {
  std::string bytes;
  bytes.reserve(symbols.size());
  size_t pos = 0;
  while (pos < symbols.size()) {
    uint32_t code_point = next_code_point(symbols, pos);
    if (code_point >= 512 || alphabet().bytes[code_point] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(alphabet().bytes[code_point]));
  }
  return bytes;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string symbols;
  symbols.reserve(bytes.size() * 2);
  for (char byte : bytes) append_utf8(alphabet().code_points[static_cast<unsigned char>(byte)], symbols);
  return symbols;
}

}  // namespace hai
