#include "parallel/flat_range_boxes.h"

#include "framework/core/error.h"

namespace hai {
namespace {

// Appends the boxes of the flat range [begin, end) of the sub-tensor at `prefix` (one index per dim before
// prefix.size()), whose own dims are dims[prefix.size()...].
void append_boxes(const std::vector<int64_t>& dims, const std::vector<int64_t>& prefix, int64_t begin, int64_t end,
                  std::vector<SliceBox>& boxes) {
  if (begin >= end) return;
  size_t dim = prefix.size();
  int64_t row = 1;  // elements per index of `dim`
  for (size_t inner = dim + 1; inner < dims.size(); ++inner) row *= dims[inner];
  auto descend = [&](int64_t index, int64_t from, int64_t to) {
    std::vector<int64_t> inner_prefix = prefix;
    inner_prefix.push_back(index);
    append_boxes(dims, inner_prefix, from - index * row, to - index * row, boxes);
  };
  if (begin % row != 0) {  // a partial first row
    int64_t index = begin / row;
    int64_t stop = std::min(end, (index + 1) * row);
    descend(index, begin, stop);
    begin = stop;
  }
  if (end / row > begin / row) {  // whole rows
    SliceBox box{.offsets = prefix, .extents = std::vector<int64_t>(dim, 1)};
    box.offsets.push_back(begin / row);
    box.extents.push_back(end / row - begin / row);
    for (size_t inner = dim + 1; inner < dims.size(); ++inner) {
      box.offsets.push_back(0);
      box.extents.push_back(dims[inner]);
    }
    boxes.push_back(std::move(box));
    begin = end / row * row;
  }
  if (begin < end) descend(begin / row, begin, end);  // a partial last row
}

}  // namespace

std::vector<SliceBox> flat_range_boxes(const Shape& shape, int64_t begin, int64_t end) {
  HAI_CHECK(0 <= begin && begin <= end && end <= shape.numel(), "flat range [{}, {}) outside shape {}", begin, end,
            shape.str());
  std::vector<SliceBox> boxes;
  if (begin == end) return boxes;
  if (shape.rank() == 0) return {SliceBox{}};  // a scalar: its one element
  append_boxes(shape.to_vector(), {}, begin, end, boxes);
  return boxes;
}

}  // namespace hai
