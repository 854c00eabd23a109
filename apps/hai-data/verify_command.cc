#include "apps/hai-data/verify_command.h"

#include <chrono>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "framework/core/error.h"
#include "framework/data/indexed_dataset.h"
#include "framework/data/token_id_check.h"

namespace hai {

int run_verify_command(int argc, char** argv) {
  CLI::App app{"hai-data verify: check an indexed dataset's index and that every token id is below the vocab size"};
  std::string prefix;
  int64_t vocab_size = 0;
  int threads = 0;
  app.add_option("prefix", prefix, "dataset prefix: PREFIX.bin and PREFIX.idx")->required();
  app.add_option("--vocab-size", vocab_size, "model.vocab_size of the runs that will read it")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{2147483647}));
  app.add_option("--threads", threads, "threads of the scan; 0 = one per core")->check(CLI::NonNegativeNumber);
  app.name("hai-data verify");
  CLI11_PARSE(app, argc, argv);
  try {
    auto start = std::chrono::steady_clock::now();
    IndexedDataset dataset(prefix);
    check_token_ids(dataset, vocab_size, threads);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("hai-data verify: {} is valid: {} documents, {} tokens ({}), every id in [0, {}) ({:.2f} s)\n", prefix,
               dataset.document_count(), dataset.total_tokens(), token_dtype_name(dataset.dtype()), vocab_size,
               seconds);
  } catch (const Error& error) {
    fmt::print(stderr, "hai-data verify: error: {}\n", error.message());
    return 1;
  }
  return 0;
}

}  // namespace hai
