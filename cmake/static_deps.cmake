# fmt, yaml-cpp and zlib as static code in every binary (docs/architecture.md §1, "Why two
# binaries"). `mtrain` answers --help and --version in about the time of exec itself only when
# it maps no C++ shared object: each one (libstdc++, libyaml-cpp, libfmt) costs page faults and
# relocations at every start, and libyaml-cpp.so or libfmt.so alone would pull libstdc++.so back
# in even with -static-libstdc++ (apps/mtrain links the C++ runtime statically). glibc stays
# shared: getaddrinfo and NSS, which the launcher needs for ssh hosts and rendezvous endpoints,
# only work from the shared libc.
#
# The choice lives here only: every CMakeLists links static::fmt, static::yaml_cpp and
# static::zlib, never fmt::fmt, yaml-cpp or ZLIB::ZLIB. Not mtrain::: that prefix names the
# project's own modules (docs/architecture.md §2, checked by tests/unit/layout).

# fmt: Debian ships libfmt only as a shared object (no libfmt.a), and header-only mode costs
# about 3 s more per translation unit, so fmt's compiled part is built once here from its own
# headers (lib/fmt/format.cpp). That file's instantiation list is fmt 9's: another major
# version has to be checked against its format-inl.h first.
find_package(fmt 9 REQUIRED)
if(NOT fmt_VERSION VERSION_LESS 10)
  message(FATAL_ERROR "fmt ${fmt_VERSION} found; lib/fmt/format.cpp instantiates what fmt 9's "
    "headers leave to the library. Install libfmt-dev 9.x, or check the list against the new "
    "version's format-inl.h and src/format.cc and raise this bound.")
endif()
add_library(fmt_static STATIC ${PROJECT_SOURCE_DIR}/lib/fmt/format.cpp)
target_include_directories(fmt_static SYSTEM PUBLIC
  $<TARGET_PROPERTY:fmt::fmt-header-only,INTERFACE_INCLUDE_DIRECTORIES>)
target_compile_features(fmt_static PUBLIC cxx_std_17)
# FMT_SHARED, as Debian's fmt::fmt sets it: with GCC its only effect is FMT_API =
# visibility("default"), which every symbol here has anyway (no -fvisibility=hidden), so the code
# is the same. It keeps each compile line as it was when fmt came from libfmt.so, so ccache reuses
# those objects instead of recompiling every translation unit of every tree (the trainer's
# LibTorch units alone take about 20 minutes on two cores).
target_compile_definitions(fmt_static PUBLIC FMT_SHARED)
add_library(static::fmt ALIAS fmt_static)
# Debian's LibTorch 1.13 itself calls libfmt.so.9: in the 1.13 line's worker those calls bind to
# the worker's own copy (the linker exports the fmt symbols a linked library asks for), built from
# the same fmt 9 headers, so one fmt serves the process.

# mtrain_find_archive(<archive file name> <what to install>): the archive's path in the cache
# variable MTRAIN_ARCHIVE_<name as a C identifier>, or a configure error naming the package.
function(mtrain_find_archive archive package)
  string(MAKE_C_IDENTIFIER "MTRAIN_ARCHIVE_${archive}" var)
  find_library(${var} NAMES ${archive})
  if(NOT ${var})
    message(FATAL_ERROR "${archive} not found: mtrain links it statically (cmake/static_deps.cmake). "
      "Install ${package}, which ships the archive (scripts/bootstrap does).")
  endif()
endfunction()

# mtrain_static_archive(<target> <archive file name> <headers from> <what to install>)
# An imported target for a system library's static archive, with the include folders of the
# package's own (shared) target.
function(mtrain_static_archive target archive headers_from package)
  mtrain_find_archive(${archive} ${package})
  string(MAKE_C_IDENTIFIER "MTRAIN_ARCHIVE_${archive}" var)
  add_library(${target} STATIC IMPORTED)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${${var}})
  get_target_property(includes ${headers_from} INTERFACE_INCLUDE_DIRECTORIES)
  if(includes)
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${includes}")
  endif()
endfunction()

