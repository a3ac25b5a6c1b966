// `mtrain slurm`: write, submit and follow Slurm jobs; `slurm task` runs one rank under srun.
// Flags are the registry's slurm.* settings, resolved with the job file's `slurm:` section, the
// environment and --set, then bound to mtrain::slurm::JobOptions; everything else is in lib/slurm.
#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "console.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/output_format.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/environment.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/slurm/job_ops.hpp"
#include "lib/slurm/task_exec.hpp"
#include "lib/slurm/writer_job.hpp"
#include "generated/version.hpp"
#include "lib/core/own_executable.hpp"

namespace mtrain::app {

namespace {

namespace fs = std::filesystem;
namespace sl = mtrain::slurm;

// --format's word, typed where it is read (the option stays free text, as its help says).
config::OutputFormat output_format(const std::string& f) {
  if (const auto v = config::parse_choice<config::OutputFormat>(f)) return *v;
  throw UsageError("--format must be text or json, not '" + f + "'");
}

// What `slurm script|submit` read before `--`: its own options, the generated slurm.* flags, and
// the rest, which go on to `mtrain launch` in order.
struct WriterArgs {
  std::string config, script_file, format_word = "text";
  config::OutputFormat format = config::OutputFormat::Text;
  std::map<std::string, std::string> flags;
  std::vector<std::string> sets, launch_args;
};

// Parses the words before `--` (`before`, in CLI11's reversed order); nothing when --help was
// asked, after printing it.
std::optional<WriterArgs> parse_writer_args(const std::string& name, bool submit, std::vector<std::string> before) {
  CLI::App in{submit ? "Write an sbatch script, submit it, print the job id. Options that are not "
                       "listed here are passed to `mtrain launch`; after -- comes the program "
                       "(default: the bundled trainer)."
                     : "Print the sbatch script of a job. Options that are not listed here are "
                       "passed to `mtrain launch`; after -- comes the program.",
              "mtrain slurm " + name};
  in.allow_extras();
  WriterArgs a;
  in.add_option("--config", a.config, "Job file (YAML); its `slurm:` section sets the options below");
  if (submit) {
    in.add_option("--script-file", a.script_file, "Where to write the script (default: mtrain-slurm/<job-name>.sbatch)");
    in.add_option("--format", a.format_word, "text (the job id) or json");
  }
  // The slurm.* settings of the registry, generated (config::add_setting_flags).
  config::add_setting_flags(in, config::job_registry(), a.flags, {config::Scope::Slurm}, "Slurm settings (slurm.* in the job file)");
  in.add_option("--set", a.sets, "slurm.KEY=VALUE (repeatable); other keys go on to `mtrain launch --set`");
  std::reverse(before.begin(), before.end());
  try {
    in.parse(before);
  } catch (const CLI::CallForHelp&) {
    print_stdout(in.help());
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what(), "See `mtrain slurm " + name + " --help`.");
  }
  a.format = output_format(a.format_word);
  a.launch_args = in.remaining();
  return a;
}

// One resolution for every source (defaults < user file < --config < MTRAIN_SLURM_* < flags <
// --set), as `mtrain launch` resolves the same file inside the allocation.
sl::JobOptions writer_job_of(const WriterArgs& a, const std::vector<std::string>& program, const std::string& cwd) {
  const auto split = sl::split_sets(a.sets);
  config::JobInputs inputs;
  inputs.job_file = a.config;
  inputs.flags = a.flags;
  inputs.env = mtrain::process_environment();
  inputs.sets = split.slurm;
  return sl::writer_job(config::resolve_job(config::job_registry(), inputs).job,
                        {a.config, a.launch_args, split.launch, program, own_executable(), cwd});
}

// --script-file, else mtrain-slurm/<job-name>.sbatch: written, then submitted with sbatch.
sl::Submitted submit_script(const sl::JobOptions& job, const sl::ScriptContext& ctx, const WriterArgs& a,
                            const std::string& cwd) {
  sl::SystemRunner runner;
  sl::SlurmClient client(runner);
  const std::string script_file = a.script_file.empty() ? sl::default_script_file(job, cwd) : a.script_file;
  return sl::submit_job(job, ctx, script_file, client, sl::default_state_dir());
}

void print_submitted(const sl::Submitted& s, config::OutputFormat format) {
  if (format == config::OutputFormat::Json) {
    print_stdout(
        nlohmann::json{
            {"job_id", s.job_id}, {"cluster", s.cluster}, {"script", s.script_path}, {"output", s.output_pattern}}
            .dump() +
        "\n");
  } else {
    print_stdout(s.job_id + "\n");
    std::fprintf(stderr, "mtrain: submitted %s as job %s; output: %s\n", s.script_path.c_str(),
                 s.job_id.c_str(), s.output_pattern.c_str());
  }
}

// script / submit: options before `--` are Slurm settings (known) or launch options (the rest,
// passed to `mtrain launch` in order); after `--` comes the program.
void add_writer(CLI::App* slurm, const std::string& name, bool submit, Exit& exit) {
  auto* sub = slurm->add_subcommand(
      name, submit ? "Write the sbatch script, submit it with sbatch and print the job id"
                   : "Print the sbatch script for a job (nothing is submitted)");
  sub->prefix_command();
  sub->allow_extras();
  sub->set_help_flag();
  sub->footer("Run `mtrain slurm " + name + " --help` for the options.");
  sub->callback([sub, name, submit, &exit] {
    // main splits off the words after the first `--` (the program); the rest are options.
    const auto args = parse_writer_args(name, submit, sub->remaining());
    exit.code = 0;
    if (!args) return;  // --help was asked and printed
    const std::string cwd = fs::current_path().string();
    const sl::JobOptions job = writer_job_of(*args, exit.after_dashdash, cwd);
    const sl::ScriptContext ctx{kVersion, "mtrain slurm " + name};
    if (submit) return print_submitted(submit_script(job, ctx, *args, cwd), args->format);
    const std::string text = sl::render_script(job, ctx);
    sl::make_output_folders(job, cwd);  // the script is for sbatch, which will not create them
    print_stdout(text);
  });
}

}  // namespace

