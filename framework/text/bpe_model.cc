#include "framework/text/bpe_model.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/text/byte_level.h"

namespace hai {
namespace {

// Words longer than this are not cached (rare; they would crowd out the common ones).
constexpr size_t kMaxCachedWordBytes = 64;
// The cache is cleared when it holds this many ids.
constexpr size_t kMaxCachedIds = size_t{1} << 22;

bool is_unset(const nlohmann::json& model, const char* key) {
  if (!model.contains(key) || model[key].is_null()) return true;
  if (model[key].is_string()) return model[key].get<std::string>().empty();
  if (model[key].is_number()) return model[key].get<double>() == 0.0;
  if (model[key].is_boolean()) return !model[key].get<bool>();
  return false;
}

// Heap order: the lowest rank on top, the leftmost position among equal ranks.
bool later(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& model, std::string_view field_name) {
  std::string field(field_name);
  if (!model.is_object()) HAI_THROW("{}: expected an object", field);
  std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") HAI_THROW("{}.type: {} is not supported (only BPE)", field, type);
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!is_unset(model, key)) HAI_THROW("{}.{}: {} is not supported", field, key, model[key].dump());
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) HAI_THROW("{}.vocab: expected an object", field);
  if (!model.contains("merges") || !model["merges"].is_array()) HAI_THROW("{}.merges: expected an array", field);
  ignore_merges_ = model.value("ignore_merges", false);

  const nlohmann::json& vocab = model["vocab"];
  int64_t limit = 0;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 31)) {
      HAI_THROW("{}.vocab[{}]: the id {} is not an integer in 0..2^31-1", field, token, id.dump());
    }
    limit = std::max(limit, id.get<int64_t>() + 1);
  }
  bytes_by_id_.assign(static_cast<size_t>(limit), std::string());
  ids_by_bytes_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    std::optional<std::string> bytes = byte_level_to_bytes(token);
    if (!bytes) continue;  // not byte-level text (an added token kept in the vocabulary): BPE never produces it
    auto index = id.get<int32_t>();
    bytes_by_id_[static_cast<size_t>(index)] = *bytes;
    ids_by_bytes_.emplace(std::move(*bytes), index);
  }
  for (int b = 0; b < 256; ++b) byte_ids_[b] = id_of_bytes(std::string(1, static_cast<char>(b)));
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto found = vocab.find(model["unk_token"].get<std::string>());
    if (found != vocab.end()) unknown_id_ = found->get<int32_t>();
  }

  const nlohmann::json& merges = model["merges"];
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const nlohmann::json& merge = merges[rank];
    std::string left, right;
    if (merge.is_string()) {
      const std::string& text = merge.get_ref<const std::string&>();
      size_t space = text.find(' ');
      if (space == std::string::npos) HAI_THROW("{}.merges[{}]: \"{}\" is not two tokens \"a b\"", field, rank, text);
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      HAI_THROW("{}.merges[{}]: expected \"a b\" or [\"a\", \"b\"], got {}", field, rank, merge.dump());
    }
    auto left_id = vocab.find(left), right_id = vocab.find(right), merged_id = vocab.find(left + right);
    if (left_id == vocab.end() || right_id == vocab.end()) {
      HAI_THROW("{}.merges[{}]: {} is not in the vocabulary", field, rank, left_id == vocab.end() ? left : right);
    }
    if (merged_id == vocab.end()) HAI_THROW("{}.merges[{}]: {} is not in the vocabulary", field, rank, left + right);
    // NOTE: a pair listed twice keeps its last rank, as HF tokenizers' merge map (collected in order) does.
    merges_.insert_or_assign(pair_key(left_id->get<int32_t>(), right_id->get<int32_t>()),
                             Merge{static_cast<int32_t>(rank), merged_id->get<int32_t>()});
  }
}

int32_t BpeModel::id_of_bytes(std::string_view bytes) const {
  auto found = ids_by_bytes_.find(std::string(bytes));
  return found == ids_by_bytes_.end() ? -1 : found->second;
}

const std::string& BpeModel::bytes_of(int32_t id) const {
  static const std::string empty;
  if (id < 0 || static_cast<size_t>(id) >= bytes_by_id_.size()) return empty;
  return bytes_by_id_[static_cast<size_t>(id)];
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids, BpeScratch& scratch) const {
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    auto found = scratch.cache.find(std::string(word));
    if (found != scratch.cache.end()) {
      auto [offset, count] = found->second;
      ids.insert(ids.end(), scratch.cached_ids.begin() + offset, scratch.cached_ids.begin() + offset + count);
      return;
    }
  }
  size_t start = ids.size();
  if (ignore_merges_) {
    int32_t id = id_of_bytes(word);
    if (id >= 0) {
      ids.push_back(id);
    } else {
      merge_word(word, ids, scratch);
    }
  } else {
    merge_word(word, ids, scratch);
  }
  if (!cacheable) return;
  if (scratch.cached_ids.size() > kMaxCachedIds) {
    scratch.cache.clear();
    scratch.cached_ids.clear();
  }
  auto offset = static_cast<uint32_t>(scratch.cached_ids.size());
  scratch.cached_ids.insert(scratch.cached_ids.end(), ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end());
  scratch.cache.emplace(std::string(word), std::make_pair(offset, static_cast<uint32_t>(ids.size() - start)));
}

// HF tokenizers' Word::merge_all: a heap of candidate merges; a candidate whose symbols have changed since it was
// pushed is skipped when it comes up.
void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids, BpeScratch& scratch) const {
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  symbols.clear();
  heap.clear();
  for (char byte : word) {
    int32_t id = byte_ids_[static_cast<unsigned char>(byte)];
    if (id < 0) id = unknown_id_;
    if (id < 0) continue;
    auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;
  auto push_candidate = [&](int32_t position) {
    int32_t next = symbols[static_cast<size_t>(position)].next;
    if (next < 0) return;
    auto found =
        merges_.find(pair_key(symbols[static_cast<size_t>(position)].id, symbols[static_cast<size_t>(next)].id));
    if (found == merges_.end()) return;
    heap.push_back({found->second.rank, position, found->second.merged_id});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_candidate(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    BpeScratch::Symbol& left = symbols[static_cast<size_t>(top.position)];
    if (!left.live || left.next < 0) continue;
    BpeScratch::Symbol& right = symbols[static_cast<size_t>(left.next)];
    auto current = merges_.find(pair_key(left.id, right.id));
    if (current == merges_.end() || current->second.merged_id != top.merged_id) continue;
    left.id = top.merged_id;
    right.live = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].previous = top.position;
    if (left.previous >= 0) push_candidate(left.previous);
    push_candidate(top.position);
  }
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next)
    ids.push_back(symbols[static_cast<size_t>(i)].id);
}

}  // namespace hai
