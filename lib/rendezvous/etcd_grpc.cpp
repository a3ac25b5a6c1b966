#include "lib/rendezvous/etcd_grpc.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>

#include <absl/synchronization/mutex.h>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <openssl/x509.h>

#include "etcd_api.grpc.pb.h"
#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_grpc_calls.hpp"
#include "lib/rendezvous/etcd_http.hpp"
#include "lib/rendezvous/etcd_tls.hpp"

namespace mtrain::rendezvous {

namespace pb = etcdserverpb;
using grpc_calls::KeepAliveOnce;
using grpc_calls::unary;
using grpc_calls::WatchReactor;

namespace {

// The member did not answer usefully (refused, reset, timed out, no leader): try the next one.
struct GrpcUnreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// etcd said the auth token is no longer valid (simple tokens expire unused; a member restarted).
struct GrpcAuthExpired {};

// A member that restarts is connected again within this (gRPC's default backs off to 2 minutes).
constexpr int kReconnectBackoffMaxMs = 1000;
constexpr off_t kPemMaxBytes = 1 << 20;
// The system's CA certificates read for gRPC (a distribution's whole bundle is ~0.2 MB, its hashed
// directory as much again).
constexpr size_t kCaBundleMaxBytes = size_t{8} << 20;

KeyValue kv_of(const pb::KeyValue& k) {
  return KeyValue{k.key(), k.value(), k.create_revision(), k.mod_revision(), k.lease()};
}

RangeResult range_of(const pb::RangeResponse& r, int64_t revision) {
  RangeResult out;
  out.revision = revision;
  out.count = r.count();
  out.kvs.reserve(static_cast<size_t>(r.kvs_size()));
  for (const auto& k : r.kvs()) out.kvs.push_back(kv_of(k));
  return out;
}

void fill_range(pb::RangeRequest& r, const RangeOp& op) {
  r.set_key(op.key);
  if (op.prefix) r.set_range_end(etcd_prefix_end(op.key));
  r.set_count_only(op.count_only);
  // A read-only transaction all of whose reads are serializable is answered by the member alone.
  r.set_serializable(op.serializable);
}

void fill_put(pb::PutRequest& p, const std::string& key, const std::string& value, int64_t lease) {
  p.set_key(key);
  p.set_value(value);
  p.set_lease(lease);
}

// A PEM file the TLS context has already checked (etcd_tls.cpp: a bounded regular file).
std::string read_pem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_size > kPemMaxBytes)
    throw Error(fmt::format("cannot read '{}' for TLS to etcd", path), "check the file", kExitUsage);
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  if (!in && !in.eof())
    throw Error(fmt::format("cannot read '{}' for TLS to etcd", path), "check the file", kExitUsage);
  return text;
}

// The CA certificates a member's certificate is checked against without --rdzv-etcd-cacert:
// the system's, where OpenSSL finds them for the JSON gateway's client
// (SSL_CTX_set_default_verify_paths): its default file (SSL_CERT_FILE) and, in its default
// directories (SSL_CERT_DIR, ':'-separated), the certificates named by subject hash —
// "<8 hex>.<n>", as `openssl rehash` links them; OpenSSL reads no other name there. gRPC takes
// the roots as one PEM text, so both are read here. A file OpenSSL could not read either is
// skipped, as OpenSSL skips it; none at all is an error.
std::string system_ca_certificates() {
  const auto from_env = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v && *v ? v : fallback);
  };
  const std::string file = from_env(X509_get_default_cert_file_env(), X509_get_default_cert_file());
  const std::string dirs = from_env(X509_get_default_cert_dir_env(), X509_get_default_cert_dir());
  std::string pem;
  const auto add = [&pem](const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kPemMaxBytes) return;
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    if (in || in.eof()) pem += text + "\n";
  };
  const auto hashed_name = [](const std::string& name) {
    const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    return name.size() > 9 && name[8] == '.' && std::all_of(name.begin(), name.begin() + 8, hex) &&
           std::all_of(name.begin() + 9, name.end(), digit);
  };
  add(file);
  for (size_t from = 0;;) {
    const size_t colon = dirs.find(':', from);
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dirs.substr(from, colon - from), ec), end;
         !ec && it != end && pem.size() < kCaBundleMaxBytes; it.increment(ec))
      if (hashed_name(it->path().filename().string())) add(it->path().string());
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  if (pem.empty())
    throw Error(fmt::format("no CA certificates to check the etcd members' TLS certificates against: OpenSSL's "
                            "default file '{}' and directories '{}' hold none",
                            file, dirs),
                "give --rdzv-etcd-cacert with the CA that signed the members' certificates", kExitUsage);
  return pem;
}

