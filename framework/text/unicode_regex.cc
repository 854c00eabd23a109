#include "framework/text/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "framework/core/error.h"

namespace hai {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// Per-thread match state: match data (one pair: the whole match), and a JIT stack larger than PCRE2's 32 KiB
// default so that long runs of spaces or letters never hit the limit.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);

  MatchState() {
    HAI_CHECK(data && context && jit_stack, "out of memory for PCRE2 match state");
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchState& thread_match_state() {
  // NOTE: match state is scratch owned by each thread, so that one compiled regex serves every encoding thread.
  thread_local MatchState state;
  return state;
}

}  // namespace

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

std::string oniguruma_to_pcre2(std::string_view pattern) {
  // Oniguruma's \s (doc/RE): U+0009..U+000D, U+0085 and General_Category Z. PCRE2's also has U+180E.
  constexpr std::string_view kSpaceItems = R"(\t-\r\x{85}\p{Z})";
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (c == '\\' && i + 1 < pattern.size()) {
      bool hex4 = next == 'u' && i + 6 <= pattern.size() &&
                  pattern.substr(i + 2, 4).find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
      if (hex4) {
        out.append("\\x{").append(pattern.substr(i + 2, 4)).append("}");
        i += 5;
        continue;
      }
      if (next == 's') {
        out.append(in_class ? std::string(kSpaceItems) : "[" + std::string(kSpaceItems) + "]");
      } else if (next == 'S' && !in_class) {
        out.append("[^").append(kSpaceItems).append("]");
      } else {  // any other escape (\S inside a class keeps PCRE2's meaning)
        out.push_back(c);
        out.push_back(next);
      }
      ++i;
      continue;
    }
    out.push_back(c);
    if (!in_class && c == '[') {
      in_class = true;
      if (next == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);  // a literal ] first
    } else if (in_class && c == '[' && next == ':') {                                    // a POSIX class [:name:]
      size_t close = pattern.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(pattern.substr(i + 1, close + 1 - i));
        i = close + 1;
      }
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

UnicodeRegex::UnicodeRegex(std::string_view pattern, std::string_view what)
    : pattern_(pattern), compiled_(std::make_unique<Compiled>()) {
  std::string translated = oniguruma_to_pcre2(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!compiled_->code) {
    HAI_THROW("{}: the regex {} does not compile: {} at offset {}", what, pattern, pcre2_message(error), offset);
  }
  int jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
  HAI_CHECK(jit == 0, "{}: PCRE2 JIT compilation of {} failed: {}", what, pattern, pcre2_message(jit));
}

UnicodeRegex::~UnicodeRegex() = default;
UnicodeRegex::UnicodeRegex(UnicodeRegex&&) noexcept = default;
UnicodeRegex& UnicodeRegex::operator=(UnicodeRegex&&) noexcept = default;

void UnicodeRegex::find_all(std::string_view text, std::vector<RegexMatch>& matches) const {
  MatchState& state = thread_match_state();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = pcre2_jit_match(compiled_->code, subject, text.size(), start, 0, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) HAI_THROW("regex {}: matching failed: {}", pattern_, pcre2_message(rc));
    PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    auto begin = static_cast<uint32_t>(ovector[0]);
    auto end = static_cast<uint32_t>(ovector[1]);
    matches.push_back({begin, end});
    if (end > begin) {
      start = end;
    } else {  // an empty match: step over one code point
      if (end >= text.size()) return;
      start = end + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
}

}  // namespace hai
