#include "framework/text/added_tokens.h"

#include <algorithm>

#include "framework/text/utf8.h"

namespace hai {

bool is_unicode_whitespace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

// The start of the whitespace that ends text[begin, end).
uint32_t whitespace_start(std::string_view text, uint32_t begin, uint32_t end) {
  uint32_t start = end;
  while (start > begin) {
    uint32_t previous = start - 1;
    while (previous > begin && (static_cast<unsigned char>(text[previous]) & 0xC0) == 0x80) --previous;
    size_t pos = previous;
    if (!is_unicode_whitespace(next_code_point(text, pos))) break;
    start = previous;
  }
  return start;
}

// The end of the whitespace that starts text[begin, end).
uint32_t whitespace_end(std::string_view text, uint32_t begin, uint32_t end) {
  size_t pos = begin;
  while (pos < end) {
    size_t next = pos;
    if (!is_unicode_whitespace(next_code_point(text, next))) break;
    pos = next;
  }
  return static_cast<uint32_t>(pos);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& content = tokens_[t].content;
    if (content.empty()) continue;
    first_byte_[static_cast<unsigned char>(content[0])] = true;
    int32_t node = 0;
    for (char c : content) {
      auto byte = static_cast<unsigned char>(c);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& children = nodes_[static_cast<size_t>(node)].children;
        children.insert(std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1})),
                        {byte, next});
      }
      node = next;
    }
    nodes_[static_cast<size_t>(node)].token = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes_[static_cast<size_t>(node)].children;
  auto found = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
  return found != children.end() && found->first == byte ? found->second : -1;
}

void AddedTokenMatcher::split(std::string_view text, uint32_t begin, uint32_t end,
                              std::vector<TextSection>& sections) const {
  uint32_t text_start = begin;  // start of the text not yet emitted
  uint32_t pos = begin;
  while (pos < end) {
    if (!first_byte_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    int32_t node = 0, token = -1;
    uint32_t match_end = pos;
    for (uint32_t i = pos; i < end; ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (nodes_[static_cast<size_t>(node)].token >= 0) {
        token = nodes_[static_cast<size_t>(node)].token;
        match_end = i + 1;
      }
    }
    if (token < 0) {
      ++pos;
      continue;
    }
    const AddedToken& added = tokens_[static_cast<size_t>(token)];
    uint32_t match_begin = added.lstrip ? whitespace_start(text, text_start, pos) : pos;
    if (added.rstrip) match_end = whitespace_end(text, match_end, end);
    sections.push_back({text_start, match_begin, -1});
    sections.push_back({match_begin, match_end, added.id});
    text_start = pos = match_end;
  }
  sections.push_back({text_start, end, -1});
}

}  // namespace hai
