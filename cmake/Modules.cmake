# hai_module(NAME DIR DEPS...): a static library of every *.cc in DIR (and DIR/cpu), plus DIR/cuda/*.cu when the
# CUDA backend is built. Each source directory is one module with one job; new files are picked up on reconfigure.
function(hai_module name dir)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cc ${dir}/cpu/*.cc)
  if(HAI_WITH_CUDA)
    file(GLOB cuda_sources CONFIGURE_DEPENDS ${dir}/cuda/*.cu ${dir}/cuda/*.cc)
    list(APPEND sources ${cuda_sources})
  endif()
  if(NOT sources)  # a header-only module
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARGN})
    return()
  endif()
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARGN})
  if(HAI_WITH_CUDA)
    target_compile_definitions(${name} PUBLIC HAI_WITH_CUDA=1)
    target_link_libraries(${name} PUBLIC CUDA::cudart CUDA::cublasLt hai_nccl)
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
  endif()
  hai_precompiled_headers(${name} hai_core ${HAI_LIBRARY_PRECOMPILED_HEADERS})
endfunction()

# hai_test(NAME SOURCE_DIR LIBS...): one GoogleTest binary of every *_test.cc in SOURCE_DIR (not *_mpi_test.cc),
# each test case registered with ctest.
function(hai_test name dir)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*_test.cc)
  list(FILTER sources EXCLUDE REGEX "_mpi_test\\.cc$")
  if(NOT sources)
    return()
  endif()
  add_executable(${name} ${sources})
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest_main)
  hai_precompiled_headers(${name} hai_mpi_test_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()

# hai_mpi_tests(DIR LIBS...): every *_mpi_test.cc in DIR becomes a GoogleTest binary (with the main() of
# hai_mpi_test_main, tests/CMakeLists.txt) that ctest runs under `mpirun -np 2` and `-np 4` (oversubscribed,
# allowed as root).
function(hai_mpi_tests dir)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*_mpi_test.cc)
  foreach(source ${sources})
    get_filename_component(name ${source} NAME_WE)
    add_executable(${name} ${source})
    target_link_libraries(${name} PRIVATE ${ARGN} hai_mpi_test_main)
    hai_precompiled_headers(${name} hai_mpi_test_main)
    foreach(np 2 4)
      add_test(NAME ${name}.np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} ${HAI_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${np}
                       $<TARGET_FILE:${name}>)
      set_tests_properties(${name}.np${np} PROPERTIES LABELS mpi TIMEOUT 120 PROCESSORS ${np})
    endforeach()
  endforeach()
endfunction()
