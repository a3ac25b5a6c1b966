# mtrain_module(NAME [DIR lib/sub/dir] SOURCES a.cpp ... DEPS target ... PRIVATE_DEPS ...)
#
# Declares library `mtrain_<NAME>` built from lib/<NAME> (or DIR). Headers live beside their
# sources and are included by their path from the repository root, "lib/<module>/<file>.hpp", so
# a reader (or a tool without compile_commands.json) opens the file an include names. The include
# root is not the repository root but a per-module folder in the build tree holding one link,
# lib/<path under lib> -> the module's folder, so a module can include another module's headers
# only if it links that module: a forbidden dependency fails the build, not just a review.
function(mtrain_module NAME)
  cmake_parse_arguments(M "" "DIR" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(NOT M_DIR)
    set(M_DIR lib/${NAME})
  endif()
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/lib ${PROJECT_SOURCE_DIR}/${M_DIR})
  set(root ${PROJECT_BINARY_DIR}/include/${NAME})
  get_filename_component(link_parent ${root}/lib/${rel} DIRECTORY)
  file(MAKE_DIRECTORY ${link_parent})
  if(NOT EXISTS ${root}/lib/${rel})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${M_DIR} ${root}/lib/${rel} SYMBOLIC)
  endif()
  add_library(mtrain_${NAME} STATIC ${M_SOURCES})
  target_include_directories(mtrain_${NAME} PUBLIC ${root})
  target_link_libraries(mtrain_${NAME} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  add_library(mtrain::${NAME} ALIAS mtrain_${NAME})
  mtrain_unity(mtrain_${NAME})
endfunction()

# Unity batches (MTRAIN_UNITY, top-level CMakeLists.txt): most of a unit's compile time is the
# headers it shares with its neighbours (LibTorch's inline templates in the trainer; Boost.Asio,
# fmt, nlohmann::json, CLI11 and yaml-cpp in the launcher's modules), parsed and instantiated
# again in every unit; eight units per batch do it once. On a 2-core machine the launcher's
# modules were ~4x the trainer's compile time, one unit at a time.
function(mtrain_unity TARGET)
  if(MTRAIN_UNITY)
    set_target_properties(${TARGET} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    # In a batch every unit but the first reads as a header to GCC, which then warns that a class
    # (a pimpl's Impl) holds a type from that unit's anonymous namespace — true only of headers.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${TARGET} PRIVATE -Wno-subobject-linkage)
    endif()
  endif()
endfunction()
