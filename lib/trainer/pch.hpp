// Precompiled header of the trainer core: the LibTorch headers every part uses.
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/serialize.h>
#include <torch/csrc/autograd/variable.h>
#include <fmt/format.h>
// fmt::join lives here from fmt 11 on (a PyTorch 2.x wheel's bundled fmt; Debian's 9 has both).
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
