#include "framework/core/logging.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace hai {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

std::string log_pattern(int rank) { return fmt::format("[%Y-%m-%d %H:%M:%S.%e] [rank {}] [%^%l%$] %v", rank); }

void init_logging(int rank, bool verbose_rank, LogLevel level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(fmt::format("rank{}", rank), std::move(sink));
  logger->set_pattern(log_pattern(rank));
  logger->set_level(verbose_rank ? to_spdlog(level) : spdlog::level::warn);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace hai
