#include "lib/rendezvous/etcd_agreement.hpp"

#include <charconv>
#include <iterator>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_mac.hpp"
#include "lib/rendezvous/token.hpp"

namespace mtrain::rendezvous {

namespace {

constexpr std::string_view kAgreementMagic = "mtrain-agreement 1";
constexpr size_t kAgreementMacChars = 64;

// The body's grammar, read left to right without allocating: each call takes one field and the
// separator after it (a space inside a line, '\n' at its end).
class AgreementReader {
 public:
  explicit AgreementReader(std::string_view body) : rest_(body) {}
  bool done() const { return rest_.empty(); }
  std::string_view rest() const { return rest_; }
  // The next field, which must end with `sep`; none when the line is malformed.
  std::optional<std::string_view> field(char sep) {
    size_t end = 0;
    while (end < rest_.size() && rest_[end] != ' ' && rest_[end] != '\n') ++end;
    if (end == 0 || end == rest_.size() || rest_[end] != sep) return std::nullopt;
    std::string_view f = rest_.substr(0, end);
    rest_.remove_prefix(end + 1);
    return f;
  }
  std::optional<int> number(char sep) {
    const auto f = field(sep);
    int v = 0;
    if (!f) return std::nullopt;
    const auto [p, ec] = std::from_chars(f->data(), f->data() + f->size(), v);
    if (ec != std::errc() || p != f->data() + f->size() || v < 0) return std::nullopt;
    return v;
  }
  bool literal(std::string_view text) {
    if (rest_.substr(0, text.size()) != text) return false;
    rest_.remove_prefix(text.size());
    return true;
  }

 private:
  std::string_view rest_;
};

std::optional<AgreementRow> read_agreement_row(AgreementReader& in) {
  const auto id = in.field(' ');
  const auto first = in.number(' ');
  const auto slots = in.number(' ');
  const auto host = in.field(' ');
  const auto addr = in.field('\n');
  if (!id || !first || !slots || !host || !addr) return std::nullopt;
  return AgreementRow{*id, *host, *addr, *first, *slots};
}

Error not_an_agreement(const std::string& key, const std::string& what) {
  return Error(fmt::format("etcd: {} is not a rendezvous agreement of this mtrain: {}", key, what),
               "a node of another mtrain version, or another writer, changed the job's keys; remove the prefix "
               "(etcdctl del --prefix) and start every node with the same mtrain",
               kExitFailure);
}

}  // namespace

std::string agreement_field_problem(std::string_view field) {
  if (field.empty()) return "it is empty";
  for (const char c : field)
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') return "it holds whitespace or a control character";
  return {};
}

std::string sign_agreement(const std::string& token, const Assignment& a, const std::vector<std::string>& ids) {
  if (ids.size() != a.nodes.size())
    throw Error(fmt::format("an agreement of {} nodes was given {} ids", a.nodes.size(), ids.size()), "", kExitFailure);
  std::string body =
      fmt::format("{} {} {} {} {}\n", kAgreementMagic, a.nodes.size(), a.world_size, a.master_port, a.master_addr);
  body.reserve(body.size() + a.nodes.size() * 48);
  for (size_t i = 0; i < ids.size(); ++i) {
    const AssignedNode& n = a.nodes[i];
    for (const std::string* f : {&ids[i], &n.host, &n.addr})
      if (const std::string why = agreement_field_problem(*f); !why.empty())
        throw Error(
            fmt::format("node '{}' of the round cannot be written into its agreement: '{}' {}", n.host, *f, why),
            "give every node a host name and address without whitespace", kExitFailure);
    fmt::format_to(std::back_inserter(body), "{} {} {} {} {}\n", ids[i], n.first_rank, n.local_world_size, n.host,
                   n.addr);
  }
  return hmac_sha256_hex(token, body) + "\n" + body;
}

Agreement Agreement::verify(std::string value, const std::string& token, const std::string& key) {
  const size_t nl = value.find('\n');
  const std::string_view whole = value;
  if (nl != kAgreementMacChars || !tokens_equal(whole.substr(0, nl), hmac_sha256_hex(token, whole.substr(nl + 1))))
    throw Error(fmt::format("etcd: {} is not signed with this job's token", key),
                "another writer changed the job's keys; remove the prefix and start again", kExitFailure);
  Agreement a;
  AgreementReader in(whole.substr(nl + 1));
  std::optional<int> nnodes, world, port;
  std::optional<std::string_view> master;
  if (!in.literal(kAgreementMagic) || !in.literal(" ") || !(nnodes = in.number(' ')) || !(world = in.number(' ')) ||
      !(port = in.number(' ')) || !(master = in.field('\n')))
    throw not_an_agreement(key, "its first line is not \"mtrain-agreement 1 <nodes> <world size> <port> <master>\"");
  // Every line is read once here, so that place_of and rows() meet only well-formed lines.
  const size_t rows_at = value.size() - in.rest().size();
  int rows = 0;
  for (; !in.done(); ++rows)
    if (!read_agreement_row(in))
      throw not_an_agreement(
          key, fmt::format("its line for node rank {} is not \"<id> <first rank> <slots> <host> <addr>\"", rows));
  if (rows != *nnodes) throw not_an_agreement(key, fmt::format("it says {} nodes but lists {}", *nnodes, rows));
  a.rows_at_ = rows_at;
  a.nnodes_ = *nnodes;
  a.world_size_ = *world;
  a.master_port_ = *port;
  a.master_addr_ = std::string(*master);
  a.value_ = std::move(value);
  return a;
}

std::optional<NodeAssignment> Agreement::place_of(std::string_view id, const std::string& run_id) const {
  AgreementReader lines(std::string_view(value_).substr(rows_at_));
  for (int rank = 0; !lines.done(); ++rank) {
    const AgreementRow row = *read_agreement_row(lines);  // verify() read every line
    if (row.id != id) continue;
    NodeAssignment out;
    out.self.host = std::string(row.host);
    out.self.addr = std::string(row.addr);
    out.self.node_rank = rank;
    out.self.first_rank = row.first_rank;
    out.self.local_world_size = row.slots;
    out.nnodes = nnodes_;
    out.world_size = world_size_;
    out.master_addr = master_addr_;
    out.master_port = master_port_;
    out.run_id = run_id;
    return out;
  }
  return std::nullopt;
}

std::vector<AgreementRow> Agreement::rows() const {
  std::vector<AgreementRow> out;
  out.reserve(static_cast<size_t>(nnodes_));
  AgreementReader lines(std::string_view(value_).substr(rows_at_));
  while (!lines.done()) out.push_back(*read_agreement_row(lines));
  return out;
}

}  // namespace mtrain::rendezvous
