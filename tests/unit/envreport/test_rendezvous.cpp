// The rendezvous section of `mtrain env` (lib/envreport/rendezvous.cpp): asked only when a
// backend is configured; an etcd member that refuses is named with why, and warned about. The
// answering case (a real etcd's version) is in tests/e2e/elastic/test_etcd_cluster.sh.
#include <catch2/catch.hpp>

#include <boost/asio.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;

namespace {

// A loopback port that was just free: a connection to it is refused at once.
std::string refusing_endpoint() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return "127.0.0.1:" + std::to_string(a.local_endpoint().port());
}

}  // namespace

TEST_CASE("env: no rendezvous asked, no section, mtrain's store is named, not probed", "[envreport][rendezvous]") {
  auto p = healthy();
  CHECK_FALSE(collect_report(p, opts()).contains("rendezvous"));
  auto o = opts();
  o.rdzv_backend = "mtrain";
  o.rdzv_endpoint = "node-0:29400";
  const auto r = collect_report(p, o).at("rendezvous");
  CHECK(r.at("backend") == "mtrain");
  CHECK_FALSE(r.contains("members"));
}

TEST_CASE("env: an etcd member that refuses is named, with a warning saying no node can join",
          "[envreport][rendezvous]") {
  auto p = healthy();
  auto o = opts();
  o.rdzv_backend = "etcd";
  o.rdzv_endpoint = refusing_endpoint();
  const auto r = collect_report(p, o);
  const auto& z = r.at("rendezvous");
  CHECK(z.at("answered") == 0);
  REQUIRE(z.at("members").size() == 1);
  CHECK(z.at("members")[0].at("endpoint") == o.rdzv_endpoint);
  CHECK_THAT(z.at("members")[0].at("error").get<std::string>(), Catch::StartsWith("connect:"));
  CHECK(has_warning(r, "1 of 1 etcd members did not answer: " + o.rdzv_endpoint));
  CHECK_THAT(render_text(r), Catch::Contains(o.rdzv_endpoint + ": no answer: connect:"));
}

TEST_CASE("env: etcd without members, or a bad list, is a warning, not a failed report", "[envreport][rendezvous]") {
  auto p = healthy();
  auto o = opts();
  o.rdzv_backend = "etcd";
  CHECK(has_warning(collect_report(p, o), "no --rdzv-endpoint"));
  o.rdzv_endpoint = "a:2379,,b";
  CHECK(has_warning(collect_report(p, o), "the etcd rendezvous:"));
}
