#pragma once
// Rank-tagged logging on spdlog. init_logging() installs the default logger; after it, spdlog::info/warn/error
// print "[time] [rank R] [level] message". Warnings and errors are printed by every rank; info lines by the
// ranks that are asked to (rank 0 for the training log).

#include <string>

#include <spdlog/spdlog.h>

namespace hai {

enum class LogLevel { debug, info, warn, error };

// The line pattern of every log sink (spdlog's syntax): "[time] [rank R] [level] message".
std::string log_pattern(int rank);

// verbose_rank: whether this rank prints info/debug lines (errors and warnings always print).
void init_logging(int rank, bool verbose_rank, LogLevel level = LogLevel::info);

}  // namespace hai