// What a member's failure says, in a line. gRPC words a refused connection as "failed to connect
// to all addresses; last error: UNKNOWN: ipv4:…: Failed to connect to remote host: Connection
// refused": the socket's own reason (after the last colon) is what a reader needs.
std::string unreachable_reason(const grpc::Status& s) {
  const std::string& msg = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (msg.find("failed to connect") != std::string::npos) {
        const size_t colon = msg.rfind(": ");
        return "connect: " + (colon == std::string::npos ? msg : msg.substr(colon + 2));
      }
      return "unavailable: " + msg;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "overloaded: " + msg;
    default: return fmt::format("gRPC status {}: {}", static_cast<int>(s.error_code()), msg);
  }
}

}  // namespace

// One member: its channel (an HTTP/2 connection gRPC opens on first use and keeps) and stubs.
struct GrpcMember {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Watch::Stub> watch;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Auth::Stub> auth;
  std::unique_ptr<pb::Maintenance::Stub> maintenance;
  bool probed = false;  // its TLS configuration was checked by a handshake of our own
};

struct EtcdGrpc::Impl {
  explicit Impl(EtcdOptions o);

  GrpcMember& member(size_t i);
  // Runs `rpc(member, ctx)` on the members in turn (see the header): ctx carries the op deadline
  // and the auth token. `what` names the call in errors.
  template <class Rpc>
  void call(const char* what, const Rpc& rpc);
  // What a failed call means: GrpcUnreachable, GrpcAuthExpired or an mtrain::Error.
  [[noreturn]] void fail(size_t i, const char* what, const grpc::Status& s);
  void authenticate_locked(size_t i);
  void prepare(grpc::ClientContext& ctx) const;

  EtcdOptions opt;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::vector<GrpcMember> members;
  std::mutex mu;
  size_t preferred = 0;
  std::string token;
  bool auth_not_enabled = false;
};

EtcdGrpc::Impl::Impl(EtcdOptions o) : opt(std::move(o)), members(opt.endpoints.size()) {
  if (opt.endpoints.empty()) throw Error("etcd: no endpoint given", "--rdzv-endpoint host1:2379,host2:2379,host3:2379");
  // Host names resolve as every other connection of mtrain's does (getaddrinfo: /etc/hosts, NSS),
  // not by gRPC's own DNS client. Read once, when gRPC starts; a value the user set is kept.
  // Debian's abseil is built with its mutex deadlock detector on (a debug aid): gRPC's every lock
  // then walks a global lock graph, measurable when hundreds of clients share a process.
  static std::once_flag process_wide;
  std::call_once(process_wide, [] {
    ::setenv("GRPC_DNS_RESOLVER", "native", 0);
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  });
  preferred = std::random_device{}() % opt.endpoints.size();
  if (!opt.tls) {
    credentials = grpc::InsecureChannelCredentials();
    return;
  }
  EtcdTlsContext checked(opt.tls_files);  // a missing or unreadable file: exit 2 before anything is sent
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = opt.tls_files.ca_file.empty() ? system_ca_certificates() : read_pem(opt.tls_files.ca_file);
  if (!opt.tls_files.cert_file.empty()) {
    ssl.pem_cert_chain = read_pem(opt.tls_files.cert_file);
    ssl.pem_private_key = read_pem(opt.tls_files.key_file);
  }
  credentials = grpc::SslCredentials(ssl);
}

