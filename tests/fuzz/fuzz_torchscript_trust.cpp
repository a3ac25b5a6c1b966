// The TorchScript trust check against LibTorch's own compiler (issue 40 item 8). Seeds are the code
// records of real archives (corpus/torchscript_trust, written by seed_trust_corpus.py); each round
// mutates one the ways that defeated the old text scan — spacing around dots and parentheses, line
// breaks inside calls, comments and string literals holding code, `torch.` respelled `ops.aten.`
// or `torch.autograd.`, aliases and getattr, `def __setstate__ (`, the record name's case, hostile
// statements dropped into a method, a few random bytes — and checks the invariant:
//
//   the check refuses it (a finding, or an error), or LibTorch's importer (SourceImporter, the code
//   path of torch::jit::load, compiling every class without running anything) compiles it to
//   graphs whose every operator is in the allowlist, with a __setstate__ that only restores state.
//
//   fuzz_torchscript_trust [--seconds S | --rounds N] [--seed K] [--save DIR] SEED_FILE...
// exits 1 on the first input that breaks the invariant (written to --save DIR, default .), else 0
// with a line of figures. CTest runs a fixed-seed round count (label fuzz-regression).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/tree_views.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import_source.h>

#include "lib/core/error.hpp"
#include "lib/trainer/model/torchscript_code_check.hpp"

namespace {

using mtrain::CodeRecord;
using Records = std::vector<CodeRecord>;
namespace jit = torch::jit;

Records read_seed(const std::string& path) {
  std::ifstream in(path);
  Records out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("#@record ", 0) == 0) {
      out.push_back({line.substr(9), ""});
    } else if (!out.empty()) {
      out.back().text += line + "\n";
    }
  }
  return out;
}

std::string folded(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

const std::vector<std::string> kHostile = {
    "t0 = torch.from_file(\"/tmp/pwned\", True, 4)",
    "t0 = torch.from_file (\"/tmp/pwned\", True, 4)",
    "f0 = torch.save",
    "_h = ops.aten.from_file(\"/tmp/pwned\", True, 4)",
    "_h = torch.autograd.from_file(\"/tmp/pwned\", True, 4)",
    "_h = getattr(torch, \"from_file\")",
    "_h = ops.mylib.launch(1)",
    "print(\"hi\")",
    "_h = 1 < 2",
    "_h = torch.gt(torch.ones([1]), 0)",
    "_s = \"\"\"x\"\"\"\nt0 = torch.from_file(\"/tmp/pwned\", True, 4)",
    "_s = '#'\n_h = torch.save(torch.ones([1]), \"/tmp/pwned\")",
};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  void mutate(Records& recs) {
    const int n = 1 + static_cast<int>(pick(4));
    for (int i = 0; i < n; ++i) {
      CodeRecord& r = recs[pick(recs.size())];
      switch (pick(10)) {
        case 0: replace_some(r.text, "(", " ("); break;
        case 1: replace_some(r.text, ".", pick(2) ? " . " : " ."); break;
        case 2: replace_some(r.text, ", ", ",\n      "); break;
        case 3: replace_some(r.text, "torch.", pick(2) ? "ops.aten." : "torch.autograd."); break;
        case 4: replace_some(r.text, "def __setstate__(", "def __setstate__ ("); break;
        case 5: inject(r.text, kHostile[pick(kHostile.size())]); break;
        case 6: inject(r.text, pick(2) ? "_c = \"# torch.from_file(\"" : "_c = '\"\"\"'"); break;
        case 7: r.name = case_flip(r.name); break;
        case 8: replace_some(r.text, "\n", " \\\n"); break;
        default: flip_bytes(r.text); break;
      }
    }
  }

 private:
  void replace_some(std::string& s, const std::string& from, const std::string& to) {
    std::vector<size_t> at;
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + 1)) at.push_back(p);
    if (at.empty()) return;
    const size_t p = at[pick(at.size())];
    s.replace(p, from.size(), to);
  }
  // A statement as the first of a random method's body (the indentation of the line after `def`).
  void inject(std::string& s, const std::string& stmt) {
    std::vector<size_t> defs;
    for (size_t p = s.find("  def "); p != std::string::npos; p = s.find("  def ", p + 1)) defs.push_back(p);
    if (defs.empty()) return;
    size_t p = defs[pick(defs.size())];
    p = s.find(":\n", s.find(")", p));  // end of the signature
    if (p == std::string::npos) return;
    p += 2;
    const size_t ind = s.find_first_not_of(' ', p);
    if (ind == std::string::npos) return;
    const std::string pad(ind - p, ' ');
    std::string lines;
    for (size_t a = 0, b; a < stmt.size(); a = b + 1) {  // every line of the statement at the body's indentation
      b = stmt.find('\n', a);
      if (b == std::string::npos) b = stmt.size();
      lines += pad + stmt.substr(a, b - a) + "\n";
    }
    s.insert(p, lines);
  }
  std::string case_flip(std::string n) {
    for (char& c : n)
      if (pick(3) == 0) c = static_cast<char>(std::isupper(static_cast<unsigned char>(c)) ? std::tolower(c) : std::toupper(c));
    return n;
  }
  void flip_bytes(std::string& s) {
    if (s.empty()) return;
    for (int k = 0; k < 3; ++k) s[pick(s.size())] = " ()[].,:\n\"'#\\_atx01"[pick(20)];
  }
  std::mt19937_64 rng_;
};

