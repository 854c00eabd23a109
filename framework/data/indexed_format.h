#pragma once
// The Megatron-LM indexed dataset format (docs/formats.md has the byte layout): `prefix.bin` holds the tokens of
// every sequence back to back; `prefix.idx` holds a 34-byte header, then the sequence lengths (int32), the
// sequence byte offsets into .bin (int64) and the document index (int64: document d is the sequences
// [index[d], index[d + 1])). All little-endian.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hai {

inline constexpr std::array<char, 9> kIndexMagic = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kIndexVersion = 1;

// Byte offsets of the header fields in .idx.
inline constexpr size_t kIndexVersionOffset = 9;         // uint64
inline constexpr size_t kIndexDTypeOffset = 17;          // uint8, a TokenDType code
inline constexpr size_t kIndexSequenceCountOffset = 18;  // uint64
inline constexpr size_t kIndexDocumentCountOffset = 26;  // uint64: entries of the document index (documents + 1)
inline constexpr size_t kIndexHeaderBytes = 34;

inline std::string index_path(const std::string& prefix) { return prefix + ".idx"; }
inline std::string data_path(const std::string& prefix) { return prefix + ".bin"; }

}  // namespace hai
