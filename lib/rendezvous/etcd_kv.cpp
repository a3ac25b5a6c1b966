#include "lib/rendezvous/etcd_kv.hpp"

namespace mtrain::rendezvous {

std::vector<RangeResult> EtcdKv::read_all(const std::vector<RangeOp>& ops) {
  std::vector<TxnOp> reads;
  reads.reserve(ops.size());
  for (const auto& op : ops) reads.push_back(TxnOp::read(op));
  return txn({}, reads, {}).reads;
}

}  // namespace mtrain::rendezvous
