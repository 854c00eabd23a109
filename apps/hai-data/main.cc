// hai-data: text files or JSONL -> a Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx) and its info file
// (PREFIX.json), tokenized by a Hugging Face tokenizer.json (--tokenizer) or byte by byte. The work is done by
// build_text_dataset (framework/data/text_dataset_builder.h); this file parses the command line, picks the
// tokenizer and prints progress and the summary.

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/hai-data/progress.h"
#include "apps/hai-data/verify_command.h"
#include "framework/core/error.h"
#include "framework/data/byte_tokenizer.h"
#include "framework/data/dataset_info.h"
#include "framework/data/text_dataset_builder.h"
#ifdef HAI_WITH_TOKENIZER
#include "apps/hai-data/end_of_document.h"
#include "apps/hai-data/tokenizer_encoder.h"
#include "framework/text/tokenizer.h"
#endif

namespace {

namespace fs = std::filesystem;

int available_cores() {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) return std::max(1, CPU_COUNT(&cpus));
  return std::max(1u, std::thread::hardware_concurrency());
}

bool all_jsonl(const std::vector<std::string>& inputs) {
  return std::all_of(inputs.begin(), inputs.end(),
                     [](const std::string& input) { return fs::path(input).extension() == ".jsonl"; });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "verify") return hai::run_verify_command(argc - 1, argv + 1);
  CLI::App app{"hai-data: tokenize text files or JSONL into a Megatron-LM indexed dataset"};
  std::vector<std::string> inputs;
  std::string output_prefix;
  std::string format = "fortune";
  std::string json_key = "text";
  std::string tokenizer_path;
  std::string eod_token;
  std::string tokenizer_name;
  int threads = available_cores();
  app.add_option("--input", inputs, "text or JSONL files, or directories of them")->required();
  app.add_option("--output", output_prefix, "output prefix: writes PREFIX.bin, PREFIX.idx and PREFIX.json")->required();
  CLI::Option* format_option =
      app.add_option("--format", format,
                     "fortune: one document per `%`-separated entry; lines: one per non-empty line; file: one per "
                     "file; jsonl: one JSON object per line (default when every input ends in .jsonl or "
                     "--json-key is given; else fortune)")
          ->check(CLI::IsMember({"fortune", "lines", "file", "jsonl"}));
  CLI::Option* key_option = app.add_option("--json-key", json_key, "jsonl: the field holding the text (default text)");
  app.add_option("--tokenizer", tokenizer_path,
                 "a Hugging Face tokenizer.json (byte-level BPE), or its directory; default: one token per byte");
  app.add_option("--eod-token", eod_token, "the token ending each document (default: see docs/formats.md)");
  app.add_option("--tokenizer-name", tokenizer_name, "the name recorded in PREFIX.json (default: its directory)");
  app.add_option("--threads", threads, "encoding threads (default: the available cores)")->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);
  if (format_option->count() == 0 && (key_option->count() > 0 || all_jsonl(inputs))) format = "jsonl";

  try {
    auto start = std::chrono::steady_clock::now();
    hai::TextDatasetOptions options;
    options.format = hai::parse_text_format(format);
    options.json_key = json_key;
    options.threads = threads;
    hai::DatasetInfo info;
    info.tokenizer_name = "byte";
    info.vocab_size = hai::kByteVocabSize;
    info.eod_id = hai::kEndOfDocument;
#ifdef HAI_WITH_TOKENIZER
    std::optional<hai::Tokenizer> tokenizer;
    if (!tokenizer_path.empty()) {
      fs::path json_path =
          fs::is_directory(tokenizer_path) ? fs::path(tokenizer_path) / "tokenizer.json" : fs::path(tokenizer_path);
      tokenizer.emplace(hai::Tokenizer::from_file(json_path));
      hai::EndOfDocumentToken eod = hai::choose_end_of_document_token(*tokenizer, json_path, eod_token);
      fs::path absolute = fs::absolute(json_path);
      info.tokenizer_name = tokenizer_name.empty() ? absolute.parent_path().filename().string() : tokenizer_name;
      info.tokenizer_path = absolute.string();
      info.vocab_size = tokenizer->vocab_size();
      info.eod_id = eod.id;
      info.eod_token = eod.text;
      fmt::print("hai-data: tokenizer {} ({} ids), end of document {} = {} (from {})\n", json_path.string(),
                 tokenizer->vocab_size(), eod.text, eod.id, eod.chosen_by);
      options.make_encoder = [&tokenizer, id = eod.id] {
        return std::make_unique<hai::TokenizerEncoder>(*tokenizer, id);
      };
    }
#else
    if (!tokenizer_path.empty()) {
      throw hai::Error(
          "--tokenizer: this hai-data was built without PCRE2 and ICU (install libpcre2-dev and "
          "libicu-dev, then reconfigure)",
          __FILE__, __LINE__);
    }
#endif
    if (!eod_token.empty() && tokenizer_path.empty()) {
      throw hai::Error("--eod-token needs --tokenizer (the byte tokenizer's end of document is 256)", __FILE__,
                       __LINE__);
    }
    options.vocab_size = info.vocab_size;
    hai::ProgressDisplay display;
    options.on_progress = [&display](const hai::TextDatasetProgress& progress) { display.update(progress); };
    fs::path parent = fs::path(output_prefix).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    hai::TextDatasetSummary summary = hai::build_text_dataset(inputs, output_prefix, options);
    display.finish();
    info.documents = summary.documents;
    info.tokens = summary.tokens;
    hai::write_dataset_info(output_prefix, info);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double megabytes = static_cast<double>(summary.text_bytes) / 1e6;
    fmt::print("hai-data: wrote {0}.bin, {0}.idx and {0}.json\n", output_prefix);
    fmt::print("  files:     {} read, {} skipped\n", summary.files, summary.skipped_files);
    fmt::print("  documents: {}{}\n", summary.documents,
               summary.empty_documents > 0 ? fmt::format(" ({} empty left out)", summary.empty_documents) : "");
    fmt::print("  tokens:    {} (end-of-document tokens included)\n", summary.tokens);
    if (summary.invalid_utf8_replaced > 0) {
      fmt::print("  invalid UTF-8: {} sequences replaced by U+FFFD\n", summary.invalid_utf8_replaced);
    }
    fmt::print("  written:   {} bytes\n", summary.bytes_written);
    fmt::print("  time:      {:.2f} s on {} threads: {:.0f} tokens/s, {:.2f} MB/s of text ({:.2f} MB/s per thread)\n",
               seconds, threads, static_cast<double>(summary.tokens) / seconds, megabytes / seconds,
               megabytes / seconds / threads);
    // NOTE: CPU time of every thread: the per-core speed even when other processes share the cores.
    double cpu_seconds = static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
    fmt::print("  cpu:       {:.2f} s: {:.2f} MB/s of text per CPU second (tokenizer loading included)\n", cpu_seconds,
               megabytes / cpu_seconds);
  } catch (const hai::Error& error) {
    fmt::print(stderr, "{}hai-data: error: {}\n", isatty(STDERR_FILENO) ? "\n" : "", error.message());
    return 1;
  } catch (const fs::filesystem_error& error) {
    fmt::print(stderr, "{}hai-data: error: {}\n", isatty(STDERR_FILENO) ? "\n" : "", error.what());
    return 1;
  }
  return 0;
}
