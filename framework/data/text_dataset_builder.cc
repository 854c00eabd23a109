#include "framework/data/text_dataset_builder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/byte_tokenizer.h"
#include "framework/data/indexed_dataset_writer.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

// Line formats read a file in chunks of about this size, cut after a newline; other formats read whole files.
constexpr size_t kChunkBytes = size_t{16} << 20;
// A batch (encoded in parallel, then written) gathers chunks up to this much text per thread.
constexpr size_t kBatchBytesPerThread = size_t{8} << 20;
// Documents a worker takes at a time.
constexpr size_t kDocumentsPerTask = 8;

struct Chunk {
  std::string bytes;
  size_t file = 0;         // index into the input files
  int64_t first_line = 1;  // line number of bytes[0] in its file
};

bool is_line_format(TextFormat format) { return format == TextFormat::lines || format == TextFormat::jsonl; }

// Reads the input files in order as chunks.
class InputReader {
 public:
  InputReader(const std::vector<fs::path>& files, TextFormat format) : files_(files), format_(format) {}

  // The next chunk (never empty); false after the last one.
  bool next(Chunk& chunk) {
    while (file_ < files_.size()) {
      if (!stream_.is_open()) open_next();
      std::string buffer = std::move(carry_);
      carry_.clear();
      size_t old_size = buffer.size();
      size_t want = is_line_format(format_) ? kChunkBytes : static_cast<size_t>(fs::file_size(files_[file_]));
      buffer.resize(old_size + want);
      stream_.read(buffer.data() + old_size, static_cast<std::streamsize>(want));
      buffer.resize(old_size + static_cast<size_t>(stream_.gcount()));
      if (stream_.bad()) HAI_THROW("cannot read {}", files_[file_].string());
      bool at_end = stream_.eof() || stream_.peek() == std::char_traits<char>::eof();
      if (!at_end && is_line_format(format_)) {
        size_t newline = buffer.rfind('\n');
        if (newline == std::string::npos) {  // a line longer than a chunk: read on
          carry_ = std::move(buffer);
          continue;
        }
        carry_.assign(buffer, newline + 1);
        buffer.resize(newline + 1);
      }
      chunk = {std::move(buffer), file_, line_};
      line_ += std::count(chunk.bytes.begin(), chunk.bytes.end(), '\n');
      if (at_end) {
        stream_.close();
        ++file_;
      }
      if (!chunk.bytes.empty() || format_ == TextFormat::file) return true;
    }
    return false;
  }

 private:
  void open_next() {
    stream_.open(files_[file_], std::ios::binary);
    if (!stream_) HAI_THROW("cannot open {}", files_[file_].string());
    line_ = 1;
  }

  const std::vector<fs::path>& files_;
  TextFormat format_;
  size_t file_ = 0;
  std::ifstream stream_;
  std::string carry_;  // the start of a line that continues in the next read
  int64_t line_ = 1;
};

struct Document {
  std::string_view text;  // a view into its chunk
  size_t chunk = 0;       // index into the batch's chunks
};

struct Batch {
  std::vector<Chunk> chunks;
  std::vector<Document> documents;
  size_t bytes = 0;
};

// The document's text: itself, or for jsonl the string field `key` of the JSON object it holds.
std::string_view document_text(const Document& document, const Batch& batch, const std::vector<fs::path>& files,
                               const TextDatasetOptions& options, std::string& storage) {
  if (options.format != TextFormat::jsonl) return document.text;
  const Chunk& chunk = batch.chunks[document.chunk];
  auto where = [&] {
    int64_t line = chunk.first_line + std::count(chunk.bytes.data(), document.text.data(), '\n');
    return fmt::format("{}:{}", files[chunk.file].string(), line);
  };
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(document.text);
  } catch (const nlohmann::json::exception& error) {
    HAI_THROW("{}: not a JSON line: {}", where(), error.what());
  }
  auto field = json.is_object() ? json.find(options.json_key) : json.end();
  if (field == json.end() || !field->is_string()) {
    HAI_THROW("{}: no string field \"{}\" (--json-key) in this JSON line", where(), options.json_key);
  }
  storage = std::move(field->get_ref<std::string&>());
  return storage;
}

