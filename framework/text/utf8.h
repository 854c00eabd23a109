#pragma once
// UTF-8 helpers for the tokenizer. Text from files is bytes; the tokenizer works on valid UTF-8 only, so invalid
// sequences are replaced first, the way the WHATWG Encoding Standard's decoder (Node's Buffer.toString('utf8'),
// Python's bytes.decode('utf-8', errors='replace')) does: each maximal ill-formed subpart becomes one U+FFFD.

#include <cstdint>
#include <string>
#include <string_view>

namespace hai {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 prefix of text (text.size() when all of it is valid).
size_t valid_utf8_prefix(std::string_view text);

// text with every maximal ill-formed subpart replaced by U+FFFD. Returns the number of replacements made.
size_t replace_invalid_utf8(std::string_view text, std::string& out);

// Appends the UTF-8 encoding of a code point (<= 0x10FFFF, not a surrogate) to out.
void append_utf8(uint32_t code_point, std::string& out);

// Decodes the code point starting at text[pos] (valid UTF-8 assumed) and advances pos past it.
uint32_t next_code_point(std::string_view text, size_t& pos);

}  // namespace hai