// What LibTorch's importer compiles the records to; a description of the first operator outside
// the allowlist (or setstate beyond restoring), or "" when there is none.
const std::set<std::string> kRestoreOps = {"aten::copy_", "aten::set_", "aten::detach", "aten::detach_",
                                           "aten::clone", "aten::to", "aten::contiguous", "aten::view",
                                           "aten::reshape", "aten::requires_grad_", "aten::__getitem__",
                                           "aten::select", "aten::slice"};

std::string block_violation(jit::Block* b, bool setstate) {
  for (jit::Node* n : b->nodes()) {
    const c10::Symbol k = n->kind();
    const std::string q = k.toQualString();
    if (!k.is_prim() && !mtrain::trainer::allowlisted_operator(q)) return q + " outside the allowlist";
    if (setstate && k.is_aten() && !kRestoreOps.count(q)) return q + " in __setstate__";
    if (setstate && (k == c10::prim::CallMethod || k == c10::prim::CallFunction || k == c10::prim::Print))
      return q + " in __setstate__";
    for (const jit::Value* v : n->inputs())
      if (auto c = v->type()->cast<c10::ClassType>())
        if (c->name() && c->name()->qualifiedName().rfind("__torch__.torch.classes", 0) == 0)
          return "custom class " + c->name()->qualifiedName();
    for (jit::Block* sub : n->blocks())
      if (auto v = block_violation(sub, setstate); !v.empty()) return v;
  }
  return "";
}

std::string compiled_violation(const Records& recs) {
  auto cu = std::make_shared<jit::CompilationUnit>();
  std::vector<at::IValue> constants;
  auto loader = [&](const std::string& qualifier) -> std::shared_ptr<jit::Source> {
    std::string path = "code/" + qualifier + ".py";
    std::replace(path.begin() + 5, path.end() - 3, '.', '/');
    for (const auto& r : recs)
      if (folded(r.name) == folded(path)) return std::make_shared<jit::Source>(r.text, r.name, 1);
    return nullptr;
  };
  jit::SourceImporter importer(cu, &constants, loader, 1000);
  std::vector<c10::ClassTypePtr> classes;
  for (const auto& r : recs) {
    std::string q = r.name.substr(5, r.name.size() - 8);  // code/<q>.py
    std::replace(q.begin(), q.end(), '/', '.');
    try {
      jit::Parser p(std::make_shared<jit::Source>(r.text, r.name, 1));
      while (p.lexer().cur().kind != jit::TK_EOF) {
        if (p.lexer().cur().kind != jit::TK_CLASS_DEF) { p.lexer().next(); continue; }
        const jit::ClassDef cd(p.parseClass());
        if (auto t = importer.loadType(c10::QualifiedName(q + "." + cd.name().name())))
          if (auto c = t->cast<c10::ClassType>()) classes.push_back(c);
      }
    } catch (const std::exception&) {
      // LibTorch cannot compile it: nothing of it could run.
    }
  }
  for (const auto& c : classes)
    for (jit::Function* f : c->methods()) {
      try {
        auto g = jit::toGraphFunction(*f).graph();
        if (auto v = block_violation(g->block(), f->name() == "__setstate__"); !v.empty())
          return c->name()->qualifiedName() + "." + f->name() + ": " + v;
      } catch (const std::exception&) {
      }
    }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  long rounds = 200;
  uint64_t seed = 1;
  std::string save = ".";
  std::vector<Records> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::stod(argv[++i]), rounds = -1;
    else if (a == "--rounds" && i + 1 < argc) rounds = std::stol(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
    else if (a == "--save" && i + 1 < argc) save = argv[++i];
    else seeds.push_back(read_seed(a));
  }
  seeds.erase(std::remove_if(seeds.begin(), seeds.end(), [](const Records& r) { return r.empty(); }), seeds.end());
  if (seeds.empty()) {
    std::cerr << "fuzz_torchscript_trust: no seed files with records\n";
    return 2;
  }
  Mutator m(seed);
  long done = 0, refused = 0, errors = 0, passed = 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (rounds < 0 ? elapsed() < seconds : done < rounds) {
    Records recs = seeds[m.pick(seeds.size())];
    m.mutate(recs);
    ++done;
    try {
      // The archive reader refuses two records that fold to one name: so does this.
      std::set<std::string> names;
      bool dup = false;
      for (const auto& r : recs) dup = dup || !names.insert(folded(r.name)).second;
      if (dup || !mtrain::trainer::check_torchscript_code(recs).findings.empty()) {
        ++refused;
        continue;
      }
    } catch (const mtrain::Error&) {
      ++errors;
      continue;
    }
    ++passed;
    if (const std::string v = compiled_violation(recs); !v.empty()) {
      const std::string out = save + "/trust-violation-" + std::to_string(seed) + "-" + std::to_string(done) + ".txt";
      std::ofstream f(out);
      for (const auto& r : recs) f << "#@record " << r.name << "\n" << r.text;
      std::cerr << "fuzz_torchscript_trust: round " << done << ": the check passed code that compiles to " << v
                << " (input written to " << out << ")\n";
      return 1;
    }
  }
  std::printf("fuzz_torchscript_trust: %ld rounds in %.1f s (seed %lu): %ld refused by a finding, %ld refused as "
              "unparsable or too deep, %ld passed and compiled by LibTorch to allowlisted operators only; 0 violations\n",
              done, elapsed(), static_cast<unsigned long>(seed), refused, errors, passed);
  return 0;
}