GrpcMember& EtcdGrpc::Impl::member(size_t i) {
  GrpcMember& m = members[i];
  if (m.channel) return m;
  grpc::ChannelArguments args;
  // Every client its own connection: nodes do not share one, and neither do a bench's agents.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC takes it as the connection attempt's own timeout,
  // and a job's nodes connecting at once take longer than a short one allows (the call's deadline
  // bounds the wait anyway).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kReconnectBackoffMaxMs);
  // gRPC's default (4 MB) would refuse a large job's member list.
  args.SetMaxReceiveMessageSize(static_cast<int>(kEtcdMaxReplyBytes));
  // Calls are retried across members by call() itself, with their errors named; gRPC's own
  // retries would buffer every request for a second try. No channelz bookkeeping per call, and no
  // bandwidth probes (PINGs after each reply) on a connection that carries a few small messages.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_ENABLE_CHANNELZ, 0);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  m.channel = grpc::CreateCustomChannel(opt.endpoints[i].str(), credentials, args);
  m.kv = pb::KV::NewStub(m.channel);
  m.watch = pb::Watch::NewStub(m.channel);
  m.lease = pb::Lease::NewStub(m.channel);
  m.auth = pb::Auth::NewStub(m.channel);
  m.maintenance = pb::Maintenance::NewStub(m.channel);
  return m;
}

void EtcdGrpc::Impl::prepare(grpc::ClientContext& ctx) const {
  ctx.set_deadline(std::chrono::system_clock::now() + opt.op_timeout);
  if (!token.empty()) ctx.AddMetadata("token", token);
}

void EtcdGrpc::Impl::fail(size_t i, const char* what, const grpc::Status& s) {
  const Endpoint& ep = opt.endpoints[i];
  const std::string& msg = s.error_message();
  const auto says = [&](const char* text) { return msg.find(text) != std::string::npos; };
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      // gRPC says "unavailable" for a failed TLS handshake too, and for plain text spoken to a
      // TLS member: one handshake of our own tells those configuration errors (exit 2) apart.
      if (!members[i].probed) {
        members[i].probed = true;
        EtcdOptions one = opt;
        one.endpoints = {ep};
        one.username.clear();
        try {
          EtcdHttp(one).version();
        } catch (const Error& e) {
          if (e.exit_code() == kExitUsage) throw;
        }
      }
      throw GrpcUnreachable(unreachable_reason(s));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      throw GrpcUnreachable(fmt::format("{} timed out after {}", what, format_duration(opt.op_timeout)));
    case grpc::StatusCode::RESOURCE_EXHAUSTED:  // etcd's "too many requests": another member may take it
      throw GrpcUnreachable(unreachable_reason(s));
    case grpc::StatusCode::UNAUTHENTICATED: throw GrpcAuthExpired{};
    case grpc::StatusCode::PERMISSION_DENIED:
      throw Error(fmt::format("etcd at {} denied {} to {}: {}", ep.str(), what,
                              opt.username.empty() ? std::string("this node (its certificate's name as the user)")
                                                   : fmt::format("user '{}'", opt.username),
                              msg),
                  "grant the user's role read and write on the job's prefix: etcdctl role grant-permission ROLE "
                  "--prefix=true readwrite /mtrain/",
                  kExitUsage);
    default: break;
  }
  // etcd's own error texts (its rpctypes): the status code alone is InvalidArgument for all.
  if (says("user name is empty"))
    throw Error(fmt::format("etcd at {} has authentication enabled and this node gave no user", ep.str()),
                "give --rdzv-etcd-user NAME and its password in the environment variable MTRAIN_ETCD_PASSWORD or a "
                "file named by --rdzv-etcd-password-file (or a client certificate whose Common Name is the user)",
                kExitUsage);
  throw Error(
      fmt::format("etcd at {} refused {}: {}", ep.str(), what, msg),
      "check the etcd user's permissions on the job's prefix (/mtrain/rdzv/) and the etcd version (3.4 or newer)",
      kExitFailure);
}

