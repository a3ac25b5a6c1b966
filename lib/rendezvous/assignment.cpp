#include "lib/rendezvous/assignment.hpp"

#include "lib/rendezvous/frame.hpp"

namespace mtrain::rendezvous {

Assignment assign_ranks(std::vector<AssignedNode> nodes, int master_port, std::string run_id) {
  Assignment a;
  a.master_port = master_port;
  a.run_id = std::move(run_id);
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].node_rank = static_cast<int>(i);
    nodes[i].first_rank = a.world_size;
    a.world_size += nodes[i].local_world_size;
  }
  if (!nodes.empty()) a.master_addr = nodes[0].addr.empty() ? nodes[0].host : nodes[0].addr;
  a.nodes = std::move(nodes);
  return a;
}

namespace {
nlohmann::json node_json(const AssignedNode& n) {
  return {{"host", n.host}, {"addr", n.addr}, {"node_rank", n.node_rank}, {"first_rank", n.first_rank},
          {"local_world_size", n.local_world_size}};
}
AssignedNode node_from_json(const nlohmann::json& n) {
  AssignedNode x;
  x.host = n.at("host").get<std::string>();
  x.addr = n.at("addr").get<std::string>();
  x.node_rank = n.at("node_rank").get<int>();
  x.first_rank = n.at("first_rank").get<int>();
  x.local_world_size = n.at("local_world_size").get<int>();
  return x;
}
}  // namespace

nlohmann::json to_json(const Assignment& a) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : a.nodes) nodes.push_back(node_json(n));
  return {{"nodes", nodes}, {"world_size", a.world_size}, {"master_addr", a.master_addr},
          {"master_port", a.master_port}, {"run_id", a.run_id}};
}

Assignment assignment_from_json(const nlohmann::json& j) {
  try {
    Assignment a;
    for (const auto& n : j.at("nodes")) a.nodes.push_back(node_from_json(n));
    a.world_size = j.at("world_size").get<int>();
    a.master_addr = j.at("master_addr").get<std::string>();
    a.master_port = j.at("master_port").get<int>();
    a.run_id = j.at("run_id").get<std::string>();
    return a;
  } catch (const nlohmann::json::exception& e) {
    throw FrameError(std::string("malformed assignment: ") + e.what());
  }
}

NodeAssignment for_node(const Assignment& a, int node_rank) {
  NodeAssignment v;
  v.self = a.nodes.at(static_cast<size_t>(node_rank));
  v.nnodes = static_cast<int>(a.nodes.size());
  v.world_size = a.world_size;
  v.master_addr = a.master_addr;
  v.master_port = a.master_port;
  v.run_id = a.run_id;
  return v;
}

nlohmann::json to_json(const NodeAssignment& a) {
  return {{"self", node_json(a.self)},      {"nnodes", a.nnodes},           {"world_size", a.world_size},
          {"master_addr", a.master_addr}, {"master_port", a.master_port}, {"run_id", a.run_id}};
}

NodeAssignment node_assignment_from_json(const nlohmann::json& j) {
  try {
    NodeAssignment a;
    a.self = node_from_json(j.at("self"));
    a.nnodes = j.at("nnodes").get<int>();
    a.world_size = j.at("world_size").get<int>();
    a.master_addr = j.at("master_addr").get<std::string>();
    a.master_port = j.at("master_port").get<int>();
    a.run_id = j.at("run_id").get<std::string>();
    if (a.self.node_rank < 0 || a.self.node_rank >= a.nnodes)
      throw FrameError("malformed assignment: node rank outside the node count");
    return a;
  } catch (const nlohmann::json::exception& e) {
    throw FrameError(std::string("malformed assignment: ") + e.what());
  }
}

}  // namespace mtrain::rendezvous
