// How the resolved job reaches the ranks (lib/launch/job_handoff.cpp): which job, what is filled
// in, the warning for settings nothing hands over, and where the trainer's files are checked.
#include <catch2/catch.hpp>

#include "lib/launch/job_handoff.hpp"

using namespace mtrain;
using namespace mtrain::launch;

namespace {

config::Resolved resolved(std::map<std::string, config::json> cli = {}, config::Source source = config::Source::Cli) {
  config::Layer l;
  l.source = source;
  l.origin = "command line";
  l.values = std::move(cli);
  return config::resolve(config::job_registry(), {l});
}

LaunchOptions with_program() {
  LaunchOptions o;
  o.plan.program = {"python3", "train.py"};
  return o;
}

}  // namespace

TEST_CASE("job_source: the shipped job, this launcher's, or none", "[launch][handoff]") {
  const auto none = resolved();
  LaunchOptions agent = with_program();
  agent.multi.ssh_agent = true;
  CHECK(job_source(agent, {{"MTRAIN_JOB_SPEC", "{}"}}, false, none) == JobSource::shipped);
  CHECK(job_source(agent, {}, false, none) == JobSource::none);  // an agent with nothing shipped

  CHECK(job_source(LaunchOptions{}, {}, false, none) == JobSource::resolved);  // the bundled trainer
  CHECK(job_source(with_program(), {}, false, none) == JobSource::none);
  CHECK(job_source(with_program(), {}, true, none) == JobSource::resolved);  // --config
  LaunchOptions ds = with_program();
  ds.pass_config = config::PassConfig::Deepspeed;
  CHECK(job_source(ds, {}, false, none) == JobSource::resolved);
  // A trainer flag makes a job for the program; the same setting from MTRAIN_* alone does not.
  CHECK(job_flags_given(resolved({{"optim.lr", 0.1}})));
  CHECK(job_source(with_program(), {}, false, resolved({{"optim.lr", 0.1}})) == JobSource::resolved);
  CHECK_FALSE(job_flags_given(resolved({{"optim.lr", 0.1}}, config::Source::Env)));
  CHECK(job_source(with_program(), {}, false, resolved({{"optim.lr", 0.1}}, config::Source::Env)) == JobSource::none);
}

TEST_CASE("hand_job_over: the spec for the ranks, the job for pass-config, the unread settings named",
          "[launch][handoff]") {
  const auto r = resolved({{"optim.lr", 0.25}});
  SECTION("the user's program, no pass-config: the setting only MTRAIN_JOB_FILE carries is named") {
    LaunchOptions o = with_program();
    const auto warnings = hand_job_over(o, JobSource::resolved, r, {}, "/nowhere/mtrain");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("optim.lr") != std::string::npos);
    CHECK(config::json::parse(o.job_spec_json).at("optim").at("lr") == 0.25);
    CHECK(config::get(o.job, "optim.lr") == 0.25);
    CHECK(o.worker_path.empty());
  }
  SECTION("an ssh agent's program reads the job its launcher shipped, checked against the registry") {
    LaunchOptions o = with_program();
    o.multi.ssh_agent = true;
    const std::string spec = config::job_spec(config::job_registry(), r.job).dump();
    CHECK(hand_job_over(o, JobSource::shipped, resolved(), {{"MTRAIN_JOB_SPEC", spec}}, "/nowhere/mtrain").empty());
    CHECK(config::get(o.job, "optim.lr") == 0.25);
    CHECK(config::json::parse(o.job_spec_json) == config::json::parse(spec));
  }
  SECTION("the bundled trainer: the spec, and no warning (it reads every setting)") {
    LaunchOptions o;
    CHECK(hand_job_over(o, JobSource::resolved, r, {}, "/nowhere/mtrain").empty());
    CHECK(!o.job_spec_json.empty());
    CHECK(o.job.is_null());
  }
  SECTION("no job: nothing is filled in") {
    LaunchOptions o = with_program();
    CHECK(hand_job_over(o, JobSource::none, r, {}, "/nowhere/mtrain").empty());
    CHECK(o.job_spec_json.empty());
  }
}

TEST_CASE("checks_trainer_files_here: on the host whose ranks read them", "[launch][handoff]") {
  LaunchOptions o;
  o.job_spec_json = "{}";
  CHECK(checks_trainer_files_here(o));
  LaunchOptions dry = o;
  dry.dry_run = true;
  CHECK_FALSE(checks_trainer_files_here(dry));
  LaunchOptions ssh = o;
  ssh.multi.hostfile = "hosts";
  CHECK_FALSE(checks_trainer_files_here(ssh));  // the launcher of other hosts: their agents check
  ssh.multi.ssh_agent = true;
  CHECK(checks_trainer_files_here(ssh));
  CHECK_FALSE(checks_trainer_files_here(with_program()));
}
