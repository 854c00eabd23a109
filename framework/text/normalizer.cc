#include "framework/text/normalizer.h"

#include <nlohmann/json.hpp>
#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/normalizer2.h>

#include "framework/core/error.h"

namespace hai {
namespace {

// ICU's normalizer for a Unicode normalization form (ICU owns it).
const icu::Normalizer2& icu_normalizer(bool compatibility, bool compose) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer =
      compatibility ? (compose ? icu::Normalizer2::getNFKCInstance(status) : icu::Normalizer2::getNFKDInstance(status))
                    : (compose ? icu::Normalizer2::getNFCInstance(status) : icu::Normalizer2::getNFDInstance(status));
  HAI_CHECK(U_SUCCESS(status) && normalizer, "ICU's normalizer is unavailable: {}", u_errorName(status));
  return *normalizer;
}

}  // namespace

Normalizer::Normalizer(const nlohmann::json& config, std::string_view field) {
  if (!config.is_null()) add_steps(config, std::string(field));
}

void Normalizer::add_steps(const nlohmann::json& config, const std::string& field) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    HAI_THROW("{}: expected an object with a \"type\", got {}", field, config.dump().substr(0, 200));
  }
  std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    const nlohmann::json& steps = config.value("normalizers", nlohmann::json::array());
    for (size_t i = 0; i < steps.size(); ++i) add_steps(steps[i], fmt::format("{}.normalizers[{}]", field, i));
  } else if (type == "NFC") {
    steps_.push_back(Step::nfc);
  } else if (type == "NFD") {
    steps_.push_back(Step::nfd);
  } else if (type == "NFKC") {
    steps_.push_back(Step::nfkc);
  } else if (type == "NFKD") {
    steps_.push_back(Step::nfkd);
  } else if (type == "Lowercase") {
    steps_.push_back(Step::lowercase);
  } else {
    HAI_THROW("{}.type: {} is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase)", field, type);
  }
}

void Normalizer::normalize(std::string_view text, std::string& out) const {
  out.assign(text);
  std::string next;
  for (Step step : steps_) {
    next.clear();
    icu::StringByteSink<std::string> sink(&next);
    UErrorCode status = U_ZERO_ERROR;
    icu::StringPiece input(out.data(), static_cast<int32_t>(out.size()));
    if (step == Step::lowercase) {
      icu::CaseMap::utf8ToLower("", 0, input, sink, nullptr, status);
    } else {
      bool compatibility = step == Step::nfkc || step == Step::nfkd;
      bool compose = step == Step::nfc || step == Step::nfkc;
      icu_normalizer(compatibility, compose).normalizeUTF8(0, input, sink, nullptr, status);
    }
    HAI_CHECK(U_SUCCESS(status), "Unicode normalization failed: {}", u_errorName(status));
    out.swap(next);
  }
}

}  // namespace hai
