#include "framework/text/utf8.h"

namespace hai {
namespace {

// The length of the well-formed sequence starting at text[pos] (Unicode table 3-7), or, when it is ill-formed,
// minus the length of its maximal ill-formed subpart (at least 1).
int sequence_length(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  int length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < length; ++i) {
    if (pos + i >= text.size()) return -i;
    unsigned char next = byte(pos + i);
    if (i == 1 ? (next < low || next > high) : (next < 0x80 || next > 0xBF)) return -i;
  }
  return length;
}

}  // namespace

size_t valid_utf8_prefix(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // NOTE: ASCII runs dominate real text; skip them eight bytes at a time.
    while (pos + 8 <= text.size()) {
      uint64_t word = 0;
      for (int i = 0; i < 8; ++i) word |= static_cast<uint64_t>(static_cast<unsigned char>(text[pos + i])) << (8 * i);
      if (word & 0x8080808080808080ULL) break;
      pos += 8;
    }
    if (pos >= text.size()) break;
    int length = sequence_length(text, pos);
    if (length < 0) return pos;
    pos += length;
  }
  return text.size();
}

size_t replace_invalid_utf8(std::string_view text, std::string& out) {
  out.clear();
  out.reserve(text.size());
  size_t replacements = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t valid = valid_utf8_prefix(text.substr(pos));
    out.append(text.substr(pos, valid));
    pos += valid;
    if (pos >= text.size()) break;
    out.append(kReplacementCharacter);
    ++replacements;
    pos += -sequence_length(text, pos);
  }
  return replacements;
}

void append_utf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

uint32_t next_code_point(std::string_view text, size_t& pos) {
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(text[i])); };
  uint32_t lead = byte(pos);
  if (lead < 0x80) {
    pos += 1;
    return lead;
  }
  if (lead < 0xE0) {
    pos += 2;
    return ((lead & 0x1F) << 6) | (byte(pos - 1) & 0x3F);
  }
  if (lead < 0xF0) {
    pos += 3;
    return ((lead & 0x0F) << 12) | ((byte(pos - 2) & 0x3F) << 6) | (byte(pos - 1) & 0x3F);
  }
  pos += 4;
  return ((lead & 0x07) << 18) | ((byte(pos - 3) & 0x3F) << 12) | ((byte(pos - 2) & 0x3F) << 6) |
         (byte(pos - 1) & 0x3F);
}

}  // namespace hai