void build_slurm(CLI::App* slurm, Exit& exit) {
  slurm->require_subcommand(1);
  add_writer(slurm, "script", false, exit);
  add_writer(slurm, "submit", true, exit);

  {
    auto* sub = slurm->add_subcommand("status", "Show a job's state and exit code");
    auto id = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("text");
    sub->add_option("job_id", *id, "Job id")->required();
    sub->add_option("--format", *format, "text or json");
    sub->callback([id, format, &exit] {
      const config::OutputFormat as = output_format(*format);
      sl::SystemRunner runner;
      sl::SlurmClient client(runner);
      auto st = client.status(*id);
      print_stdout(as == config::OutputFormat::Json
                       ? st.to_json().dump() + "\n"
                       : "job " + st.job_id + " (" + st.name + "): " + st.readable() + "\n");
      exit.code = 0;
    });
  }
  {
    auto* sub = slurm->add_subcommand("logs", "Print a job's output (-f: follow it until the job ends)");
    auto id = std::make_shared<std::string>();
    auto opt = std::make_shared<sl::LogOptions>();
    sub->add_option("job_id", *id, "Job id")->required();
    sub->add_flag("-f,--follow", opt->follow, "Keep printing new output until the job ends");
    sub->add_flag("--error", opt->errors, "The job's --error file instead of its output");
    sub->add_option("--rank", opt->rank, "Only the lines of this rank (task pattern: srun --label)");
    sub->add_option("--timeout", opt->timeout_s, "Stop following after this many seconds (0: never)");
    sub->callback([id, opt, &exit] {
      sl::SystemRunner runner;
      sl::SlurmClient client(runner);
      sl::show_logs(client, *id, *opt, sl::default_state_dir(),
                    [](const std::string& line) { print_stdout(line + "\n"); });
      exit.code = 0;
    });
  }
  {
    auto* sub = slurm->add_subcommand("cancel", "Cancel a job (or send it a signal)");
    auto id = std::make_shared<std::string>();
    auto sig = std::make_shared<std::string>();
    sub->add_option("job_id", *id, "Job id")->required();
    sub->add_option("--signal", *sig, "Send this signal instead of cancelling, e.g. USR1");
    sub->callback([id, sig, &exit] {
      sl::SystemRunner runner;
      sl::SlurmClient client(runner);
      client.cancel(*id, *sig);
      std::fprintf(stderr, "mtrain: %s job %s\n", sig->empty() ? "cancelled" : ("sent " + *sig + " to").c_str(), id->c_str());
      exit.code = 0;
    });
  }
  {
    auto* sub = slurm->add_subcommand(
        "task", "Run PROGRAM as one rank of an srun step: Slurm's task environment → torchrun variables");
    sub->prefix_command();
    auto opt = std::make_shared<sl::TaskEnvOptions>();
    sub->add_option("--role", opt->role_name, "ROLE_NAME of the ranks");
    sub->add_option("--max-restarts", opt->max_restarts, "TORCHELASTIC_MAX_RESTARTS to report");
    sub->callback([sub, opt, &exit] {
      auto program = exit.program(sub->remaining());
      if (!program.empty() && program.front() == "--") program.erase(program.begin());
      sl::exec_as_rank(program, *opt);
    });
  }
}

}  // namespace mtrain::app
