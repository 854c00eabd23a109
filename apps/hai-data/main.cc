// hai-data: text files -> a Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx) of byte-level tokens.
// The work is done by build_text_dataset (framework/data/text_dataset_builder.h); this file only parses the
// command line and prints the summary.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/hai-data/verify_command.h"
#include "framework/core/error.h"
#include "framework/data/text_dataset_builder.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "verify") return hai::run_verify_command(argc - 1, argv + 1);
  CLI::App app{"hai-data: tokenise text files into a Megatron-LM indexed dataset (byte-level tokens)"};
  std::vector<std::string> inputs;
  std::string output_prefix;
  std::string format = "fortune";
  app.add_option("--input", inputs, "text files or directories")->required();
  app.add_option("--output", output_prefix, "output prefix: writes PREFIX.bin and PREFIX.idx")->required();
  app.add_option("--format", format,
                 "fortune: one document per `%`-separated entry; lines: one per non-empty line; file: one per file")
      ->check(CLI::IsMember({"fortune", "lines", "file"}));
  CLI11_PARSE(app, argc, argv);

  try {
    auto start = std::chrono::steady_clock::now();
    hai::TextDatasetSummary summary = hai::build_text_dataset(inputs, output_prefix, hai::parse_text_format(format));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("hai-data: wrote {0}.bin and {0}.idx\n", output_prefix);
    fmt::print("  files:     {} read, {} skipped\n", summary.files, summary.skipped_files);
    fmt::print("  documents: {}\n", summary.documents);
    fmt::print("  tokens:    {} (end-of-document tokens included)\n", summary.tokens);
    fmt::print("  written:   {} bytes\n", summary.bytes_written);
    fmt::print("  time:      {:.2f} s\n", seconds);
  } catch (const hai::Error& error) {
    fmt::print(stderr, "hai-data: error: {}\n", error.message());
    return 1;
  }
  return 0;
}
