# Which LibTorch the worker builds against (docs/architecture.md §9, docs/gpu.md).
#
#   MTRAIN_TORCH=system   Debian's libtorch-dev 1.13 (CPU, Gloo), or an unpacked LibTorch zip named
#                         in CMAKE_PREFIX_PATH (searched first). The embedded default and the .deb.
#   MTRAIN_TORCH=python   the LibTorch inside a PyTorch 2.x wheel: MTRAIN_PYTHON's
#                         `torch.utils.cmake_prefix_path` (default: the checkout's .venv, made by
#                         scripts/python-env, else python3 on PATH). The line users with models
#                         scripted by today's PyTorch need; the wheel's LibTorch is CUDA-enabled,
#                         so MTRAIN_WITH_CUDA defaults to ON with it when a CUDA toolkit is found.
#
# Sets MTRAIN_TORCH_PYTHON: the interpreter whose torch matches the worker (the golden tests
# script their models with it), and gives the worker an RPATH to the LibTorch it linked, so it
# runs without LD_LIBRARY_PATH from the build tree and once installed.
set(MTRAIN_TORCH "system" CACHE STRING "LibTorch for mtrain-worker: system (Debian 1.13 or CMAKE_PREFIX_PATH) or python (MTRAIN_PYTHON's torch 2.x)")
set_property(CACHE MTRAIN_TORCH PROPERTY STRINGS system python)
set(MTRAIN_TORCH_PYTHON "" CACHE INTERNAL "")
# Switching lines in an existing tree: forget where the other line's packages were found.
if(DEFINED MTRAIN_TORCH_CONFIGURED AND NOT MTRAIN_TORCH_CONFIGURED STREQUAL MTRAIN_TORCH)
  unset(Torch_DIR CACHE)
  unset(Caffe2_DIR CACHE)
endif()
set(MTRAIN_TORCH_CONFIGURED ${MTRAIN_TORCH} CACHE INTERNAL "")

if(MTRAIN_TORCH STREQUAL "python")
  if(NOT MTRAIN_PYTHON)
    if(EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
      set(MTRAIN_PYTHON ${PROJECT_SOURCE_DIR}/.venv/bin/python)
    else()
      find_program(MTRAIN_PYTHON NAMES python3 REQUIRED)
    endif()
  endif()
  set(MTRAIN_PYTHON ${MTRAIN_PYTHON} CACHE FILEPATH "Python whose torch the worker builds against (MTRAIN_TORCH=python)" FORCE)
  execute_process(
    COMMAND ${MTRAIN_PYTHON} -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
    OUTPUT_VARIABLE torch_out ERROR_VARIABLE torch_err RESULT_VARIABLE torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT torch_rc EQUAL 0)
    message(FATAL_ERROR "MTRAIN_TORCH=python: '${MTRAIN_PYTHON}' cannot import torch (${torch_err}). "
                        "Run scripts/python-env (it makes .venv with the pinned PyTorch), or point "
                        "-DMTRAIN_PYTHON at an interpreter that has PyTorch 2.x.")
  endif()
  string(REPLACE "\n" ";" torch_out "${torch_out}")
  list(GET torch_out 0 torch_prefix)
  list(GET torch_out 1 torch_version)
  # TorchConfig finds its libraries with find_library(... PATHS <wheel>/lib), which searches the
  # system directories first: with Debian's libtorch-dev installed beside, it would link 1.13's
  # libtorch.so into a 2.x build. CMAKE_LIBRARY_PATH is searched before them.
  get_filename_component(torch_root ${torch_prefix}/../.. ABSOLUTE)
  list(PREPEND CMAKE_PREFIX_PATH ${torch_prefix})
  list(PREPEND CMAKE_LIBRARY_PATH ${torch_root}/lib)
  set(Torch_DIR ${torch_prefix}/Torch CACHE PATH "" FORCE)
  # The CUDA libraries the wheel's libtorch_cuda.so needs (NCCL, cuBLAS, cuDNN, …) come in pip's
  # nvidia-* packages beside torch; it finds them at run time by its own RPATH. The linker must
  # resolve against the same ones, not against an older copy in /usr/local/cuda (NCCL there
  # lacks symbols the wheel's NCCL has).
  file(GLOB nvidia_libdirs LIST_DIRECTORIES true ${torch_root}/../nvidia/*/lib)
  foreach(dir ${nvidia_libdirs})
    add_link_options(LINKER:-rpath-link,${dir})
  endforeach()
  set(MTRAIN_TORCH_PYTHON ${MTRAIN_PYTHON} CACHE INTERNAL "")
  message(STATUS "mtrain: LibTorch from ${MTRAIN_PYTHON}: torch ${torch_version} (${torch_prefix})")
elseif(MTRAIN_TORCH STREQUAL "system")
  if(EXISTS /usr/bin/python3)
    set(MTRAIN_TORCH_PYTHON /usr/bin/python3 CACHE INTERNAL "")  # Debian's python3-torch
  endif()
else()
  message(FATAL_ERROR "MTRAIN_TORCH is '${MTRAIN_TORCH}'; use system or python")
endif()

# A CUDA LibTorch's config looks for the CUDA toolkit; /usr/local/cuda is where it is installed.
if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CUDAToolkit_ROOT /usr/local/cuda)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
endif()
find_package(Torch REQUIRED)
message(STATUS "mtrain: LibTorch ${Torch_VERSION} at ${Torch_DIR}")

# The directory holding libtorch*.so (TorchConfig's TORCH_LIBRARY is its libtorch.so): the
# worker's install RPATH when it is not a system directory.
set(MTRAIN_TORCH_LIBDIR "")
if(TORCH_LIBRARY)
  get_filename_component(MTRAIN_TORCH_LIBDIR ${TORCH_LIBRARY} DIRECTORY)
endif()

# CUDA on by default exactly when the LibTorch found has it.
set(torch_has_cuda OFF)
if(TARGET c10_cuda OR TORCH_LIBRARIES MATCHES "c10_cuda")
  set(torch_has_cuda ON)
endif()
option(MTRAIN_WITH_CUDA "Trainer: CUDA device and NCCL backend (needs a CUDA LibTorch)" ${torch_has_cuda})
if(MTRAIN_WITH_CUDA AND NOT torch_has_cuda)
  message(FATAL_ERROR "MTRAIN_WITH_CUDA=ON but the LibTorch found (${Torch_DIR}) has no CUDA; use "
                      "-DMTRAIN_TORCH=python with a CUDA wheel, or a CUDA LibTorch in CMAKE_PREFIX_PATH")
endif()
message(STATUS "mtrain: CUDA/NCCL in the worker: ${MTRAIN_WITH_CUDA}")
