#pragma once
// What each dataset of the bundled trainer can feed and what it needs on disk, as one table
// (data_checks.cpp: data_rules): the models it suits, and for each file setting (data.path,
// data.val_path) the kind of file, whether it must be given, and the hint. Every data check walks
// that table: `config validate` and every resolve (cross_check: what the settings show), the
// launcher on the host whose ranks read the files before any rank starts (check_before_launch:
// the files on disk) and the wizard (check_data_files). The ranks check the same again when they
// open the data. A new dataset adds one row.
#include <string>
#include <vector>

#include "lib/config/cross_checks.hpp"
#include "lib/config/train_choices.hpp"

namespace mtrain::config {

// data.name after `auto`: text for gpt (the embedded corpus unless data.path is set), synthetic
// for every other model.
DataName effective_data_name(const json& job);

// Model/data combinations that cannot train (resnet18 on text, gpt on cifar10, …). Pure.
std::vector<Problem> data_model_problems(const json& job);

// The dataset's file settings: one it needs left empty (pure), and with `on_disk` each file
// named on this machine: missing, the wrong kind (a folder, a FIFO), unreadable, a CIFAR-10
// folder without its batches, a token file whose header disagrees with its size. Reads at most
// the first 1024 bytes of a file, so it costs the same for any corpus size.
std::vector<Problem> data_file_problems(const json& job, bool on_disk);

// data_file_problems(job, true) as mtrain::Error (exit 2, the first problem): the wizard on an
// answer. (The launcher reports them with the job's other problems: check_before_launch.)
void check_data_files(const json& job);

}  // namespace mtrain::config
