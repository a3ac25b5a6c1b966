#include <catch2/catch.hpp>

#include <fstream>

#include "lib/core/error.hpp"
#include "lib/launch/etcd_client.hpp"
#include "temp_dir.hpp"

using namespace mtrain::launch;

namespace {

MultiNodeOptions members(const std::string& list) {
  MultiNodeOptions m;
  m.rdzv_endpoint = list;
  return m;
}

std::string refusal(const MultiNodeOptions& m, const EnvMap& env = {}) {
  try {
    etcd_client_options(m, env);
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    return e.paragraph();
  }
  return "";
}

}  // namespace

TEST_CASE("etcd TLS: https members or certificate files, http:// members with certificates are refused",
          "[etcd_client]") {
  CHECK_FALSE(etcd_client_options(members("e1:2379,e2"), {}).tls);
  CHECK(etcd_client_options(members("https://e1:2379,https://e2"), {}).tls);
  auto m = members("e1:2379");
  m.rdzv_etcd_cacert = "/etc/etcd/ca.crt";
  const auto o = etcd_client_options(m, {});
  CHECK(o.tls);  // as etcdctl: certificate files mean TLS
  CHECK(o.tls_files.ca_file == "/etc/etcd/ca.crt");
  m.rdzv_endpoint = "http://e1:2379";
  CHECK(refusal(m).find("names http:// members") != std::string::npos);
  CHECK(refusal(members("https://e1,e2")).find("some members are https:// and some not") != std::string::npos);
}

TEST_CASE("etcd user and password: from the environment or a file, never both, never one without the other",
          "[etcd_client]") {
  mtrain::testing::TempDir dir;
  const std::string file = (dir.path / "pw").string();
  std::ofstream(file) << "s3cret\nignored second line\n";
  auto m = members("e1");
  m.rdzv_etcd_user = "mt";
  auto from_env = etcd_client_options(m, {{kEtcdPasswordEnv, "env-pw"}});
  CHECK(from_env.username == "mt");
  CHECK(from_env.password == "env-pw");
  CHECK(from_env.password_source == "MTRAIN_ETCD_PASSWORD");
  m.rdzv_etcd_password_file = file;
  auto from_file = etcd_client_options(m, {});
  CHECK(from_file.password == "s3cret");
  CHECK(from_file.password_source.find(file) != std::string::npos);
  CHECK(refusal(m, {{kEtcdPasswordEnv, "env-pw"}}).find("given twice") != std::string::npos);
  m.rdzv_etcd_password_file.clear();
  CHECK(refusal(m).find("--rdzv-etcd-user 'mt' is given without a password") != std::string::npos);
  m.rdzv_etcd_user.clear();
  CHECK(refusal(m, {{kEtcdPasswordEnv, "env-pw"}}).find("but no user") != std::string::npos);
  m.rdzv_etcd_user = "mt";
  m.rdzv_etcd_password_file = (dir.path / "missing").string();
  CHECK(refusal(m).find("no such file") != std::string::npos);
  // A big file (a wrong path) is not read.
  const std::string big = (dir.path / "big").string();
  std::ofstream(big) << std::string(100000, 'x');
  m.rdzv_etcd_password_file = big;
  CHECK(refusal(m).find("not a password file") != std::string::npos);
  CHECK(etcd_client_options(members("e1"), {}).username.empty());  // no auth at all
}
