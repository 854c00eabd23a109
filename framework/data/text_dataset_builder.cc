#include "framework/data/text_dataset_builder.h"

#include <fstream>
#include <iterator>

#include "framework/core/error.h"
#include "framework/data/byte_tokenizer.h"
#include "framework/data/indexed_dataset_writer.h"

namespace hai {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) HAI_THROW("cannot open {}", path.string());
  std::string text((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  if (stream.bad()) HAI_THROW("cannot read {}", path.string());
  return text;
}

}  // namespace

TextDatasetSummary build_text_dataset(const std::vector<std::string>& inputs, const std::string& output_prefix,
                                      TextFormat format) {
  TextInputs files = list_text_inputs(inputs, format);
  HAI_CHECK(!files.files.empty(), "no input files to read ({} skipped)", files.skipped.size());
  IndexedDatasetWriter writer(output_prefix, token_dtype_for_vocab(kByteVocabSize));
  std::vector<int32_t> tokens;  // [document bytes + 1]
  for (const std::filesystem::path& path : files.files) {
    std::string text = read_file(path);
    for (std::string_view document : split_text_into_documents(text, format)) {
      tokens.clear();
      byte_encode_document(document, tokens);
      writer.add_document(tokens);
    }
  }
  HAI_CHECK(writer.document_count() > 0, "the {} input files hold no {} documents", files.files.size(),
            text_format_name(format));
  writer.finalize();
  return {.files = static_cast<int64_t>(files.files.size()),
          .skipped_files = static_cast<int64_t>(files.skipped.size()),
          .documents = writer.document_count(),
          .tokens = writer.token_count(),
          .bytes_written = writer.bytes_written()};
}

}  // namespace hai
