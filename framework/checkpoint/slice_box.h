#pragma once
// SliceBox: a rectangular slice of a tensor's global shape (an offset and an extent per dimension), the unit in
// which checkpoint files store tensors. Helpers to intersect boxes, copy a region between two row-major buffers
// holding different boxes, and check that a set of boxes tiles a shape.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hai {

struct SliceBox {
  std::vector<int64_t> offsets;
  std::vector<int64_t> extents;

  bool operator==(const SliceBox&) const = default;
};

// The box covering all of `shape`.
SliceBox whole_box(const std::vector<int64_t>& shape);
int64_t box_volume(const SliceBox& box);
// "[0:2, 4:8]" (begin:end per dimension).
std::string box_str(const SliceBox& box);
// Throws hai::Error naming `what` unless the box has the shape's rank, non-negative extents and lies inside it.
void check_box_inside(const SliceBox& box, const std::vector<int64_t>& shape, const std::string& what);
// The common part of two boxes of equal rank; nullopt when it is empty.
std::optional<SliceBox> box_intersection(const SliceBox& a, const SliceBox& b);

// Copies `region` (global coordinates, inside both boxes) from `source`, a row-major buffer holding
// `source_box`, into `destination`, a row-major buffer holding `destination_box`.
void copy_box_region(std::span<const std::byte> source, const SliceBox& source_box, std::span<std::byte> destination,
                     const SliceBox& destination_box, const SliceBox& region, size_t element_size);

// Throws hai::Error naming `what` unless the boxes lie inside `shape`, are pairwise disjoint and together cover it.
void check_boxes_tile(const std::vector<SliceBox>& boxes, const std::vector<int64_t>& shape, const std::string& what);

}  // namespace hai
