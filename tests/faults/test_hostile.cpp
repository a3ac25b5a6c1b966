// Hostile input across the boundaries where text becomes a command or a peer's bytes reach
// the launcher:
//  * values with shell metacharacters (from hostfiles, nodelists, configs, the command line)
//    in the ssh remote command line and in generated sbatch scripts arrive byte-exact and never
//    run anything: every value carries a "touch CANARY" attempt and no canary may appear;
//  * a rendezvous peer on a raw socket sending garbage, oversized or deeply nested frames,
//    every fuzz-corpus input, and more connections than allowed cannot crash the store or
//    keep a real node from joining.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/remote/ssh_command.hpp"
#include "lib/rendezvous/client.hpp"
#include "lib/rendezvous/server.hpp"
#include "lib/slurm/command.hpp"
#include "lib/slurm/script.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

// Each tries to create a file named CANARY* in the current directory if any shell evaluates it.
const std::vector<std::string> kHostile = {
    "$(touch CANARY1)", "`touch CANARY2`", "; touch CANARY3", "| touch CANARY4", "&& touch CANARY5",
    "'; touch CANARY6; '", "\"; touch CANARY7; \"", "\\'$(touch CANARY8)", "x\ntouch CANARY9",
    "$((1+1)) ${HOME} ~ * ? [a] {a,b} !! %s %n", "-oProxyCommand=touch CANARY10", "--", "", " lead",
    "trail ", "tab\there", "utf8 \xc3\xa9\xe2\x82\xac", "ctrl \x01\x1b[31m", "#comment", "a=b c=d",
    "$(touch CANARY11)'\"`", std::string(4000, 'x') + "$(touch CANARY12)"};

using mtrain::testing::TempDir;

