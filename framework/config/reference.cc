#include "framework/config/reference.h"

#include "framework/config/schema.h"

namespace hai {
namespace {

// A markdown table cell: '|' would end the cell.
std::string table_cell(const std::string& text) {
  std::string cell;
  for (char c : text) {
    if (c == '|') cell += '\\';
    cell += c;
  }
  return cell;
}

std::string top_section(const std::string& path) { return path.substr(0, path.find('.')); }

}  // namespace

std::string config_reference_markdown() {
  const Config defaults;
  std::string text;
  std::string section;
  for (const ConfigKey& key : config_schema()) {
    if (top_section(key.path) != section) {
      section = top_section(key.path);
      text += "\n### `" + section + "`\n\n| key | type | default | rule | description |\n|---|---|---|---|---|\n";
    }
    text += "| `" + key.path + "` | " + table_cell(key.type) + " | `" + table_cell(key.text(defaults)) + "` | " +
            table_cell(key.rule) + " | " + table_cell(key.doc) + " |\n";
  }
  return text;
}

}  // namespace hai
