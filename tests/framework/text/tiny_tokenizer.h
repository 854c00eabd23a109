#pragma once
// A hand-written byte-level BPE tokenizer.json for the tokenizer's unit tests. Its vocabulary: the bytes a, b, c,
// x, space (Ġ), U+0085's two bytes (Â, ħ), then merges "a b" -> ab (rank 0), "ab c" -> abc (1), "Ġ a" -> Ġa (2),
// "a a" -> aa (3); "ca" is in the vocabulary without a merge reaching it (for ignore_merges); added tokens <|eot|>
// (id 20) and <|eot|>! (id 21, longer).

#include <string>

#include <nlohmann/json.hpp>

namespace hai::testing {

inline nlohmann::json tiny_tokenizer_json() {
  return nlohmann::json::parse(R"({
    "added_tokens": [
      {"id": 20, "content": "<|eot|>", "special": true, "normalized": false},
      {"id": 21, "content": "<|eot|>!", "special": true, "normalized": false}
    ],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {
      "type": "BPE", "dropout": null, "continuing_subword_prefix": "", "end_of_word_suffix": "",
      "vocab": {"a": 0, "b": 1, "c": 2, "x": 3, "Ġ": 4, "ab": 5, "abc": 6, "Ġa": 7, "aa": 8, "ca": 9,
                "Â": 10, "ħ": 11, "!": 12, "<": 13, "|": 14, "e": 15, "o": 16, "t": 17, ">": 18},
      "merges": ["a b", ["ab", "c"], "Ġ a", "a a"]
    }
  })");
}

}  // namespace hai::testing
