#pragma once
// "did you mean ...": the known key path closest to a misspelt or misplaced one.

#include <optional>
#include <string>
#include <vector>

namespace hai {

// Edit distance (insertions, deletions, substitutions) between two strings.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The known path within a small edit distance of `unknown` ("model.hidden_sise" -> "model.hidden_size"), else one
// that ends in the same key ("train.lr" -> "optimizer.lr"), else nothing.
std::optional<std::string> closest_key(const std::string& unknown, const std::vector<std::string>& known);

}  // namespace hai