// Files named CANARY… under `dir`: each one a command that some layer ran when it should not have.
std::vector<std::string> canaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().rfind("CANARY", 0) == 0) out.push_back(e.path().string());
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_nul(const std::string& raw) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < raw.size()) {
    size_t z = raw.find('\0', i);
    if (z == std::string::npos) z = raw.size();
    out.push_back(raw.substr(i, z - i));
    i = z + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("hostile: ssh remote command line runs nothing but the agent, values byte-exact", "[hostile][remote]") {
  using namespace mtrain::remote;
  TempDir tmp;
  fs::path workdir = tmp.path / "dir $(touch CANARY0) it's";
  fs::create_directories(workdir);
  RemoteCommand cmd;
  cmd.job_id = "mtrain-hostile";
  cmd.workdir = workdir.string();
  cmd.secret_env = {"MTRAIN_RDZV_TOKEN"};
  for (size_t i = 0; i < kHostile.size(); ++i) cmd.env["HOSTILE_" + std::to_string(i)] = kHostile[i];
  // The "agent": prints its argv and the hostile variables NUL-separated into a file.
  fs::path out = tmp.path / "out";
  cmd.argv = {"/bin/sh", "-c",
              "printf '%s\\0' \"$@\" > \"$OUT\"; i=0; while [ $i -lt " + std::to_string(kHostile.size()) +
                  " ]; do eval \"printf '%s\\0' \\\"\\$HOSTILE_$i\\\"\" >> \"$OUT.env\"; i=$((i+1)); done",
              "agent"};
  for (const auto& h : kHostile) cmd.argv.push_back(h);
  cmd.env["OUT"] = out.string();
  const std::string line = remote_command_line(cmd);
  const std::string secret = "tok-$(touch CANARY_SECRET)-0123456789";
  const std::string input = stdin_preamble(cmd, {{"MTRAIN_RDZV_TOKEN", secret}});
  CHECK(line.find(secret) == std::string::npos);
  // The remote login shell: sh -c LINE with the preamble on stdin, in the temp dir.
  fs::path in_file = tmp.path / "stdin";
  std::ofstream(in_file) << input;
  mtrain::slurm::SystemRunner run;
  auto r = run.run({"sh", "-c", "cd \"$1\" && exec sh -c \"$2\" < \"$3\"", "sh", tmp.path.string(), line,
                    in_file.string()},
                   30);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(split_nul(slurp(out)) == kHostile);
  std::vector<std::string> env_values = split_nul(slurp(out.string() + ".env"));
  CHECK(env_values == kHostile);
  CHECK(canaries(tmp.path).empty());

  // The host itself is one argv element after "--", and never an option.
  SshOptions s;
  for (const std::string host : {"worker;touch CANARY_H", "$(touch CANARY_H2)", "a b"}) {
    s.host = host;
    auto argv = ssh_argv(s, line);
    REQUIRE(argv.size() >= 3);
    CHECK(argv[argv.size() - 3] == "--");
    CHECK(argv[argv.size() - 2] == host);
    CHECK(argv.back() == line);
  }
  s.host = "-oProxyCommand=touch CANARY_H3";
  CHECK_THROWS_AS(ssh_argv(s, line), mtrain::Error);
}

TEST_CASE("hostile: sbatch script fields with metacharacters run nothing", "[hostile][slurm]") {
  using namespace mtrain::slurm;
  TempDir tmp;
  fs::path bin = tmp.path / "bin $(touch CANARY_BIN) it's";
  fs::create_directories(bin);
  std::ofstream(bin / "srun") << "#!/bin/bash\nwhile [ $# -gt 0 ]; do case \"$1\" in --*) shift;; *) break;; esac; done\nexec \"$@\"\n";
  std::ofstream(bin / "mtrain") << "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$OUTFILE\"\n";
  fs::permissions(bin / "srun", fs::perms::owner_all);
  fs::permissions(bin / "mtrain", fs::perms::owner_all);
  fs::path chdir = tmp.path / "run $(touch CANARY_CD) ;x";
  fs::create_directories(chdir);
  for (auto pattern : {Pattern::TaskPerGpu, Pattern::AgentPerNode}) {
    JobOptions j;
    j.pattern = pattern;
    j.mtrain = (bin / "mtrain").string();
    j.chdir = chdir.string();
    j.job_name = "$(touch CANARY_NAME)";
    j.partition = "gpu\"; touch CANARY_P #";
    j.account = "`touch CANARY_A`";
    j.qos = "q' ; touch CANARY_Q";
    j.constraint = "a100&ib|$(touch CANARY_C)";
    j.output = (tmp.path / "log $(touch CANARY_O) %j.out").string();
    j.program = {"prog"};
    for (const auto& h : kHostile)
      if (h.find('\n') == std::string::npos) j.program.push_back(h);  // argv lines in bash: no raw newline
    if (pattern == Pattern::AgentPerNode) j.config = (tmp.path / "job $(touch CANARY_CFG).yaml").string();
    finalize(j, tmp.path.string());
    const std::string script = render_script(j, {"TEST", "test_hostile"});
    fs::path file = tmp.path / "job.sbatch";
    std::ofstream(file) << script;
    fs::path out = tmp.path / "args";
    fs::remove(out);
    SystemRunner run;
    auto r = run.run({"env", "-i", "PATH=" + bin.string() + ":/usr/bin:/bin", "SLURM_JOB_ID=1", "SLURM_JOB_NODELIST=n1",
                      "SLURM_JOB_NUM_NODES=1", "OUTFILE=" + out.string(), "bash", "-c", "cd \"$1\" && exec bash job.sbatch",
                      "sh", tmp.path.string()},
                     30);
    INFO(script << "\n---\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto got = split_nul(slurp(out));
    // The program and its arguments come last, intact.
    REQUIRE(got.size() >= j.program.size());
    CHECK(std::vector<std::string>(got.end() - static_cast<long>(j.program.size()), got.end()) == j.program);
    CHECK(canaries(tmp.path).empty());
  }
}

namespace {
using namespace mtrain::rendezvous;
constexpr const char* kToken = "hostile-token-0123456789abcdef";

ServerOptions hostile_server() {
  ServerOptions o;
  o.listen = {"127.0.0.1", 0};
  o.store.token = kToken;
  o.store.join_timeout = milliseconds(60000);
  o.store.run_id = "hostile";
  o.frame_timeout = milliseconds(300);
  o.auth_timeout = milliseconds(300);
  o.max_connections = 16;
  o.tick_interval = milliseconds(20);
  return o;
}

int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Send bytes, then read until the server closes (true) or the bound passes (false).
bool send_and_wait_close(int fd, const std::string& bytes, milliseconds bound = milliseconds(5000)) {
  (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
}

bool real_node_joins(const Server& server) {
  ClientOptions o;
  o.server = {"127.0.0.1", server.port()};
  o.token = kToken;
  o.host = "real-node";
  o.slots = 2;
  o.join_timeout = milliseconds(15000);
  o.op_timeout = milliseconds(3000);
  o.poll_interval = milliseconds(20);
  return Client(o).join().assignment.world_size == 2;
}

std::string frame_of(const std::string& payload) {
  std::string f = "MTR1";
  uint32_t n = static_cast<uint32_t>(payload.size());
  for (int s = 24; s >= 0; s -= 8) f.push_back(static_cast<char>((n >> s) & 0xff));
  return f + payload;
}
}  // namespace

TEST_CASE("hostile: raw-socket garbage, huge and nested frames, every fuzz input, a flood", "[hostile][rendezvous]") {
  Server server(hostile_server());
  server.start();
  const std::string auth = std::string(R"({"op":"heartbeat","token":")") + kToken + R"(","node":"x"})";
  std::vector<std::string> attacks = {
      frame_of(std::string(200, '[') + std::string(200, ']')),                 // nested past the limit
      frame_of("{\"token\":\"" + std::string(kDefaultMaxFrameBytes - 20, 'A') + "\"}"),  // at the limit, bad token
      frame_of("[1,2,3]"), frame_of("\"str\""), frame_of("{\"op\":\"join\"}"), frame_of(std::string("\xff\xfe\x00{", 4)),
      frame_of(auth) + "MTR1\xff\xff\xff\xff",                                   // authenticated, then oversized
      frame_of(auth) + "garbage after a good frame",
      frame_of(std::string(R"({"op":"join","token":")") + kToken + R"J(","node":"n","host":"$(touch X)","slots":-5})J"),
      frame_of(std::string(R"({"op":"join","token":")") + kToken + R"(","node":")" + std::string(5000, 'n') + R"(","host":"h","slots":1e300})"),
  };
  // Every committed fuzz input for the protocol, as raw bytes on a connection of its own.
  fs::path corpus = fs::path(MTRAIN_SOURCE_DIR) / "tests/fuzz/corpus/rdzv_protocol";
  for (const auto& e : fs::directory_iterator(corpus)) attacks.push_back(slurp(e.path()));
  fs::path regressions = fs::path(MTRAIN_SOURCE_DIR) / "tests/fuzz/regressions/rdzv_protocol";
  if (fs::exists(regressions))
    for (const auto& e : fs::directory_iterator(regressions)) attacks.push_back(slurp(e.path()));
  for (const auto& bytes : attacks) {
    int fd = raw_connect(server.port());
    REQUIRE(fd >= 0);
    // Closed at once for bad input, or after frame_timeout for an unfinished one; an
    // authenticated peer that stays quiet stays connected until idle_timeout: close it ourselves.
    send_and_wait_close(fd, bytes, milliseconds(2000));
    ::close(fd);
  }
  CHECK(server.counters().bad_frames >= 3);
  CHECK(server.status().phase == Phase::joining);

  // A flood: 3 × max_connections sockets that say nothing; each over the limit evicts the oldest
  // unauthenticated one, the rest are closed at auth_timeout; after that, a real node still joins.
  std::vector<int> flood;
  for (int i = 0; i < 48; ++i) {
    int fd = raw_connect(server.port());
    if (fd >= 0) flood.push_back(fd);
  }
  for (int fd : flood) {
    CHECK(send_and_wait_close(fd, "", milliseconds(5000)));
    ::close(fd);
  }
  CHECK(server.counters().evicted >= 48 - 16);
  CHECK(real_node_joins(server));
}