void EtcdGrpc::Impl::authenticate_locked(size_t i) {
  token.clear();
  pb::AuthenticateRequest req;
  req.set_name(opt.username);
  req.set_password(opt.password);
  pb::AuthenticateResponse resp;
  grpc::ClientContext ctx;
  prepare(ctx);
  const grpc::Status s = unary([&](auto cb) { member(i).auth->async()->Authenticate(&ctx, &req, &resp, cb); });
  if (s.ok()) {
    token = resp.token();
    if (token.empty())
      throw Error(fmt::format("etcd at {} did not authenticate user '{}'", opt.endpoints[i].str(), opt.username),
                  "check the etcd user and password given for the rendezvous", kExitFailure);
    return;
  }
  // A user given to a cluster without auth: calls go without a token, as etcdctl's do.
  if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
      s.error_message().find("authentication is not enabled") != std::string::npos) {
    auth_not_enabled = true;
    return;
  }
  if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
      s.error_message().find("authentication failed") != std::string::npos)
    throw Error(
        fmt::format("etcd at {} refused user '{}' with the password from {}: {}", opt.endpoints[i].str(), opt.username,
                    opt.password_source.empty() ? "nowhere (none given)" : opt.password_source, s.error_message()),
        fmt::format("check the user and its password (etcdctl user get {} / user passwd {})", opt.username,
                    opt.username),
        kExitUsage);
  fail(i, "authenticate", s);
}

template <class Rpc>
void EtcdGrpc::Impl::call(const char* what, const Rpc& rpc) {
  std::lock_guard lock(mu);
  std::vector<std::string> failures;
  for (size_t k = 0; k < opt.endpoints.size(); ++k) {
    const size_t i = (preferred + k) % opt.endpoints.size();
    try {
      for (int attempt = 0;; ++attempt) {
        try {
          if (!opt.username.empty() && token.empty() && !auth_not_enabled) authenticate_locked(i);
          grpc::ClientContext ctx;
          prepare(ctx);
          const grpc::Status s = rpc(member(i), ctx);
          if (!s.ok()) fail(i, what, s);
          preferred = i;
          return;
        } catch (const GrpcAuthExpired&) {
          if (attempt > 0 || opt.username.empty())
            throw Error(fmt::format("etcd at {} refused the rendezvous' credentials", opt.endpoints[i].str()),
                        "give --rdzv-etcd-user and its password (MTRAIN_ETCD_PASSWORD or --rdzv-etcd-password-file)",
                        kExitFailure);
          token.clear();
        }
      }
    } catch (const GrpcUnreachable& e) {
      failures.push_back(fmt::format("{}: {}", opt.endpoints[i].str(), e.what()));
      token.clear();  // simple tokens belong to the member that issued them
    }
  }
  std::string all;
  for (const auto& f : failures) all += (all.empty() ? "" : "; ") + f;
  throw Error(fmt::format("no member of the etcd cluster answered {}: {}", what, all),
              "the rendezvous is kept in etcd: check that its members run and are reachable from this node "
              "(etcdctl --endpoints … endpoint health)",
              kExitFailure);
}

EtcdGrpc::EtcdGrpc(EtcdOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

EtcdGrpc::~EtcdGrpc() = default;

std::string EtcdGrpc::version() {
  std::string out;
  impl_->call("status", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    pb::StatusResponse r;
    const pb::StatusRequest req;
    grpc::Status s = unary([&](auto cb) { m.maintenance->async()->Status(&ctx, &req, &r, cb); });
    out = r.version();
    return s;
  });
  return out;
}

namespace {

// One Range call, with the failover of call().
RangeResult run_range(EtcdGrpc::Impl& impl, const pb::RangeRequest& req) {
  RangeResult out;
  impl.call("range", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    pb::RangeResponse r;
    grpc::Status s = unary([&](auto cb) { m.kv->async()->Range(&ctx, &req, &r, cb); });
    out = range_of(r, r.header().revision());
    return s;
  });
  return out;
}

pb::RangeRequest prefix_request(const std::string& prefix) {
  pb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(etcd_prefix_end(prefix));
  return req;
}

}  // namespace

RangeResult EtcdGrpc::range_prefix(const std::string& prefix) { return run_range(*impl_, prefix_request(prefix)); }

