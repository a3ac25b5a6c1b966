#pragma once
// A round's agreement as the etcd rendezvous keeps it in P r/<round>/agreed (etcd_rendezvous.hpp):
//
//   <HMAC-SHA-256(token, body), 64 lowercase hex>\n<body>
//   body   = "mtrain-agreement 1 <nnodes> <world size> <master port> <master addr>\n"
//            then one line per node, in node-rank order: "<id> <first rank> <slots> <host> <addr>\n"
//
// The agent that completes the round lays the ranks out once (assign_ranks: the one definition
// of the layout) and writes them here; every other agent reads its own line and the header. The
// watch event carries the whole value to every waiting agent, so reading it must cost an agent
// no allocation per node: when each of 512 agents on one machine parsed a JSON table of the
// round and laid the ranks out itself, that was a quarter of the time to form. Fields hold no
// whitespace and are never empty (node ids are tokens, hosts are names or addresses: a node
// whose host or address has whitespace is refused before it joins), so a space separates them.
// The MAC is checked before a byte of the body is read: a value another writer put is refused.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/rendezvous/assignment.hpp"

namespace mtrain::rendezvous {

// One node's line, as views into the agreement's value.
struct AgreementRow {
  std::string_view id, host, addr;
  int first_rank = 0, slots = 0;
};

// Why a name cannot be a field of the agreement (empty, or holding whitespace or a control
// character); empty when it can.
std::string agreement_field_problem(std::string_view field);

// The signed value for `a` (from assign_ranks), whose nodes have `ids` in the same order. Throws
// Error when an id, host or address cannot be a field.
std::string sign_agreement(const std::string& token, const Assignment& a, const std::vector<std::string>& ids);

class Agreement {
 public:
  // Checks the MAC under `token` and every line of the body; throws Error (exit 1) naming `key`
  // when the value is not signed with the token or is not this format.
  static Agreement verify(std::string value, const std::string& token, const std::string& key);

  int nnodes() const { return nnodes_; }
  // This node's share (node rank, its rank range, the master), or none when `id` is not in it.
  std::optional<NodeAssignment> place_of(std::string_view id, const std::string& run_id) const;
  // Every node in node-rank order (the names of lost nodes; the next round's survivors first).
  std::vector<AgreementRow> rows() const;

 private:
  Agreement() = default;
  std::string value_;
  size_t rows_at_ = 0;  // where the first node's line starts in value_
  int nnodes_ = 0, world_size_ = 0, master_port_ = 0;
  std::string master_addr_;
};

}  // namespace mtrain::rendezvous
