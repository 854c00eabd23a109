#include "framework/text/pre_tokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace hai {
namespace {

// GPT-2's pattern, used by ByteLevel with use_regex (HF tokenizers' byte_level.rs).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

SplitBehavior parse_behavior(const nlohmann::json& value, const std::string& field) {
  std::string name = value.is_string() ? value.get<std::string>() : value.dump();
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  HAI_THROW("{}: unknown split behavior {} (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)", field,
            name);
}

bool bool_field(const nlohmann::json& config, const char* key, bool fallback, const std::string& field) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_boolean()) HAI_THROW("{}.{}: expected true or false, got {}", field, key, config[key].dump());
  return config[key].get<bool>();
}

}  // namespace

std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#&~ ").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

PreTokenizer::PreTokenizer(const nlohmann::json& config, std::string_view field) {
  if (!config.is_null()) add_steps(config, std::string(field));
}

void PreTokenizer::add_steps(const nlohmann::json& config, const std::string& field) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    HAI_THROW("{}: expected an object with a \"type\", got {}", field, config.dump().substr(0, 200));
  }
  if (byte_level_) HAI_THROW("{}: a step after ByteLevel is not supported (ByteLevel must come last)", field);
  std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    const nlohmann::json& steps = config.value("pretokenizers", nlohmann::json::array());
    for (size_t i = 0; i < steps.size(); ++i) add_steps(steps[i], fmt::format("{}.pretokenizers[{}]", field, i));
  } else if (type == "Split") {
    const nlohmann::json& pattern = config.value("pattern", nlohmann::json());
    Step step;
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      step.regex.emplace_back(pattern["Regex"].get<std::string>(), field + ".pattern.Regex");
    } else if (pattern.contains("String") && pattern["String"].is_string()) {
      step.regex.emplace_back(escape_regex(pattern["String"].get<std::string>()), field + ".pattern.String");
    } else {
      HAI_THROW("{}.pattern: expected {{\"Regex\": ...}} or {{\"String\": ...}}, got {}", field, pattern.dump());
    }
    step.behavior = parse_behavior(config.value("behavior", nlohmann::json()), field + ".behavior");
    step.invert = bool_field(config, "invert", false, field);
    steps_.push_back(std::move(step));
  } else if (type == "Digits") {
    Step step;
    step.regex.emplace_back(R"(\p{N})", field);
    bool individual = bool_field(config, "individual_digits", false, field);
    step.behavior = individual ? SplitBehavior::isolated : SplitBehavior::contiguous;
    steps_.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    if (bool_field(config, "add_prefix_space", true, field)) {
      Step step;
      step.prefix_space = true;
      steps_.push_back(std::move(step));
    }
    if (bool_field(config, "use_regex", true, field)) {
      Step step;
      step.regex.emplace_back(kGpt2Pattern, field + " (GPT-2's pattern)");
      steps_.push_back(std::move(step));
    }
    byte_level_ = true;
  } else {
    HAI_THROW("{}.type: {} is not supported (supported: Sequence, Split, Digits, ByteLevel)", field, type);
  }
}

void PreTokenizer::split(std::string_view text, PreTokenizerScratch& scratch) const {
  HAI_CHECK(text.size() < (uint64_t{1} << 31), "a document of {} bytes is too long to tokenize (< 2 GiB)", text.size());
  scratch.arena.assign(text);
  scratch.pieces.clear();
  if (!text.empty()) scratch.pieces.push_back({0, static_cast<uint32_t>(text.size())});
  for (const Step& step : steps_) {
    if (step.prefix_space) {
      apply_prefix_space(scratch);
    } else {
      apply_split(step, scratch);
    }
  }
}

void PreTokenizer::apply_prefix_space(PreTokenizerScratch& scratch) {
  for (TextPiece& piece : scratch.pieces) {
    if (scratch.arena[piece.begin] == ' ') continue;
    auto begin = static_cast<uint32_t>(scratch.arena.size());
    scratch.arena.push_back(' ');
    scratch.arena.append(scratch.arena, piece.begin, piece.end - piece.begin);
    piece = {begin, static_cast<uint32_t>(scratch.arena.size())};
  }
}

// HF tokenizers' NormalizedString::split: the piece is cut into matches and the text between them, which the
// behavior then keeps, drops or merges; empty pieces are dropped.
void PreTokenizer::apply_split(const Step& step, PreTokenizerScratch& scratch) {
  struct Segment {
    TextPiece range;
    bool is_match;
  };
  std::vector<Segment> segments;  // NOTE: small and short-lived; pieces dominate the cost, not this vector
  scratch.next_pieces.clear();
  for (const TextPiece& piece : scratch.pieces) {
    std::string_view text(scratch.arena.data() + piece.begin, piece.end - piece.begin);
    scratch.matches.clear();
    step.regex.front().find_all(text, scratch.matches);
    segments.clear();
    uint32_t previous = 0;
    for (const RegexMatch& match : scratch.matches) {
      if (previous != match.begin) segments.push_back({{previous, match.begin}, step.invert});
      segments.push_back({{match.begin, match.end}, !step.invert});
      previous = match.end;
    }
    if (previous != text.size()) segments.push_back({{previous, static_cast<uint32_t>(text.size())}, step.invert});

    std::vector<TextPiece>& out = scratch.next_pieces;
    size_t first = out.size();
    bool previous_match = false;
    switch (step.behavior) {
      case SplitBehavior::removed:
        for (const Segment& s : segments) {
          if (!s.is_match) out.push_back(s.range);
        }
        break;
      case SplitBehavior::isolated:
        for (const Segment& s : segments) out.push_back(s.range);
        break;
      case SplitBehavior::merged_with_previous:
        for (const Segment& s : segments) {
          if (s.is_match && !previous_match && out.size() > first) {
            out.back().end = s.range.end;
          } else {
            out.push_back(s.range);
          }
          previous_match = s.is_match;
        }
        break;
      case SplitBehavior::merged_with_next:
        for (size_t i = segments.size(); i-- > 0;) {
          const Segment& s = segments[i];
          if (s.is_match && !previous_match && out.size() > first) {
            out.back().begin = s.range.begin;
          } else {
            out.push_back(s.range);
          }
          previous_match = s.is_match;
        }
        std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
        break;
      case SplitBehavior::contiguous:
        for (const Segment& s : segments) {
          if (s.is_match == previous_match && out.size() > first) {
            out.back().end = s.range.end;
          } else {
            out.push_back(s.range);
          }
          previous_match = s.is_match;
        }
        break;
    }
    // Back to arena offsets, dropping empty pieces.
    size_t kept = first;
    for (size_t i = first; i < out.size(); ++i) {
      if (out[i].begin == out[i].end) continue;
      out[kept++] = {piece.begin + out[i].begin, piece.begin + out[i].end};
    }
    out.resize(kept);
  }
  std::swap(scratch.pieces, scratch.next_pieces);
}

}  // namespace hai
