#pragma once
// The settings registry: every job setting once, with its type, default, allowed values, help,
// YAML key, CLI flag and environment variable. CLI flags, YAML validation, `config show` and the
// worker's job spec are all derived from it, so they cannot drift apart.
//
// A resolved job is a nested JSON object keyed by the dotted YAML path ("train.max_steps" →
// {"train": {"max_steps": …}}) with every setting present. The launcher resolves it (defaults <
// job file < MTRAIN_* environment < flags < --set) and hands it to each worker as JSON.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::config {

using json = nlohmann::json;

enum class Type { Bool, Int, Float, String, Choice };

// Who consumes a setting: the worker (Job, handed over in the job spec), or the launcher itself
// (Launch: ranks, hosts, rendezvous; Slurm: the allocation). Derived from the key's first part.
enum class Scope { Job, Launch, Slurm };
std::string to_string(Scope s);

struct Setting {  // NOLINT(bugprone-exception-escape): lib/bench/report.hpp says why
  std::string key;              // dotted YAML path, e.g. "train.max_steps"
  Type type = Type::String;
  json default_value;
  std::string help;
  std::vector<std::string> choices;  // Type::Choice
  std::optional<double> min, max;    // Int / Float, inclusive
  std::string flag;             // long CLI flag without dashes ("max-steps"); empty: --set only
  std::string env;              // environment variable; empty: derived from the flag, else the key
  Scope scope = Scope::Job;     // set by Registry::add from the key ("launch.*", "slurm.*")
  // Launch/Slurm settings: the flag is one `mtrain launch` defines itself (--nproc-per-node …).
  // Registry::add moves it here from `flag`, so loops that add a flag per trainer setting (those
  // with a non-empty `flag`) never add it twice; cli_flag() gives whichever is set.
  std::string launcher_flag;
  std::vector<std::string> aliases;  // other spellings of the flag, without dashes ("nproc")
  // Several values, stored as a JSON array (a YAML list; each flag appends, in order). Each item
  // is checked as the setting's type; the default is an empty list. One text (a flag, a variable,
  // --set, a YAML scalar) holds its items separated by `list_separator`: a line break (repeated
  // flags are joined with it; slurm.setup lines hold commas) or ',' for a list of names, which
  // may also be bracketed ("[Block, Linear]"); names are trimmed and empty ones dropped.
  bool list = false;
  char list_separator = '\n';
  bool allow_auto = false;      // Int/Float: the text "auto" is also accepted (DeepSpeed style)
  // String: what the text may look like ("N, auto, cpu or gpu") and a check returning the
  // problem ("" when fine). Both empty: any text.
  std::string format;
  std::function<std::string(const std::string&)> check_text;
  // The setting describes one node or one run of `mtrain launch` (--node-rank, --node-name,
  // --dry-run, --format), not the job: every node of a job reads the same job file, and a file
  // that said "node 1" or "print the plan only" would be wrong on every other node or run. So
  // only its flag and its MTRAIN_ variable give it; a job file, the user file or --set that
  // names it is refused (per_invocation_refusal), and `config show` leaves it out.
  bool per_invocation = false;
};

// The command-line flag of a setting, without dashes: `flag`, else `launcher_flag`, else "".
std::string cli_flag(const Setting& s);
// A flag or alias as typed: one letter is a short flag ("m" → "-m"), else "--module".
std::string dashed(const std::string& name);

// Why a per-invocation setting cannot come from `where` ("a job file", "--set") and what to give
// instead, as {message, hint}: the job file reader and --set refuse it with the same words.
std::pair<std::string, std::string> per_invocation_refusal(const Setting& s, const std::string& where);

// The section a setting belongs to: its key up to the first dot ("train.max_steps" → "train",
// "strategy" → "strategy").
std::string section_of(const std::string& key);
// What a setting takes, in words ("an integer from 1 to 65535", "one of ddp, zero1, …").
std::string describe_type(const Setting& s);

// MTRAIN_<NAME> for a flag or key: upper case, '-' and '.' as '_' ("nproc-per-node" →
// MTRAIN_NPROC_PER_NODE). Every flag's variable, registry or not, follows this rule.
std::string env_name(const std::string& base);

// Where a value came from, in increasing priority.
enum class Source { Default, UserFile, JobFile, Env, Cli };
std::string to_string(Source s);

class Registry {
 public:
  void add(Setting s);
  const Setting* find(const std::string& key) const;
  const Setting* find_flag(const std::string& flag) const;
  const std::vector<Setting>& all() const { return settings_; }
  std::vector<std::string> keys() const;

  // "unknown setting 'optim.lrr'; did you mean 'optim.lr'?" — throws mtrain::Error.
  const Setting& require(const std::string& key) const;

  // Parse text from a flag, environment variable or --set into the setting's type; throws an
  // Error naming the key, the value and what is allowed. A list setting takes its items one per
  // line (flags join repeated values with '\n') and gives an array.
  json parse_text(const Setting& s, const std::string& text) const;
  // Check a value that is already typed (from YAML or JSON); same errors.
  json check_value(const Setting& s, const json& value) const;

  // Every setting at its default, as a nested object.
  json defaults() const;

 private:
  std::vector<Setting> settings_;
  std::map<std::string, size_t> by_key_;
  std::map<std::string, size_t> by_flag_;
};

// Values set at one layer, by dotted key (already checked against the registry).
struct Layer {
  Source source = Source::Default;
  std::string origin;                 // file path, "environment", "command line"
  std::map<std::string, json> values;
};

struct Resolved {  // NOLINT(bugprone-exception-escape): lib/bench/report.hpp says why
  json job;                                       // nested, every key present
  std::map<std::string, std::pair<Source, std::string>> provenance;  // key → (source, origin)
  std::vector<std::string> warnings;              // cross-field warnings (resolve_job fills them)
};

// Apply layers in order (later wins) over the defaults, then run cross-field checks.
Resolved resolve(const Registry& reg, const std::vector<Layer>& layers);

// --set "train.max_steps=5" → {key, text}; throws naming the argument when there is no '='.
std::pair<std::string, std::string> split_assignment(const std::string& arg);

// Read a nested job spec back, checking every key against the registry (unknown keys and bad
// values are errors; missing keys take their defaults). Used by the worker on its --job file.
json load_job(const Registry& reg, const json& nested, const std::string& origin);

// Nested access by dotted key.
const json& get(const json& nested, const std::string& key);
// Typed reads of a resolved job (the registry validated every value's type).
inline long long as_int(const json& job, const std::string& key) { return get(job, key).get<long long>(); }
inline double as_num(const json& job, const std::string& key) { return get(job, key).get<double>(); }
inline std::string as_text(const json& job, const std::string& key) { return get(job, key).get<std::string>(); }
inline bool as_bool(const json& job, const std::string& key) { return get(job, key).get<bool>(); }
void set(json& nested, const std::string& key, json value);

// Only the settings the worker consumes (Scope::Job), nested; the launcher hands this to ranks.
json job_spec(const Registry& reg, const json& resolved);

// The registry of every job setting (strategy, model, data, optimiser, schedule, loop, checkpoint).
const Registry& job_registry();

}  // namespace mtrain::config
