#pragma once
// Splitting text inputs into documents for hai-data.
//   fortune: the Debian `fortunes` format: entries separated by a line holding a single `%`; one document per entry.
//   lines:   one document per non-empty line (without its newline).
//   file:    one document per file.
//   jsonl:   one JSON object per non-empty line (Megatron's preprocess_data.py input); the document is one of its
//            string fields (TextDatasetOptions::json_key), read by the dataset builder.
// Empty documents (an empty file, an empty entry between two `%` lines) are skipped.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hai {

enum class TextFormat { fortune, lines, file, jsonl };

// Parses "fortune", "lines", "file" or "jsonl"; throws hai::Error otherwise.
TextFormat parse_text_format(std::string_view name);
std::string_view text_format_name(TextFormat format);

// Views into `text`, in order. A fortune entry keeps its own newlines (up to the one before the `%` line); a jsonl
// document is its line, still JSON.
std::vector<std::string_view> split_text_into_documents(std::string_view text, TextFormat format);

struct TextInputs {
  std::vector<std::filesystem::path> files;    // to read, in order
  std::vector<std::filesystem::path> skipped;  // left out (see list_text_inputs)
};

// The files to read for the given inputs (files or directories). A directory contributes its regular files,
// sorted by name, not descending into subdirectories. Symbolic links met in a directory are skipped (the fortunes
// package links `name.u8` to `name`). In fortune format, the strfile companions `*.dat` and `*.u8`, and symbolic
// links, are skipped even when named directly, so that a shell glob over the fortunes directory works.
// Throws hai::Error for an input that does not exist or is neither a file nor a directory.
TextInputs list_text_inputs(const std::vector<std::string>& inputs, TextFormat format);

}  // namespace hai
