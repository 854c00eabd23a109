#pragma once
// GPT-2's byte-level alphabet: each of the 256 byte values is shown as one printable code point (bytes_to_unicode
// in GPT-2's encoder.py; HF's ByteLevel pre-tokenizer). Vocabularies of byte-level BPE tokenizers are written in
// it ("Ġthe" is " the"); the tokenizer itself works on raw bytes, so this converts the vocabulary once.

#include <optional>
#include <string>
#include <string_view>

namespace hai {

// The raw bytes a byte-level string stands for; nullopt when it holds a code point outside the alphabet (an added
// token such as "<|endoftext|>" stored in the vocabulary is not byte-level text). symbols: valid UTF-8.
std::optional<std::string> byte_level_to_bytes(std::string_view symbols);

// The byte-level string of raw bytes.
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace hai
