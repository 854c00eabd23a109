#include "framework/data/text_documents.h"

#include <algorithm>

#include "framework/core/error.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

// The next line of text starting at `begin`, without its newline; `next` is set past the newline.
std::string_view line_at(std::string_view text, size_t begin, size_t* next) {
  size_t end = text.find('\n', begin);
  if (end == std::string_view::npos) {
    *next = text.size();
    return text.substr(begin);
  }
  *next = end + 1;
  return text.substr(begin, end - begin);
}

std::vector<std::string_view> split_fortunes(std::string_view text) {
  std::vector<std::string_view> documents;
  size_t entry_begin = 0;
  size_t position = 0;
  while (position < text.size()) {
    size_t line_begin = position;
    std::string_view line = line_at(text, line_begin, &position);
    if (line == "%") {
      if (line_begin > entry_begin) documents.push_back(text.substr(entry_begin, line_begin - entry_begin));
      entry_begin = position;
    }
  }
  if (text.size() > entry_begin) documents.push_back(text.substr(entry_begin));
  return documents;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> documents;
  size_t position = 0;
  while (position < text.size()) {
    std::string_view line = line_at(text, position, &position);
    if (!line.empty()) documents.push_back(line);
  }
  return documents;
}

bool is_fortune_companion(const fs::path& path) {
  return path.extension() == ".dat" || path.extension() == ".u8";
}

// Whether a path found in a directory, or named directly, is read; the others are skipped.
bool is_wanted(const fs::path& path, TextFormat format, bool from_directory) {
  bool is_link = fs::is_symlink(fs::symlink_status(path));
  if (is_link && (from_directory || format == TextFormat::fortune)) return false;
  if (format == TextFormat::fortune && is_fortune_companion(path)) return false;
  return fs::is_regular_file(path);
}

void add_directory(const fs::path& directory, TextFormat format, TextInputs& inputs) {
  std::vector<fs::path> entries;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) entries.push_back(entry.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& entry : entries) {
    (is_wanted(entry, format, true) ? inputs.files : inputs.skipped).push_back(entry);
  }
}

}  // namespace

TextFormat parse_text_format(std::string_view name) {
  if (name == "fortune") return TextFormat::fortune;
  if (name == "lines") return TextFormat::lines;
  if (name == "file") return TextFormat::file;
  if (name == "jsonl") return TextFormat::jsonl;
  HAI_THROW("unknown text format \"{}\" (expected fortune, lines, file or jsonl)", name);
}

std::string_view text_format_name(TextFormat format) {
  switch (format) {
    case TextFormat::fortune: return "fortune";
    case TextFormat::lines: return "lines";
    case TextFormat::file: return "file";
    case TextFormat::jsonl: return "jsonl";
  }
  return "invalid";
}

std::vector<std::string_view> split_text_into_documents(std::string_view text, TextFormat format) {
  switch (format) {
    case TextFormat::fortune: return split_fortunes(text);
    case TextFormat::lines:
    case TextFormat::jsonl: return split_lines(text);
    case TextFormat::file: break;
  }
  if (text.empty()) return {};
  return {text};
}

TextInputs list_text_inputs(const std::vector<std::string>& inputs, TextFormat format) {
  TextInputs result;
  for (const std::string& input : inputs) {
    fs::path path(input);
    std::error_code error;
    fs::file_status status = fs::status(path, error);
    if (!fs::exists(status)) HAI_THROW("input not found: {}", input);
    if (fs::is_directory(status)) {
      add_directory(path, format, result);
    } else if (fs::is_regular_file(status)) {
      (is_wanted(path, format, false) ? result.files : result.skipped).push_back(path);
    } else {
      HAI_THROW("input {} is neither a regular file nor a directory", input);
    }
  }
  return result;
}

}  // namespace hai
