#pragma once
// PREFIX.json: what hai-data records beside a dataset (PREFIX.bin + PREFIX.idx) about the tokenizer that made it,
// so that a model's vocab_size can be checked against it. Format (docs/formats.md):
//   {"format": "hai-data dataset info", "version": 1,
//    "tokenizer": {"name": ..., "path": ..., "vocab_size": N, "eod_id": E, "eod_token": ...},
//    "documents": D, "tokens": T}
// Datasets made elsewhere (Megatron's preprocess_data.py) have no such file; readers then skip the checks.

#include <cstdint>
#include <optional>
#include <string>

namespace hai {

struct DatasetInfo {
  std::string tokenizer_name;  // "byte" for hai-data's byte tokenizer, else the tokenizer.json's directory name
  std::string tokenizer_path;  // the tokenizer.json read ("" for the byte tokenizer)
  int64_t vocab_size = 0;      // one more than the largest id the tokenizer can produce
  int64_t eod_id = 0;          // the end-of-document token ending every document
  std::string eod_token;       // its text ("" for the byte tokenizer)
  int64_t documents = 0;
  int64_t tokens = 0;
};

std::string dataset_info_path(const std::string& prefix);

// Writes PREFIX.json (through PREFIX.json.tmp, renamed into place). Throws hai::Error naming the path.
void write_dataset_info(const std::string& prefix, const DatasetInfo& info);

// Reads PREFIX.json: nullopt when there is none; a hai::Error naming the path when it is unreadable or malformed.
std::optional<DatasetInfo> read_dataset_info(const std::string& prefix);

}  // namespace hai