// Encodes every document of a batch on the workers' encoders, calling on_progress from this thread meanwhile.
// Returns the token ids of each document (empty for an empty jsonl text). The first error (in document order) is
// rethrown.
std::vector<std::vector<int32_t>> encode_batch(const Batch& batch, const std::vector<fs::path>& files,
                                               const TextDatasetOptions& options,
                                               std::vector<std::unique_ptr<DocumentEncoder>>& encoders,
                                               const std::function<void(int64_t)>& report_bytes, int64_t& text_bytes) {
  size_t count = batch.documents.size();
  std::vector<std::vector<int32_t>> tokens(count);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> bytes_done{0};
  std::atomic<int64_t> document_bytes{0};
  std::mutex mutex;
  std::condition_variable finished;
  size_t workers_done = 0;
  std::optional<size_t> error_index;
  std::exception_ptr error;

  auto work = [&](DocumentEncoder& encoder) {
    std::string storage;
    try {
      for (size_t first = next.fetch_add(kDocumentsPerTask); first < count && !error_index;
           first = next.fetch_add(kDocumentsPerTask)) {
        for (size_t i = first; i < std::min(count, first + kDocumentsPerTask); ++i) {
          const Document& document = batch.documents[i];
          try {
            std::string_view text = document_text(document, batch, files, options, storage);
            if (!text.empty()) encoder.encode(text, tokens[i]);
            document_bytes += static_cast<int64_t>(text.size());
          } catch (...) {
            std::lock_guard lock(mutex);
            if (!error_index || i < *error_index) {
              error_index = i;
              error = std::current_exception();
            }
          }
          bytes_done += static_cast<int64_t>(document.text.size());
        }
      }
    } catch (...) {  // NOTE: only fetch_add and bookkeeping are here; keep the worker from terminating the program
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
    }
    std::lock_guard lock(mutex);
    ++workers_done;
    finished.notify_one();
  };

  std::vector<std::thread> threads;
  for (size_t w = 0; w < encoders.size(); ++w) threads.emplace_back(work, std::ref(*encoders[w]));
  {
    std::unique_lock lock(mutex);
    auto interval = std::chrono::duration<double>(options.progress_interval_s);
    while (!finished.wait_for(lock, interval, [&] { return workers_done == threads.size(); })) {
      lock.unlock();
      report_bytes(bytes_done.load());
      lock.lock();
    }
  }
  for (std::thread& thread : threads) thread.join();
  if (error) std::rethrow_exception(error);
  text_bytes += document_bytes.load();
  return tokens;
}

}  // namespace

void ByteDocumentEncoder::encode(std::string_view document, std::vector<int32_t>& tokens) {
  byte_encode_document(document, tokens);
}

TextDatasetSummary build_text_dataset(const std::vector<std::string>& inputs, const std::string& output_prefix,
                                      const TextDatasetOptions& options) {
  TextInputs files = list_text_inputs(inputs, options.format);
  HAI_CHECK(!files.files.empty(), "no input files to read ({} skipped)", files.skipped.size());
  HAI_CHECK(options.threads >= 1, "threads must be at least 1, got {}", options.threads);
  TextDatasetProgress progress;
  for (const fs::path& path : files.files) progress.input_bytes += static_cast<int64_t>(fs::file_size(path));
  std::vector<std::unique_ptr<DocumentEncoder>> encoders;
  for (int t = 0; t < options.threads; ++t) encoders.push_back(options.make_encoder());
  auto report = [&](const TextDatasetProgress& now) {
    if (options.on_progress) options.on_progress(now);
  };

  IndexedDatasetWriter writer(output_prefix, token_dtype_for_vocab(options.vocab_size));
  TextDatasetSummary summary;
  InputReader reader(files.files, options.format);
  size_t batch_limit = kBatchBytesPerThread * static_cast<size_t>(options.threads);
  Chunk chunk;
  bool more = reader.next(chunk);
  while (more) {
    Batch batch;
    while (more && (batch.bytes < batch_limit || batch.chunks.empty())) {
      batch.bytes += chunk.bytes.size();
      batch.chunks.push_back(std::move(chunk));
      more = reader.next(chunk);
    }
    for (size_t c = 0; c < batch.chunks.size(); ++c) {
      for (std::string_view text : split_text_into_documents(batch.chunks[c].bytes, options.format)) {
        batch.documents.push_back({text, c});
      }
    }
    int64_t bytes_before = progress.bytes_done;
    std::vector<std::vector<int32_t>> tokens = encode_batch(
        batch, files.files, options, encoders,
        [&](int64_t bytes_done) {
          progress.bytes_done = bytes_before + bytes_done;
          report(progress);
        },
        summary.text_bytes);
    for (std::vector<int32_t>& document : tokens) {
      if (document.empty()) {
        ++summary.empty_documents;
        continue;
      }
      writer.add_document(document);
      std::vector<int32_t>().swap(document);
    }
    progress.bytes_done = bytes_before + static_cast<int64_t>(batch.bytes);
    progress.documents = writer.document_count();
    progress.tokens = writer.token_count();
    report(progress);
  }
  HAI_CHECK(writer.document_count() > 0, "the {} input files hold no {} documents", files.files.size(),
            text_format_name(options.format));
  writer.finalize();
  summary.files = static_cast<int64_t>(files.files.size());
  summary.skipped_files = static_cast<int64_t>(files.skipped.size());
  summary.documents = writer.document_count();
  summary.tokens = writer.token_count();
  for (const auto& encoder : encoders) summary.invalid_utf8_replaced += encoder->invalid_utf8_replaced();
  summary.bytes_written = writer.bytes_written();
  return summary;
}

}  // namespace hai
