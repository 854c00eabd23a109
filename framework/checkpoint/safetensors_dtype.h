#pragma once
// The dtype names of the safetensors format ("F32", "BF16", "F8_E4M3", ...) for the dtypes hai-train stores.

#include <optional>
#include <string_view>

#include "framework/core/dtype.h"

namespace hai {

std::string_view safetensors_dtype_name(DType dtype);

// The DType of a safetensors dtype name; nullopt for a name that safetensors does not define or that hai-train
// cannot hold (F64, I8, BOOL, ...). The caller reports it with the file and tensor.
std::optional<DType> parse_safetensors_dtype(std::string_view name);

}  // namespace hai
