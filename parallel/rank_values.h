#pragma once
// Small host values exchanged over a communicator, for bookkeeping that must agree on every rank: sums of doubles
// added in rank order (the same bits everywhere, unlike a tree reduction in fp32), and strings gathered whole.

#include <span>
#include <string>
#include <vector>

#include "framework/comm/communicator.h"

namespace hai {

// Element-wise sum over the ranks of `values` (the same length on every rank), each element added in rank order
// in double. Every rank gets the same result.
std::vector<double> sum_over_ranks(Communicator& group, std::span<const double> values);
double sum_over_ranks(Communicator& group, double value);

// Every rank's `text`, indexed by rank, on every rank.
std::vector<std::string> all_gather_strings(Communicator& group, const std::string& text);

}  // namespace hai
