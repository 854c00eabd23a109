#pragma once
// <logging.run_dir>/train.log: what rank 0 prints (its info lines and up, plus debug lines such as where an error
// was raised in the source), and every other rank's warnings and errors, appended across invocations. Each line is
// one write(2) to a descriptor opened with O_APPEND, so lines of ranks on one node never interleave within a line
// (on a shared file system across nodes this holds where it honours O_APPEND: Lustre and GPFS do, NFS does not).
// A rank opens the file at its first line: the ranks that log nothing never touch it.

#include <string>

namespace hai {

// Adds train.log to the default logger (hai::init_logging's). Throws UserError naming logging.run_dir when rank 0
// cannot create the directory.
void add_run_log(const std::string& run_dir, int rank);

}  // namespace hai
