# Precompiled headers: the standard and third-party headers that nearly every translation unit parses (fmt in 191
# of 204 library sources; GoogleTest in every test). One is built for the libraries (by hai_core, which every
# other library depends on) and one for the tests (by hai_mpi_test_main, tests/CMakeLists.txt); every other
# library or test reuses it, so each is compiled once. Headers used by few sources (nlohmann/json, MPI, CUDA,
# <filesystem>) stay out: loading a larger precompiled header costs every source more than they save.
# NOTE: off by default under a compiler launcher such as ccache, which does not cache compilations that use a
# precompiled header unless its sloppiness settings allow it.
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(hai_precompiled_headers_default OFF)
else()
  set(hai_precompiled_headers_default ON)
endif()
option(HAI_PRECOMPILED_HEADERS "Precompile the common standard and third-party headers"
       ${hai_precompiled_headers_default})

set(HAI_LIBRARY_PRECOMPILED_HEADERS <algorithm> <cmath> <cstdint> <cstring> <map> <memory> <optional> <span>
    <string> <vector> <fmt/format.h>)
set(HAI_TEST_PRECOMPILED_HEADERS ${HAI_LIBRARY_PRECOMPILED_HEADERS} <gtest/gtest.h>)

# hai_precompiled_headers(TARGET DONOR HEADERS...): DONOR precompiles HEADERS for its C++ sources (not CUDA
# ones); any other TARGET reuses DONOR's, which needs the same compile flags (position-independent code, debug
# information) and the same definitions of the macros those headers read.
function(hai_precompiled_headers target donor)
  if(NOT HAI_PRECOMPILED_HEADERS)
    return()
  endif()
  if(target STREQUAL donor)
    list(TRANSFORM ARGN REPLACE "(.+)" "$<$<COMPILE_LANGUAGE:CXX>:\\1>" OUTPUT_VARIABLE headers)
    target_precompile_headers(${target} PRIVATE ${headers})
  else()
    target_precompile_headers(${target} REUSE_FROM ${donor})
  endif()
endfunction()
