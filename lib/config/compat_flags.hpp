#pragma once
// The flag habits of the tools mtrain replaces — torchrun, the DeepSpeed launcher (`deepspeed`)
// and `accelerate launch` — declared once, in one table. Every foreign spelling (underscore and
// dash forms) is either taken with exactly that tool's meaning (rewritten into mtrain's own
// flags before `mtrain launch` parses its command line) or refused with one paragraph naming the
// mtrain equivalent. `mtrain launch --help` prints the table as its Compatibility section.
//
// The rewrite is pure: it sees the words between `launch` and the program, and a description of
// launch's own flags (which exist, which take a value). The first word that is not a flag (or
// not a flag's value) starts the program, as in torchrun; `--` stays optional.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mtrain::config {

// Which tool a spelling comes from (bits, a spelling may be shared).
enum CompatTool : unsigned { kTorchrun = 1, kDeepSpeed = 2, kAccelerate = 4 };

enum class CompatAction {
  Rename,     // the same meaning as an mtrain flag: rewritten to `target`, the value passed on
  Translate,  // the same meaning, but the value is converted (target names the rule)
  Accept,     // accepted; mtrain already behaves this way (a note says so)
  Refuse,     // exit 2 with `meaning` as the paragraph naming the mtrain equivalent
};

struct CompatFlag {
  std::vector<std::string> spellings;  // "--nproc_per_node", "--nproc-per-node", "-r", …
  unsigned tools = 0;                  // CompatTool bits
  bool takes_value = false;
  CompatAction action = CompatAction::Rename;
  std::string target;   // Rename: mtrain's flag; Translate: the rule's name
  std::string meaning;  // help line (Rename/Translate/Accept) or the refusal paragraph
};

// The table, in help order.
const std::vector<CompatFlag>& compat_flags();
// The entry of one spelling ("--nproc_per_node"), or nullptr.
const CompatFlag* find_compat_flag(std::string_view spelling);

// Every spelling `mtrain launch` takes for a launch.* setting's flag, dashed: the registry's flag
// and aliases, then the foreign spellings this table renames to it ("launch.nproc_per_node" →
// --nproc-per-node, --nproc, --nproc_per_node). Readers of launch words outside the launcher
// (the Slurm writer) use it, so a spelling is declared once. Translated flags (--num_gpus,
// --num_processes) are not spellings: their values change meaning on the way.
std::vector<std::string> flag_spellings(const std::string& key);

// launch's own flags: "--nproc-per-node" → takes a value; "-m" → a plain flag.
using KnownFlags = std::map<std::string, bool>;

struct CompatRewrite {
  std::vector<std::string> args;   // launch's options in mtrain spellings, then the program as given
  std::vector<std::string> notes;  // one line each: what a foreign flag did ("--standalone: …")
};

// Rewrites the words after `launch` (those before a first `--`; the program may start among
// them). Throws mtrain::Error (exit 2) for a refused flag, a bad value, or an unknown flag
// before the program (with did-you-mean over mtrain's and the foreign spellings).
CompatRewrite rewrite_launch_args(const std::vector<std::string>& args, const KnownFlags& known);

// The Compatibility section of `mtrain launch --help`, generated from the table.
std::string compat_help();

}  // namespace mtrain::config
