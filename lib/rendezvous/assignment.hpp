#pragma once
// The outcome of a rendezvous: which nodes form the job, their node ranks and global rank
// ranges. Ranks are contiguous per node in node-rank order (the same rule as the static plan's
// topology::place_ranks), and MASTER_ADDR is node 0's address, so global rank 0 lives there.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::rendezvous {

struct AssignedNode {
  std::string host;          // the name the node joined with
  std::string addr;          // how other nodes reach it (defaults to host)
  int node_rank = 0;         // GROUP_RANK
  int first_rank = 0;        // global rank of its LOCAL_RANK 0
  int local_world_size = 0;  // its slot count
};

struct Assignment {
  std::vector<AssignedNode> nodes;  // indexed by node rank
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  std::string run_id;
};

// One node's share of an assignment: all its agent needs, and what the store sends it. Its size
// does not grow with the node count (the whole table for 4096 nodes would be over 300 KB, past
// the frame limit, and sent with every heartbeat).
struct NodeAssignment {
  AssignedNode self;  // this node: rank range and node rank
  int nnodes = 0;
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  std::string run_id;
};

// Number the nodes in the given order and lay out their ranks.
Assignment assign_ranks(std::vector<AssignedNode> nodes_in_order, int master_port, std::string run_id);

nlohmann::json to_json(const Assignment& a);
NodeAssignment for_node(const Assignment& a, int node_rank);
nlohmann::json to_json(const NodeAssignment& a);
// Throws FrameError when the JSON does not have the shape to_json writes.
NodeAssignment node_assignment_from_json(const nlohmann::json& j);
// Throws FrameError when the JSON does not have the shape to_json writes.
Assignment assignment_from_json(const nlohmann::json& j);

}  // namespace mtrain::rendezvous
