#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/data/byte_tokenizer.h"
#include "framework/data/dataset_info.h"
#include "framework/data/indexed_dataset.h"
#include "framework/data/text_dataset_builder.h"
#include "framework/data/text_documents.h"
#include "tests/framework/data/temp_directory.h"

namespace hai {
namespace {

namespace fs = std::filesystem;

TextDatasetOptions options_for(TextFormat format) {
  TextDatasetOptions options;
  options.format = format;
  return options;
}

std::vector<std::string> to_strings(const std::vector<std::string_view>& views) { return {views.begin(), views.end()}; }

std::string decode_sequence(const IndexedDataset& dataset, int64_t sequence) {
  TokenSpan span = dataset.sequence(sequence);
  std::vector<int32_t> tokens(static_cast<size_t>(span.size()));
  span.copy_to(0, tokens);
  EXPECT_EQ(tokens.back(), kEndOfDocument);
  return byte_decode(std::span<const int32_t>(tokens).first(tokens.size() - 1));
}

TEST(TextDocuments, SplitsFortunesAtPercentLines) {
  std::string text = "A penny saved.\n  -- Ben\n%\nSecond 50% off\n%\n%\nThird, no final separator";
  EXPECT_EQ(to_strings(split_text_into_documents(text, TextFormat::fortune)),
            (std::vector<std::string>{"A penny saved.\n  -- Ben\n", "Second 50% off\n", "Third, no final separator"}));
  EXPECT_EQ(to_strings(split_text_into_documents("%\nonly\n%\n", TextFormat::fortune)),
            (std::vector<std::string>{"only\n"}));
  EXPECT_TRUE(split_text_into_documents("", TextFormat::fortune).empty());
}

TEST(TextDocuments, SplitsLinesAndFiles) {
  std::string text = "one\n\ntwo\nthree";
  EXPECT_EQ(to_strings(split_text_into_documents(text, TextFormat::lines)),
            (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(to_strings(split_text_into_documents(text, TextFormat::file)), (std::vector<std::string>{text}));
  EXPECT_TRUE(split_text_into_documents("", TextFormat::file).empty());
}

TEST(TextDocuments, ParsesFormatNames) {
  EXPECT_EQ(parse_text_format("fortune"), TextFormat::fortune);
  EXPECT_EQ(parse_text_format("lines"), TextFormat::lines);
  EXPECT_EQ(parse_text_format("file"), TextFormat::file);
  EXPECT_THROW(parse_text_format("json"), Error);
}

TEST(TextDocuments, ListsADirectoryLikeTheFortunesPackage) {
  testing::TempDirectory directory;
  testing::write_text(directory.file("zen"), "z\n%\n");
  testing::write_text(directory.file("art"), "a\n%\n");
  testing::write_text(directory.file("art.dat"), "binary");
  fs::create_symlink("art", directory.path() / "art.u8");
  fs::create_directory(directory.path() / "off");

  TextInputs fortunes = list_text_inputs({directory.path().string()}, TextFormat::fortune);
  EXPECT_EQ(fortunes.files, (std::vector<fs::path>{directory.path() / "art", directory.path() / "zen"}));
  EXPECT_EQ(fortunes.skipped.size(), 3u);  // art.dat, art.u8, off/

  // A shell glob names the companions directly: they are still skipped in fortune format.
  TextInputs globbed = list_text_inputs({directory.file("art"), directory.file("art.dat"), directory.file("art.u8")},
                                        TextFormat::fortune);
  EXPECT_EQ(globbed.files, (std::vector<fs::path>{directory.path() / "art"}));

  TextInputs files = list_text_inputs({directory.path().string()}, TextFormat::file);
  EXPECT_EQ(files.files.size(), 3u);  // art, art.dat, zen: only the link and the subdirectory are skipped
}

TEST(TextDocuments, MissingInputIsAnError) {
  testing::TempDirectory directory;
  try {
    list_text_inputs({directory.file("missing.txt")}, TextFormat::file);
    FAIL() << "no error for a missing input";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "input not found: " + directory.file("missing.txt"));
  }
}

TEST(TextDatasetBuilder, TokenisesAFortuneFile) {
  testing::TempDirectory directory;
  testing::write_text(directory.file("wisdom"), "Be kind.\n%\nNo.\n%\n");
  testing::write_text(directory.file("wisdom.dat"), "\x02\x00");
  std::string prefix = directory.file("out/fortunes");
  fs::create_directory(directory.path() / "out");

  TextDatasetSummary summary = build_text_dataset({directory.path().string()}, prefix, options_for(TextFormat::fortune));
  EXPECT_EQ(summary.files, 1);
  EXPECT_EQ(summary.skipped_files, 2);  // wisdom.dat and the out/ directory
  EXPECT_EQ(summary.documents, 2);
  EXPECT_EQ(summary.tokens, 9 + 1 + 4 + 1);
  EXPECT_EQ(summary.bytes_written, fs::file_size(prefix + ".bin") + fs::file_size(prefix + ".idx"));

  IndexedDataset dataset(prefix);
  EXPECT_EQ(dataset.dtype(), TokenDType::u16);
  EXPECT_EQ(dataset.document_count(), 2);
  EXPECT_EQ(decode_sequence(dataset, 0), "Be kind.\n");
  EXPECT_EQ(decode_sequence(dataset, 1), "No.\n");
}

TEST(TextDatasetBuilder, InputsWithoutDocumentsWriteNothing) {
  testing::TempDirectory directory;
  testing::write_text(directory.file("empty.txt"), "\n\n");
  std::string prefix = directory.file("out");
  EXPECT_THROW(build_text_dataset({directory.file("empty.txt")}, prefix, options_for(TextFormat::lines)), Error);
  EXPECT_FALSE(fs::exists(prefix + ".bin"));
  EXPECT_FALSE(fs::exists(prefix + ".bin.tmp"));
  EXPECT_THROW(build_text_dataset({directory.file("nope")}, prefix, options_for(TextFormat::lines)), Error);
}

TEST(TextDatasetBuilder, TheDatasetIsTheSameForAnyThreadCount) {
  testing::TempDirectory directory;
  std::string text;
  for (int line = 0; line < 5000; ++line) text += std::string(static_cast<size_t>(line % 37), 'a' + line % 26) + "\n";
  testing::write_text(directory.file("lines.txt"), text);
  std::vector<std::vector<char>> outputs;
  for (int threads : {1, 3}) {
    TextDatasetOptions options = options_for(TextFormat::lines);
    options.threads = threads;
    std::string prefix = directory.file("out" + std::to_string(threads));
    TextDatasetSummary summary = build_text_dataset({directory.file("lines.txt")}, prefix, options);
    EXPECT_EQ(summary.documents, 5000 - 5000 / 37 - 1);  // the empty lines are left out
    outputs.push_back(testing::read_bytes(prefix + ".bin"));
    std::vector<char> index = testing::read_bytes(prefix + ".idx");
    outputs.back().insert(outputs.back().end(), index.begin(), index.end());
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

TEST(TextDatasetBuilder, ReadsTheTextFieldOfJsonLines) {
  testing::TempDirectory directory;
  testing::write_text(directory.file("a.jsonl"), "{\"body\": \"h\\u00e9\", \"n\": 1}\n\n{\"body\": \"\"}\r\n{\"body\": \"x\"}\n");
  TextDatasetOptions options = options_for(TextFormat::jsonl);
  options.json_key = "body";
  std::string prefix = directory.file("out");
  TextDatasetSummary summary = build_text_dataset({directory.file("a.jsonl")}, prefix, options);
  EXPECT_EQ(summary.documents, 2);
  EXPECT_EQ(summary.empty_documents, 1);
  IndexedDataset dataset(prefix);
  EXPECT_EQ(decode_sequence(dataset, 0), "h\xC3\xA9");
  EXPECT_EQ(decode_sequence(dataset, 1), "x");

  testing::write_text(directory.file("b.jsonl"), "{\"body\": \"ok\"}\n{\"text\": \"no body\"}\n");
  try {
    build_text_dataset({directory.file("b.jsonl")}, prefix, options);
    FAIL() << "no error for a line without the key";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), directory.file("b.jsonl") + ":2: no string field \"body\" (--json-key) in this JSON line");
  }
  testing::write_text(directory.file("c.jsonl"), "{\"body\": \"ok\"}\n\n{not json\n");
  try {
    build_text_dataset({directory.file("c.jsonl")}, prefix, options);
    FAIL() << "no error for a line that is not JSON";
  } catch (const Error& error) {
    EXPECT_EQ(error.message().rfind(directory.file("c.jsonl") + ":3: not a JSON line", 0), 0u) << error.message();
  }
}

#ifdef HAI_DATA_BINARY
// Runs the hai-data binary itself (registered only when the apps are built).
TEST(HaiDataBinary, WritesADatasetAndFailsOnMissingInput) {
  testing::TempDirectory directory;
  testing::write_text(directory.file("a.txt"), "first line\nsecond line\n");
  std::string prefix = directory.file("lines");
  std::string command = std::string(HAI_DATA_BINARY) + " --input " + directory.file("a.txt") + " --output " + prefix +
                        " --format lines > " + directory.file("log") + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  IndexedDataset dataset(prefix);
  EXPECT_EQ(dataset.document_count(), 2);
  EXPECT_EQ(decode_sequence(dataset, 1), "second line");
  std::optional<DatasetInfo> info = read_dataset_info(prefix);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->tokenizer_name, "byte");
  EXPECT_EQ(info->vocab_size, kByteVocabSize);
  EXPECT_EQ(info->eod_id, kEndOfDocument);
  EXPECT_EQ(info->documents, 2);

  std::string missing = std::string(HAI_DATA_BINARY) + " --input " + directory.file("missing") + " --output " +
                        prefix + " > " + directory.file("log") + " 2>&1";
  EXPECT_NE(std::system(missing.c_str()), 0);
  std::vector<char> log = testing::read_bytes(directory.file("log"));
  EXPECT_NE(std::string(log.begin(), log.end()).find("input not found"), std::string::npos);
}
#endif

}  // namespace
}  // namespace hai
