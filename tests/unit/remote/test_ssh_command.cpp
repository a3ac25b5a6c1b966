#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/remote/ssh_command.hpp"

using namespace mtrain::remote;
using Catch::Contains;

namespace {
// Run `line` the way a remote POSIX login shell would (sh -c), feeding `input` on stdin.
std::string run_remote_line(const std::string& line, const std::string& input, int& status) {
  char path[] = "/tmp/mtrain-ssh-stdin-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  close(fd);
  std::string shell = "env -i PATH=/usr/bin:/bin sh -c " + mtrain::str::shell_quote(line) + " < " + path;
  FILE* p = popen(shell.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  status = pclose(p);
  unlink(path);
  return out;
}
}  // namespace

TEST_CASE("forwarded env: the launcher's NCCL/GLOO/CUDA/PYTHON/OMP/MTRAIN variables and --export", "[remote]") {
  Env here{{"NCCL_DEBUG", "INFO"},       {"GLOO_SOCKET_IFNAME", "eth0"}, {"CUDA_LAUNCH_BLOCKING", "1"},
           {"CUDA_VISIBLE_DEVICES", "3"}, {"PYTHONPATH", "/src"},          {"OMP_NUM_THREADS", "4"},
           {"MTRAIN_LOG", "debug"},       {"MTRAIN_RDZV_TOKEN", "secret"}, {"HOME", "/home/me"},
           {"LD_LIBRARY_PATH", "/opt/lib"}, {"TERM", "xterm"}};
  Env fwd = forwarded_env(here, {"LD_LIBRARY_PATH", "WANDB_MODE=offline"});
  CHECK(fwd == Env{{"NCCL_DEBUG", "INFO"},
                   {"GLOO_SOCKET_IFNAME", "eth0"},
                   {"CUDA_LAUNCH_BLOCKING", "1"},
                   {"PYTHONPATH", "/src"},
                   {"OMP_NUM_THREADS", "4"},
                   {"MTRAIN_LOG", "debug"},
                   {"LD_LIBRARY_PATH", "/opt/lib"},
                   {"WANDB_MODE", "offline"}});
  CHECK(forwarded_env(here, {"CUDA_VISIBLE_DEVICES"}).at("CUDA_VISIBLE_DEVICES") == "3");  // only when asked
  CHECK_THROWS_WITH(forwarded_env(here, {"NOT_SET_ANYWHERE"}), Contains("not set here"));
  CHECK_THROWS_WITH(forwarded_env(here, {"BAD-NAME=1"}), Contains("not a valid environment variable name"));
  CHECK_THROWS_WITH(forwarded_env(here, {"MTRAIN_RDZV_TOKEN"}), Contains("passed to agents separately"));
}

TEST_CASE("remote command line: a POSIX shell reproduces argv, env, cwd and the secret exactly", "[remote]") {
  RemoteCommand cmd;
  cmd.job_id = "mtrain-1234abcd";
  cmd.workdir = "/tmp";
  cmd.env = {{"NCCL_DEBUG", "INFO"}, {"WEIRD", "it's a \"test\" $HOME `id` \\ *"}};
  cmd.secret_env = {"MTRAIN_RDZV_TOKEN"};
  cmd.argv = {"/bin/sh", "-c",
              "echo self=$$; pwd; printf '[%s]\\n' \"$@\"; echo \"nccl=$NCCL_DEBUG\"; echo \"weird=$WEIRD\"; "
              "echo \"token=$MTRAIN_RDZV_TOKEN\"",
              "agent", "a b", "it's", "$HOME", "*", "--x=\"q\";ls", ""};
  std::string line = remote_command_line(cmd);
  CHECK(line.find("s3cr3t-token") == std::string::npos);  // never in a command line
  std::string input = stdin_preamble(cmd, {{"MTRAIN_RDZV_TOKEN", "s3cr3t-token"}});
  CHECK(input == "s3cr3t-token\n");
  int status = -1;
  std::string out = run_remote_line(line, input, status);
  CHECK(status == 0);
  auto lines = mtrain::str::split(out, '\n');
  REQUIRE(lines.size() >= 12);
  auto pgid = parse_announcement(lines[0], cmd.job_id);
  REQUIRE(pgid);
  CHECK(lines[1] == "self=" + std::to_string(*pgid));  // exec kept the announced pid
  CHECK(lines[2] == "/tmp");
  CHECK(lines[3] == "[a b]");
  CHECK(lines[4] == "[it's]");
  CHECK(lines[5] == "[$HOME]");
  CHECK(lines[6] == "[*]");
  CHECK(lines[7] == "[--x=\"q\";ls]");
  CHECK(lines[8] == "[]");
  CHECK(lines[9] == "nccl=INFO");
  CHECK(lines[10] == "weird=it's a \"test\" $HOME `id` \\ *");
  CHECK(lines[11] == "token=s3cr3t-token");
}

TEST_CASE("remote command line: no secret on stdin or a missing workdir stops before the agent", "[remote]") {
  RemoteCommand cmd;
  cmd.job_id = "j";
  cmd.secret_env = {"MTRAIN_RDZV_TOKEN"};
  cmd.argv = {"echo", "agent-ran"};
  int status = -1;
  std::string out = run_remote_line(remote_command_line(cmd), "", status);
  CHECK(WEXITSTATUS(status) == 97);
  CHECK(out.find("agent-ran") == std::string::npos);
  cmd.secret_env.clear();
  cmd.workdir = "/nonexistent/mtrain/dir";
  out = run_remote_line(remote_command_line(cmd), "", status);
  CHECK(WEXITSTATUS(status) == 98);
  CHECK(out.find("agent-ran") == std::string::npos);
  cmd.env = {{"BAD NAME", "x"}};
  CHECK_THROWS_AS(remote_command_line(cmd), mtrain::Error);
  CHECK_THROWS_WITH(stdin_preamble(RemoteCommand{"j", "", {}, {"T"}, {"x"}}, {{"T", "a\nb"}}),
                    Contains("line break"));
}

TEST_CASE("ssh argv: safe defaults, user, port, identity, options, then -- host command", "[remote]") {
  SshOptions s;
  s.host = "worker-1";
  s.user = "alice";
  s.port = 2222;
  s.identity_file = "/home/alice/.ssh/id_ed25519";
  s.options = {"StrictHostKeyChecking=accept-new"};
  auto a = ssh_argv(s, "echo hi");
  std::vector<std::string> want{"ssh", "-T", "-x", "-a", "-o", "BatchMode=yes",
                                "-o", "StrictHostKeyChecking=accept-new",  // before the defaults: ssh keeps the first
                                "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                                "-p", "2222", "-i", "/home/alice/.ssh/id_ed25519",
                                "--", "alice@worker-1", "echo hi"};
  CHECK(a == want);
  s = SshOptions{};
  s.host = "10.0.0.2";
  a = ssh_argv(s, "true");
  CHECK(a[a.size() - 2] == "10.0.0.2");
  s.host = "-oProxyCommand=evil";
  CHECK_THROWS_WITH(ssh_argv(s, "true"), Contains("starts with '-'"));
}

TEST_CASE("stop command and announcements", "[remote]") {
  CHECK(stop_command_line(4242) == "kill -s TERM -- -4242");
  CHECK(stop_command_line(4242, "KILL") == "kill -s KILL -- -4242");
  CHECK_THROWS_AS(stop_command_line(1), mtrain::Error);
  CHECK_THROWS_AS(stop_command_line(7, "TERM; rm"), mtrain::Error);
  CHECK(parse_announcement("MTRAIN_AGENT job=j1 pgid=777\r", "j1") == 777);
  CHECK_FALSE(parse_announcement("MTRAIN_AGENT job=j2 pgid=777", "j1"));
  CHECK_FALSE(parse_announcement("MTRAIN_AGENT job=j1 pgid=1", "j1"));
  CHECK_FALSE(parse_announcement("MTRAIN_AGENT job=j1 pgid=77x", "j1"));
  CHECK_FALSE(parse_announcement("[rank 0] MTRAIN_AGENT job=j1 pgid=5", "j1"));
}

TEST_CASE("stop by recorded group: the record is read, checked and its group signalled, through sh", "[remote]") {
  char tmpl[] = "/tmp/mtrain-remote-test.XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  std::string base = tmpl;
  std::string dir = base + "/mtrain-job 1;x";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  // A process group of its own to be stopped.
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    setpgid(0, 0);
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(child, child);  // both sides, so the group exists before it is signalled
  { std::ofstream(dir + "/worker-1.pgid") << child << "\n"; }
  std::string cmd = mtrain::remote::stop_recorded_command_line("job 1;x", "worker-1");
  std::string sh = "XDG_RUNTIME_DIR='" + base + "' sh -c " + mtrain::str::shell_quote(cmd);
  int rc = std::system(sh.c_str());
  CHECK(WEXITSTATUS(rc) == 0);
  int status = 0;
  for (int i = 0; i < 100 && waitpid(child, &status, WNOHANG) == 0; ++i) usleep(20000);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  if (!WIFSIGNALED(status)) { kill(child, SIGKILL); waitpid(child, &status, 0); }
  // A record that is not a number above 1 is refused (never `kill -- -0` or `-1`).
  { std::ofstream(dir + "/worker-1.pgid") << "1\n"; }
  CHECK(WEXITSTATUS(std::system(sh.c_str())) == 1);
  { std::ofstream(dir + "/worker-1.pgid") << "$(touch " << base << "/pwned)\n"; }
  CHECK(WEXITSTATUS(std::system(sh.c_str())) == 1);
  CHECK(::access((base + "/pwned").c_str(), F_OK) != 0);
  CHECK(mtrain::remote::agent_record_dir("j", {}) == "/tmp/mtrain-j");
  CHECK(mtrain::remote::agent_record_dir("j", {{"XDG_RUNTIME_DIR", "/run/user/7"}}) == "/run/user/7/mtrain-j");
  std::filesystem::remove_all(base);
}