RangeResult EtcdGrpc::first_created(const std::string& prefix, int64_t limit) {
  pb::RangeRequest req = prefix_request(prefix);
  req.set_limit(limit);
  req.set_sort_order(pb::RangeRequest::ASCEND);
  req.set_sort_target(pb::RangeRequest::CREATE);
  return run_range(*impl_, req);
}

std::optional<KeyValue> EtcdGrpc::get(const std::string& key) {
  pb::RangeRequest req;
  req.set_key(key);
  RangeResult r = run_range(*impl_, req);
  if (r.kvs.empty()) return std::nullopt;
  return std::move(r.kvs.front());
}

TxnResult EtcdGrpc::txn(const std::vector<TxnCompare>& compare, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) {
  pb::TxnRequest req;
  for (const auto& c : compare) {
    pb::Compare& one = *req.add_compare();
    one.set_key(c.key);
    one.set_result(pb::Compare::EQUAL);
    switch (c.target) {
      case TxnCompare::Target::value:
        one.set_target(pb::Compare::VALUE);
        one.set_value(c.value);
        break;
      case TxnCompare::Target::mod_revision:
        one.set_target(pb::Compare::MOD);
        one.set_mod_revision(c.revision);
        break;
      case TxnCompare::Target::create_revision:
        one.set_target(pb::Compare::CREATE);
        one.set_create_revision(c.revision);
        break;
    }
  }
  const auto branch = [](const std::vector<TxnOp>& ops, auto* out) {
    for (const auto& op : ops) {
      pb::RequestOp& r = *out->Add();
      if (op.put) fill_put(*r.mutable_request_put(), op.range.key, op.value, op.lease);
      else fill_range(*r.mutable_request_range(), op.range);
    }
  };
  branch(success, req.mutable_success());
  branch(failure, req.mutable_failure());
  TxnResult out;
  impl_->call("txn", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    pb::TxnResponse r;
    grpc::Status s = unary([&](auto cb) { m.kv->async()->Txn(&ctx, &req, &r, cb); });
    out = TxnResult{};
    out.succeeded = r.succeeded();
    out.revision = r.header().revision();
    for (const auto& resp : r.responses())
      if (resp.has_response_range()) out.reads.push_back(range_of(resp.response_range(), out.revision));
    return s;
  });
  const auto& ran = compare.empty() || out.succeeded ? success : failure;
  const auto wanted =
      static_cast<size_t>(std::count_if(ran.begin(), ran.end(), [](const TxnOp& op) { return !op.put; }));
  if (out.reads.size() != wanted)
    throw Error(fmt::format("etcd answered {} of {} reads of one transaction", out.reads.size(), wanted), {},
                kExitFailure);
  return out;
}

std::optional<KeyValue> EtcdGrpc::create(const std::string& key, const std::string& value, int64_t lease) {
  TxnCompare absent{key, TxnCompare::Target::create_revision, {}, 0};
  TxnResult r = txn({absent}, {TxnOp::write(key, value, lease)}, {TxnOp::read({key})});
  if (r.succeeded) return std::nullopt;
  if (!r.reads.empty() && !r.reads.front().kvs.empty()) return r.reads.front().kvs.front();
  // Deleted between the compare and the range: etcd's txn is atomic, so this cannot happen.
  throw Error(fmt::format("etcd: key {} neither created nor found", key), {}, kExitFailure);
}

bool EtcdGrpc::compare_and_put(const std::string& key, int64_t mod_revision, const std::string& value) {
  return txn({TxnCompare{key, TxnCompare::Target::mod_revision, {}, mod_revision}}, {TxnOp::write(key, value)}, {})
      .succeeded;
}

void EtcdGrpc::put(const std::string& key, const std::string& value, int64_t lease) {
  pb::PutRequest req;
  fill_put(req, key, value, lease);
  impl_->call("put", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    pb::PutResponse r;
    return unary([&](auto cb) { m.kv->async()->Put(&ctx, &req, &r, cb); });
  });
}

