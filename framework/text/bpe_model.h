#pragma once
// BpeModel: the "model" of a byte-level BPE tokenizer.json (type BPE): a vocabulary of byte-level strings and the
// ranked merges, both converted to raw bytes. Encoding one pre-token (a word) is HF tokenizers' algorithm: start
// from one symbol per byte and repeatedly apply the merge of lowest rank (leftmost first among equal ranks) until
// none applies. With ignore_merges a word that is itself in the vocabulary is one token.
// Supported: merges as "a b" strings or ["a", "b"] pairs; dropout null or 0; no continuing_subword_prefix or
// end_of_word_suffix. Anything else is a hai::Error naming the field. A byte without a vocabulary entry becomes
// unk_token when there is one and is dropped otherwise, as in HF tokenizers.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hai {

// Buffers reused from one word to the next (one per thread), and the cache of words already encoded.
struct BpeScratch {
  struct Symbol {
    int32_t id;
    int32_t previous;  // index of the previous live symbol, -1 at the start
    int32_t next;      // index of the next live symbol, -1 at the end
    bool live;
  };
  struct Candidate {  // a possible merge of symbols[position] with its next symbol
    int32_t rank;
    int32_t position;
    int32_t merged_id;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  // The cache: word bytes -> [offset, count) of cached_ids. Cleared when it grows past its limit.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> cached_ids;
};

class BpeModel {
 public:
  // model: tokenizer.json's "model". field: its name in errors ("model").
  BpeModel(const nlohmann::json& model, std::string_view field);

  // Appends the ids of one word (raw bytes, not empty) to ids.
  void encode_word(std::string_view word, std::vector<int32_t>& ids, BpeScratch& scratch) const;

  // The id of a token given by its raw bytes, or -1.
  int32_t id_of_bytes(std::string_view bytes) const;
  // The raw bytes of an id from the vocabulary ("" for an id not in it, or one that is not byte-level text).
  const std::string& bytes_of(int32_t id) const;
  // One more than the largest id of the vocabulary.
  int64_t id_limit() const { return static_cast<int64_t>(bytes_by_id_.size()); }
  int64_t merge_count() const { return static_cast<int64_t>(merges_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void merge_word(std::string_view word, std::vector<int32_t>& ids, BpeScratch& scratch) const;

  std::unordered_map<std::string, int32_t> ids_by_bytes_;
  std::vector<std::string> bytes_by_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and the merged id
  int32_t byte_ids_[256];                       // the id of each single byte, -1 when the vocabulary lacks it
  int32_t unknown_id_ = -1;                     // unk_token's id: stands for a byte the vocabulary lacks
  bool ignore_merges_ = false;
};

}  // namespace hai
