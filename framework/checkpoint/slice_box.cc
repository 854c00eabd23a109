#include "framework/checkpoint/slice_box.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "framework/core/error.h"

namespace hai {
namespace {

// Row-major element strides of a box's buffer.
std::vector<int64_t> strides_of(const SliceBox& box) {
  std::vector<int64_t> strides(box.extents.size(), 1);
  for (size_t dim = box.extents.size(); dim-- > 1;) strides[dim - 1] = strides[dim] * box.extents[dim];
  return strides;
}

// The element offset, inside a buffer holding `box`, of the global index `index`.
int64_t linear_offset(const SliceBox& box, const std::vector<int64_t>& strides, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t dim = 0; dim < index.size(); ++dim) offset += (index[dim] - box.offsets[dim]) * strides[dim];
  return offset;
}

// Advances `index` over the region's outer dimensions (all but the last), odometer-style; false when done.
bool next_row(std::vector<int64_t>& index, const SliceBox& region) {
  for (size_t dim = index.size() - 1; dim-- > 0;) {
    if (++index[dim] < region.offsets[dim] + region.extents[dim]) return true;
    index[dim] = region.offsets[dim];
  }
  return false;
}

}  // namespace

SliceBox whole_box(const std::vector<int64_t>& shape) { return {std::vector<int64_t>(shape.size(), 0), shape}; }

int64_t box_volume(const SliceBox& box) {
  int64_t volume = 1;
  for (int64_t extent : box.extents) {
    if (__builtin_mul_overflow(volume, extent, &volume)) HAI_THROW("slice {} is too large", box_str(box));
  }
  return volume;
}

std::string box_str(const SliceBox& box) {
  std::vector<std::string> ranges;
  for (size_t dim = 0; dim < box.offsets.size() && dim < box.extents.size(); ++dim) {
    ranges.push_back(fmt::format("{}:{}", box.offsets[dim], box.offsets[dim] + box.extents[dim]));
  }
  return fmt::format("[{}]", fmt::join(ranges, ", "));
}

void check_box_inside(const SliceBox& box, const std::vector<int64_t>& shape, const std::string& what) {
  if (box.offsets.size() != shape.size() || box.extents.size() != shape.size()) {
    HAI_THROW("{}: slice {} has rank {}, the tensor's shape [{}] rank {}", what, box_str(box), box.extents.size(),
              fmt::join(shape, ", "), shape.size());
  }
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    bool inside = box.offsets[dim] >= 0 && box.extents[dim] >= 0 && box.offsets[dim] <= shape[dim] &&
                  box.extents[dim] <= shape[dim] - box.offsets[dim];
    if (!inside) HAI_THROW("{}: slice {} is outside the shape [{}]", what, box_str(box), fmt::join(shape, ", "));
  }
}

std::optional<SliceBox> box_intersection(const SliceBox& a, const SliceBox& b) {
  HAI_CHECK(a.offsets.size() == b.offsets.size(), "intersecting boxes of rank {} and {}", a.offsets.size(),
            b.offsets.size());
  SliceBox common;
  for (size_t dim = 0; dim < a.offsets.size(); ++dim) {
    int64_t begin = std::max(a.offsets[dim], b.offsets[dim]);
    int64_t end = std::min(a.offsets[dim] + a.extents[dim], b.offsets[dim] + b.extents[dim]);
    if (end <= begin) return std::nullopt;
    common.offsets.push_back(begin);
    common.extents.push_back(end - begin);
  }
  return common;
}

void copy_box_region(std::span<const std::byte> source, const SliceBox& source_box, std::span<std::byte> destination,
                     const SliceBox& destination_box, const SliceBox& region, size_t element_size) {
  HAI_CHECK(source.size() == static_cast<size_t>(box_volume(source_box)) * element_size &&
                destination.size() == static_cast<size_t>(box_volume(destination_box)) * element_size,
            "buffers of {} and {} bytes for boxes {} and {}", source.size(), destination.size(),
            box_str(source_box), box_str(destination_box));
  if (box_volume(region) == 0) return;
  if (region.offsets.empty()) {  // a scalar
    std::memcpy(destination.data(), source.data(), element_size);
    return;
  }
  std::vector<int64_t> source_strides = strides_of(source_box);
  std::vector<int64_t> destination_strides = strides_of(destination_box);
  size_t row_bytes = static_cast<size_t>(region.extents.back()) * element_size;
  std::vector<int64_t> index = region.offsets;
  do {
    size_t from = static_cast<size_t>(linear_offset(source_box, source_strides, index)) * element_size;
    size_t to = static_cast<size_t>(linear_offset(destination_box, destination_strides, index)) * element_size;
    std::memcpy(destination.data() + to, source.data() + from, row_bytes);
  } while (next_row(index, region));
}

void check_boxes_tile(const std::vector<SliceBox>& boxes, const std::vector<int64_t>& shape, const std::string& what) {
  int64_t covered = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    check_box_inside(boxes[i], shape, what);
    for (size_t j = 0; j < i; ++j) {
      if (box_intersection(boxes[i], boxes[j])) {
        HAI_THROW("{}: slices {} and {} overlap", what, box_str(boxes[j]), box_str(boxes[i]));
      }
    }
    covered += box_volume(boxes[i]);
  }
  int64_t total = box_volume(whole_box(shape));
  if (covered != total) HAI_THROW("{}: the slices cover {} of {} elements", what, covered, total);
}

}  // namespace hai
