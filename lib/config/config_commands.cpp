#include "lib/config/config_commands.hpp"

#include "lib/core/atomic_file.hpp"
#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "lib/config/docs.hpp"
#include "lib/config/export.hpp"
#include "lib/config/import.hpp"
#include "lib/config/render.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/config/validate.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::config {

namespace {

[[noreturn]] void cannot_write(const std::string& path, int err) {
  throw Error(fmt::format("cannot write {}: {}", path, std::strerror(err)),
              "Check that the folder exists and is writable and that the disk has room; nothing else was changed.",
              kExitFailure);
}

}  // namespace

void write_file(const std::string& path, const std::string& text, bool force) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!force && exists)
    throw Error(fmt::format("{} already exists; nothing was changed", path),
                "Pass --force to overwrite it, or -o to write another file.");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO (-o /dev/stdout): written in place; a rename would replace the node.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC));
    if (!fd) cannot_write(path, errno);
    const int err = write_fully(fd.get(), text);
    const int closed = fd.close();
    if (err != 0 || closed != 0) cannot_write(path, err != 0 ? err : closed);
    return;
  }
  // Synced before the rename: a config written by the wizard must survive the machine's crash.
  AtomicWrite how;
  how.sync = true;
  if (const int err = replace_file_atomically(path, text, how); err != 0) cannot_write(path, err);
}

void write_stdout(std::ostream& out, const std::string& text) {
  out << text;
  out.flush();
  if (!out)
    throw Error(fmt::format("cannot write to standard output ({} bytes)", text.size()),
                "Standard output is closed, a full disk or a pipe whose reader is gone; write to a file with -o.",
                kExitFailure);
}

int config_show(const Registry& reg, const ShowOptions& opt, std::ostream& out, std::ostream& err) {
  JobInputs in{opt.job_file, opt.flags, opt.sets, opt.env, opt.user_file};
  Resolved r = resolve_job(reg, in);
  if (opt.format == ShowFormat::Json) {
    write_stdout(out, show_json(reg, r, opt.sources).dump(2) + "\n");
    for (const auto& w : r.warnings) err << "warning: " << w << "\n";
  } else {
    write_stdout(out, show_yaml(reg, r, opt.sources));
  }
  return kExitOk;
}

int config_validate(const Registry& reg, const ValidateOptions& opt, std::ostream& out, std::ostream& err) {
  ValidateReport rep = validate_file_as_launch(reg, opt.file, opt.check_model);
  if (opt.format == OutputFormat::Json) {
    json issues = json::array();
    for (const auto& i : rep.issues)
      issues.push_back({{"severity", i.error ? "error" : "warning"}, {"file", i.where.file},
                        {"line", i.where.line}, {"column", i.where.column}, {"key", i.key},
                        {"message", i.message}, {"hint", i.hint}});
    out << json{{"file", rep.file}, {"valid", rep.ok()}, {"issues", issues},
                {"issues_not_listed", rep.issues_dropped}}.dump(2) << "\n";
  } else {
    (rep.ok() ? out : err) << format_report(rep);
  }
  return rep.ok() ? kExitOk : kExitUsage;
}

int config_import(const Registry& reg, const ImportOptions& opt, std::ostream& out, std::ostream& err) {
  ImportResult r = import_file(reg, opt.file);
  const std::string text = import_yaml(reg, r);
  const std::string name = opt.output.empty() ? "imported job" : opt.output;
  ValidateReport rep = validate_text(reg, text, name);
  // A warning quotes the source's keys and values: made visible (no terminal escapes from the file).
  for (const auto& w : r.warnings) err << "warning: " << r.origin << ": " << visible_text(w) << "\n";
  if (!rep.ok())
    throw Error(fmt::format("{} imports to a job that is not valid:\n{}", opt.file, format_report(rep)),
                "Fix those values in the source file and import it again.");
  for (const auto& i : rep.issues) err << visible_text(i.text()) << "\n";
  if (opt.output.empty()) {
    write_stdout(out, text);
  } else {
    write_file(opt.output, text, opt.force);
    err << fmt::format(
        "Wrote {} from {} ({} settings, {} not imported). Check it with: mtrain config "
        "show --config {} --sources\n",
        opt.output, describe(r.format), r.values.size(), r.warnings.size(), opt.output);
  }
  return kExitOk;
}

namespace {

// accelerate's config.yaml: a flat mapping with nested deepspeed_config / fsdp_config.
void emit_yaml(YAML::Emitter& y, const json& v) {
  if (v.is_object()) {
    y << YAML::BeginMap;
    for (auto it = v.begin(); it != v.end(); ++it) {
      y << YAML::Key << it.key() << YAML::Value;
      emit_yaml(y, *it);
    }
    y << YAML::EndMap;
  } else if (v.is_boolean()) {
    y << v.get<bool>();
  } else if (v.is_string()) {
    y << v.get<std::string>();
  } else if (v.is_number_integer()) {
    y << v.get<long long>();
  } else {
    y << v.dump();  // a double as JSON writes it: shortest exact form, always with a '.' or exponent
  }
}

}  // namespace

int config_export(const Registry& reg, const ExportOptions& opt, std::ostream& out, std::ostream& err) {
  JobInputs in;
  in.job_file = opt.file;
  in.env = opt.env;
  Resolved r = resolve_job(reg, in);
  for (const auto& w : r.warnings) err << "warning: " << w << "\n";
  ExportResult e = opt.to == ImportFormat::DeepSpeed ? export_deepspeed(r.job) : export_accelerate(r.job);
  std::string text;
  if (opt.to == ImportFormat::DeepSpeed) {
    text = e.doc.dump(2) + "\n";
  } else {
    YAML::Emitter y;
    emit_yaml(y, e.doc);
    text = std::string(y.c_str()) + "\n";
  }
  std::vector<std::string> left;
  for (const auto& s : reg.all()) {
    auto it = r.provenance.find(s.key);
    if (e.mapped.count(s.key) || s.scope == Scope::Slurm || s.per_invocation || it == r.provenance.end() ||
        it->second.first == Source::Default)
      continue;
    left.push_back(s.key);
  }
  if (!left.empty())
    err << fmt::format("warning: a {} config has no place for: {}\n",
                       opt.to == ImportFormat::DeepSpeed ? "DeepSpeed" : "accelerate", str::join(left, ", "));
  if (opt.output.empty()) write_stdout(out, text);
  else write_file(opt.output, text, opt.force);
  return kExitOk;
}

int config_init(const Registry& reg, const InitOptions& opt, std::istream& in, std::ostream& out) {
  init_job_file(reg, opt, in, out);
  return kExitOk;
}

int config_docs(const Registry& reg, const DocsOptions& opt, std::ostream& out) {
  const std::string md = settings_markdown(reg);
  if (opt.output.empty()) write_stdout(out, md);
  else write_file(opt.output, md, true);
  return kExitOk;
}

}  // namespace mtrain::config