// Deletes [key, range_end) (only key when range_end is empty).
void EtcdGrpc::delete_range(const std::string& key, const std::string& range_end) {
  pb::DeleteRangeRequest req;
  req.set_key(key);
  req.set_range_end(range_end);
  impl_->call("delete", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    pb::DeleteRangeResponse r;
    return unary([&](auto cb) { m.kv->async()->DeleteRange(&ctx, &req, &r, cb); });
  });
}

void EtcdGrpc::erase(const std::string& key) { delete_range(key, {}); }

void EtcdGrpc::delete_prefix(const std::string& prefix) { delete_range(prefix, etcd_prefix_end(prefix)); }

int64_t EtcdGrpc::grant_lease(Duration ttl) {
  pb::LeaseGrantRequest req;
  req.set_ttl(std::max<int64_t>(1, (ttl.count() + 999) / 1000));
  pb::LeaseGrantResponse r;
  impl_->call("lease grant", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    return unary([&](auto cb) { m.lease->async()->LeaseGrant(&ctx, &req, &r, cb); });
  });
  if (!r.error().empty()) throw Error(fmt::format("etcd refused a lease: {}", r.error()), {}, kExitFailure);
  return r.id();
}

void EtcdGrpc::revoke(int64_t lease) {
  pb::LeaseRevokeRequest req;
  req.set_id(lease);
  impl_->call("lease revoke", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    pb::LeaseRevokeResponse r;
    grpc::Status s = unary([&](auto cb) { m.lease->async()->LeaseRevoke(&ctx, &req, &r, cb); });
    // Already expired (its keys are gone): what revoking it was for.
    return s.error_code() == grpc::StatusCode::NOT_FOUND ? grpc::Status::OK : s;
  });
}

bool EtcdGrpc::keep_alive(int64_t lease) {
  pb::LeaseKeepAliveRequest req;
  req.set_id(lease);
  pb::LeaseKeepAliveResponse r;
  // A stream of one request: etcd answers it, sees the end of the client's side and ends the call.
  impl_->call("lease keep-alive", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    r.Clear();
    KeepAliveOnce once(*m.lease, ctx, req, r);
    return once.wait();
  });
  return r.ttl() > 0;
}

WatchResult EtcdGrpc::watch_prefix(const std::string& prefix, int64_t from_revision, Duration timeout) {
  pb::WatchRequest req;
  pb::WatchCreateRequest& create = *req.mutable_create_request();
  create.set_key(prefix);
  create.set_range_end(etcd_prefix_end(prefix));
  create.set_start_revision(from_revision);
  const Duration op_timeout = impl_->opt.op_timeout;
  WatchResult out;
  impl_->call("watch", [&](GrpcMember& m, grpc::ClientContext& ctx) {
    out = WatchResult{};
    // The caller's wait counts from now, as a wait on the JSON gateway's stream does; etcd's
    // confirmation may take the op timeout, and a late one leaves no time to wait for events.
    const auto now = std::chrono::system_clock::now();
    const auto confirm_by = now + op_timeout, wait_until = now + timeout;
    ctx.set_deadline(std::max(confirm_by, wait_until) + op_timeout);
    using Outcome = WatchReactor::Outcome;
    WatchReactor watch(*m.watch, ctx, req);
    Outcome o = watch.await_confirmation(confirm_by);
    if (o == Outcome::unconfirmed)
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the member did not confirm the watch");
    if (o == Outcome::confirmed) o = watch.await_event(wait_until);
    switch (o) {
      case Outcome::idle: return grpc::Status::OK;  // nothing changed in the caller's time
      case Outcome::event: {
        // An event, or "canceled" for a start revision etcd compacted away: either ends the wait,
        // and the caller reads the current state (the events carry the puts it waits for).
        out.changed = true;
        for (const auto& ev : watch.final_response().events())
          if (ev.type() == pb::Event::PUT) out.puts.push_back(kv_of(ev.kv()));
        return grpc::Status::OK;
      }
      default: {
        // The stream ended without an event (the member stopped it): read the state again.
        grpc::Status s = watch.status();
        out.changed = s.ok();
        return s;
      }
    }
  });
  return out;
}

}  // namespace mtrain::rendezvous