find_package(yaml-cpp REQUIRED)
mtrain_static_archive(static::yaml_cpp libyaml-cpp.a yaml-cpp libyaml-cpp-dev)
find_package(ZLIB REQUIRED)
mtrain_static_archive(static::zlib libz.a ZLIB::ZLIB zlib1g-dev)

# OpenSSL for TLS to etcd (lib/rendezvous/etcd_tls.cpp), launcher side only: the worker never
# links the rendezvous. Static for the same reason as above (mtrain maps only glibc); libcrypto
# calls dlopen and threads, which glibc provides. The cost, measured on `mtrain --help` (issue 43):
# mtrain 14.5 -> 22.3 MB and ~19,000 more relative relocations applied at every start, +~117 minor
# page faults and +~0.4 ms CPU (2.1 -> 2.5 ms). -Wl,-z,pack-relative-relocs halves the CPU part
# but needs glibc 2.36 where mtrain runs; -no-pie would remove it all, with the executable's ASLR.
find_package(OpenSSL 3 REQUIRED)
mtrain_static_archive(static::crypto libcrypto.a OpenSSL::Crypto libssl-dev)
set_property(TARGET static::crypto PROPERTY INTERFACE_LINK_LIBRARIES ${CMAKE_DL_LIBS} Threads::Threads)
mtrain_static_archive(static::ssl libssl.a OpenSSL::SSL libssl-dev)
set_property(TARGET static::ssl PROPERTY INTERFACE_LINK_LIBRARIES static::crypto)

# gRPC for etcd's native API (lib/rendezvous/etcd_grpc.cpp), launcher side only and static for
# the reasons above: Debian's libgrpc++-dev ships the archives, and gRPC's own dependencies
# (abseil, re2, c-ares, upb, protobuf) are archives too. One link group, since those archives
# call each other in both directions and their order would otherwise matter; the linker takes
# only the objects mtrain calls.
find_program(MTRAIN_GRPC_CPP_PLUGIN grpc_cpp_plugin)
find_program(MTRAIN_PROTOC protoc)
if(NOT MTRAIN_GRPC_CPP_PLUGIN OR NOT MTRAIN_PROTOC)
  message(FATAL_ERROR "protoc and grpc_cpp_plugin not found: etcd's gRPC API is compiled from "
    "lib/rendezvous/etcd_api.proto. Install protobuf-compiler and protobuf-compiler-grpc (scripts/bootstrap).")
endif()
set(grpc_archives)
foreach(archive libgrpc++.a libgrpc.a libupb.a libgpr.a libaddress_sorting.a libre2.a libcares.a libprotobuf-lite.a)
  mtrain_find_archive(${archive} "libgrpc++-dev, libre2-dev, libc-ares-dev and libprotobuf-dev")
  string(MAKE_C_IDENTIFIER "MTRAIN_ARCHIVE_${archive}" var)
  list(APPEND grpc_archives ${${var}})
endforeach()
get_filename_component(grpc_archive_dir ${MTRAIN_ARCHIVE_libgrpc_a} DIRECTORY)
file(GLOB absl_archives ${grpc_archive_dir}/libabsl_*.a)
if(NOT absl_archives)
  message(FATAL_ERROR "no libabsl_*.a beside ${MTRAIN_ARCHIVE_libgrpc_a}: install libabsl-dev")
endif()
# The headers beside the archives (gRPC's, abseil's, protobuf's: one include folder on Debian, or
# the unpacked packages of scripts/gpu-deps on a machine without a registry).
find_path(MTRAIN_GRPC_INCLUDE grpcpp/grpcpp.h REQUIRED)
add_library(static_grpcpp INTERFACE)
target_include_directories(static_grpcpp SYSTEM INTERFACE ${MTRAIN_GRPC_INCLUDE})
target_link_libraries(static_grpcpp INTERFACE
  "-Wl,--start-group" ${grpc_archives} ${absl_archives} ${MTRAIN_ARCHIVE_libssl_a} ${MTRAIN_ARCHIVE_libcrypto_a}
  ${MTRAIN_ARCHIVE_libz_a} "-Wl,--end-group" ${CMAKE_DL_LIBS} Threads::Threads rt)
add_library(static::grpcpp ALIAS static_grpcpp)
