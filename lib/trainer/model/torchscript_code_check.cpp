#include "lib/trainer/model/torchscript_code_check.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <ATen/core/interned_strings.h>
#include <fmt/format.h>
#include <torch/csrc/jit/frontend/lexer.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/tree_views.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::trainer {

namespace {

namespace jit = torch::jit;

const char* const kAllowlist[] = {
#include "trust_allowlist.inc"
};

// TorchScript's builtin names (ir_emitter.cpp's globals) and the importer's special forms
// (import_source.cpp's environment): the language, not operators a file picks.
const std::set<std::string> kBuiltins = {
    "print", "tuple", "float", "complex", "int", "bool", "str", "getattr", "hasattr", "isinstance", "_to_tensor",
    "len", "hex", "oct", "round", "hash", "id", "min", "max", "abs", "all", "any", "divmod", "sum", "list", "dict",
    "ord", "chr", "bin", "pow", "range", "zip", "enumerate", "rangelist", "sorted", "AssertionError", "fork",
    "awaitable", "annotate", "unchecked_cast", "uninitialized"};
// Builtins that only state a type: a __setstate__ may use them.
const std::set<std::string> kTypeForms = {"annotate", "unchecked_cast", "uninitialized"};
// What a __setstate__ may call to put state back (as operators or as methods of the state's values).
const std::set<std::string> kRestore = {"copy_", "set_", "detach", "detach_", "clone", "to", "contiguous", "view",
                                        "reshape", "requires_grad_", "__getitem__", "select", "slice"};
// Methods TorchScript resolves without an operator of that name (casts, tolist).
const std::set<std::string> kSugarMethods = {"float", "double", "half", "int", "long", "short", "char", "byte",
                                             "bool", "bfloat16", "cfloat", "cdouble", "tolist"};
// Why some operators are left out of the allowlist, for the paragraph.
const std::map<std::string, std::string> kWhy = {
    {"aten::from_file", "it maps or creates a file"}, {"aten::save", "it writes a file"},
    {"aten::load", "it reads a file"}};

bool is_operator(const std::string& qualified) {
  return !jit::getAllOperatorsFor(c10::Symbol::fromQualString(qualified)).empty();
}

// What a name in the code stands for, as the importer's environment resolves it.
struct Sugar {
  enum Kind { Value, Namespace, Ops, Operator, Builtin, ClassPath, Member } kind = Value;
  std::string name;  // Namespace "aten"; Operator "aten::relu"; Builtin "print"; ClassPath "__torch__.a"; Member "m"
};

class Walker {
 public:
  Walker(CodeCheck& out, const std::unordered_set<std::string>& defined) : out_(out), defined_(defined) {}

  void walk(const std::string& file, const jit::TreeRef& t) {
    file_ = &file;
    visit(t);
  }

 private:
  std::string where(const jit::SourceRange& r) const {
    const auto& src = r.source();
    return src ? fmt::format("{}:{}", *file_, src->lineno_for_offset(r.start()) + 1) : *file_;
  }

  void finding(std::string what, const jit::SourceRange& r) { out_.findings.push_back({std::move(what), where(r)}); }

  void operator_ref(const std::string& q, const jit::SourceRange& r, bool called) {
    if (seen_.insert(q).second) {
      out_.operators.push_back({q, where(r)});
      if (!is_operator(q)) out_.unknown.push_back({q, where(r)});
    }
    const std::string ns = q.substr(0, q.find("::"));
    if (!allowlisted_operator(q)) {
      const auto why = kWhy.find(q);
      finding(ns != "aten" && ns != "prim"
                  ? fmt::format("calls {}, an operator of the '{}' library, code outside PyTorch's own operators", q, ns)
                  : fmt::format("calls {}, an operator outside the allowlist of a trainable model's operators{}", q,
                                why == kWhy.end() ? "" : " (" + why->second + ")"),
              r);
    } else if (setstate_ && (!called || !kRestore.count(q.substr(q.find("::") + 2)))) {
      setstate_finding("calls " + q, r);
    }
  }

  void setstate_finding(const std::string& what, const jit::SourceRange& r) {
    finding(fmt::format("has a __setstate__ (at {}) that {}, which runs while the file loads and does more "
                        "than restore state",
                        setstate_at_, what),
            r);
  }

  // Resolves a Var/Select chain; anything else is a value (and is visited).
  Sugar resolve(const jit::TreeRef& t) {
    if (t->kind() == jit::TK_VAR) {
      const std::string n = jit::Var(t).name().name();
      if (n == "torch") return {Sugar::Namespace, "aten"};
      if (n == "ops") return {Sugar::Ops, ""};
      if (n == "__torch__") return {Sugar::ClassPath, n};
      if (kBuiltins.count(n)) return {Sugar::Builtin, n};
      return {};
    }
    if (t->kind() != '.') {
      visit(t);
      return {};
    }
    const jit::Select s(t);
    const std::string field = s.selector().name();
    const Sugar base = resolve(s.value());
    switch (base.kind) {
      case Sugar::Namespace:  // BuiltinModule::attr: `autograd` is aten again, anything else an operator
        if (field == "autograd") return {Sugar::Namespace, "aten"};
        if (base.name == "aten" && field == "Tensor") return {};  // the type, in annotations
        return {Sugar::Operator, base.name + "::" + field};
      case Sugar::Ops:
        return {Sugar::Namespace, field};
      case Sugar::ClassPath:
        return {Sugar::ClassPath, base.name + "." + field};
      case Sugar::Operator:
        operator_ref(base.name, s.value().range(), false);
        return {};
      default:
        return {Sugar::Member, field};
    }
  }

  void use(const jit::TreeRef& t, bool called) {
    const Sugar s = resolve(t);
    const auto& r = t->range();
    switch (s.kind) {
      case Sugar::Operator:
        operator_ref(s.name, r, called);
        break;
      case Sugar::Namespace:
      case Sugar::Ops:
        finding(fmt::format("uses the operator namespace {} as a value, which reaches any operator by name",
                            s.kind == Sugar::Ops ? "ops" : (s.name == "aten" ? "torch" : "ops." + s.name)),
                r);
        break;
      case Sugar::Builtin:
        if (setstate_ && called && !kTypeForms.count(s.name)) setstate_finding("calls " + s.name + "()", r);
        break;
      case Sugar::ClassPath:
        if (str::starts_with(s.name + ".", "__torch__.torch.classes."))
          finding(fmt::format("uses {}, a custom C++ class: code outside PyTorch's own operators", s.name), r);
        else if (setstate_ && called)
          setstate_finding("calls " + s.name + "()", r);
        break;
      case Sugar::Member: {
        // A called method is an operator when one has its name (a Tensor's, a list's, a str's),
        // else the archive's own method. Not called, it is an attribute (`self.where`), unless
        // it names an operator outside the allowlist: `f = x.op` binds a method to call later.
        const std::string q = "aten::" + s.name;
        const bool op = is_operator(q) || allowlisted_operator(q);
        if (op && (called || !allowlisted_operator(q))) {
          operator_ref(q, r, called);
        } else if (called && setstate_) {
          setstate_finding("calls the method " + s.name + "()", r);
        } else if (called && !kSugarMethods.count(s.name) && !defined_.count(s.name)) {
          finding(fmt::format("calls the method {}(), which is neither a PyTorch operator nor a method of the "
                              "archive's own classes (a custom C++ class's method)",
                              s.name),
                  r);
        }
        break;
      }
      case Sugar::Value:
        break;
    }
  }

  void visit(const jit::TreeRef& t) {
    switch (t->kind()) {
      case jit::TK_STRING:
      case jit::TK_CONST:
      case jit::TK_STRINGLITERAL:
        return;
      case jit::TK_DEF: {
        const jit::Def d(t);
        const bool was = setstate_;
        const std::string at = setstate_at_;
        if (d.name().name() == "__setstate__") setstate_ = true, setstate_at_ = where(t->range());
        for (const auto& sub : t->trees()) visit(sub);
        setstate_ = was, setstate_at_ = at;
        return;
      }
      case jit::TK_APPLY: {
        const jit::Apply a(t);
        use(a.callee(), true);
        for (const auto& e : a.inputs()) visit(e);
        for (const auto& attr : a.attributes()) visit(attr.value());
        return;
      }
      case jit::TK_VAR:
      case '.':
        use(t, false);
        return;
      case jit::TK_AND: case jit::TK_OR: case '<': case '>': case jit::TK_IS: case jit::TK_ISNOT:
      case jit::TK_EQ: case jit::TK_LE: case jit::TK_GE: case jit::TK_NE: case '+': case '*': case '/':
      case '-': case '@': case jit::TK_POW: case jit::TK_LSHIFT: case jit::TK_RSHIFT: case '%': case '&':
      case '^': case '|': case jit::TK_FLOOR_DIV: case jit::TK_IN: case jit::TK_NOTIN: case jit::TK_NOT:
      case jit::TK_UNARY_MINUS: case '~': case jit::TK_AUG_ASSIGN:
        if (setstate_) setstate_finding(fmt::format("uses the operator '{}'", jit::kindToString(t->kind())), t->range());
        break;
      // Branches and loops compile to operators of their own (a Tensor's truth is aten::Bool, a
      // range loop aten::__range_length): restoring state needs none of them.
      case jit::TK_IF: case jit::TK_IF_EXPR: case jit::TK_WHILE: case jit::TK_FOR: case jit::TK_LIST_COMP:
      case jit::TK_DICT_COMP: case jit::TK_ASSERT: case jit::TK_RAISE: case jit::TK_WITH: case jit::TK_DELETE:
        if (setstate_) setstate_finding(fmt::format("has a statement '{}'", jit::kindToString(t->kind())), t->range());
        break;
      default:
        break;
    }
    for (const auto& sub : t->trees()) visit(sub);
  }

  CodeCheck& out_;
  const std::unordered_set<std::string>& defined_;
  std::unordered_set<std::string> seen_;
  const std::string* file_ = nullptr;
  bool setstate_ = false;
  std::string setstate_at_;
};

[[noreturn]] void refuse_record(const CodeRecord& r, const std::string& why) {
  throw UsageError(
      fmt::format("the TorchScript code record {} {}", visible_text(r.name), why),
      "a file written by torch.jit.save parses; use a model file from a source you trust, or script and save "
      "the model again");
}

// The bounds that keep the recursive parser's depth finite, checked with LibTorch's own lexer.
void check_nesting(const CodeRecord& r, const std::shared_ptr<jit::Source>& src) {
  jit::Lexer L(src);
  int brackets = 0, blocks = 0, line_tokens = 0;
  for (; L.cur().kind != jit::TK_EOF; L.next()) {
    const int k = L.cur().kind;
    if (k == '(' || k == '[' || k == '{') ++brackets;
    if (k == ')' || k == ']' || k == '}') --brackets;
    if (k == jit::TK_INDENT) ++blocks;
    if (k == jit::TK_DEDENT) --blocks;
    line_tokens = k == jit::TK_NEWLINE ? 0 : line_tokens + 1;
    if (brackets > kMaxNesting || blocks > kMaxNesting || line_tokens > kMaxLineTokens)
      refuse_record(r, fmt::format("nests deeper than the trust check reads (line {}: more than {} brackets or blocks, "
                                   "or {} tokens in one statement)",
                                   src->lineno_for_offset(L.cur().range.start()) + 1, kMaxNesting, kMaxLineTokens));
  }
}

// The importer's reading of a code file (import_source.cpp, parseSourceIfNeeded): an optional
// `op_version_set = N`, `import` lines, then classes and functions.
std::vector<jit::TreeRef> parse_record(const CodeRecord& r) {
  auto src = std::make_shared<jit::Source>(r.text, r.name, 0);
  check_nesting(r, src);
  jit::Parser p(src);
  auto& L = p.lexer();
  if (L.cur().kind == jit::TK_IDENT && std::string(L.cur().range.token_text()) == "op_version_set") {
    L.next();
    L.expect('=');
    L.expect(jit::TK_NUMBER);
    L.expect(jit::TK_NEWLINE);
  }
  std::vector<jit::TreeRef> out;
  while (L.cur().kind != jit::TK_EOF) {
    while (L.nextIf(jit::TK_IMPORT)) {
      while (L.cur().kind != jit::TK_NEWLINE && L.cur().kind != jit::TK_EOF) L.next();
      L.expect(jit::TK_NEWLINE);
    }
    if (L.cur().kind == jit::TK_CLASS_DEF)
      out.push_back(p.parseClass());
    else if (L.cur().kind == jit::TK_DEF)
      out.push_back(p.parseFunction(/*is_method=*/false));
    else if (L.cur().kind != jit::TK_EOF)
      refuse_record(r, fmt::format("has {} where LibTorch's importer expects a class or a def (line {})",
                                   jit::kindToString(L.cur().kind), src->lineno_for_offset(L.cur().range.start()) + 1));
  }
  return out;
}

void collect_defs(const jit::TreeRef& t, std::unordered_set<std::string>& names) {
  if (t->kind() == jit::TK_DEF) names.insert(jit::Def(t).name().name());
  if (t->kind() == jit::TK_CLASS_DEF || t->kind() == jit::TK_LIST)
    for (const auto& sub : t->trees()) collect_defs(sub, names);
}

CodeCheck check_on_this_thread(const std::vector<CodeRecord>& code) {
  std::vector<std::vector<jit::TreeRef>> parsed;
  for (const auto& r : code) {
    try {
      parsed.push_back(parse_record(r));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      refuse_record(r, "does not parse as TorchScript: " + what.substr(0, what.find('\n')));
    }
  }
  std::unordered_set<std::string> defined;
  for (const auto& trees : parsed)
    for (const auto& t : trees) collect_defs(t, defined);
  CodeCheck out;
  Walker w(out, defined);
  for (size_t i = 0; i < code.size(); ++i)
    for (const auto& t : parsed[i]) w.walk(code[i].name, t);
  return out;
}

// The parser recurses once per nesting level and per operator of a statement; its own thread
// with a stack sized for kMaxNesting and kMaxLineTokens keeps hostile input from overflowing the
// caller's (the pages are only touched as deep as the input goes).
constexpr size_t kCheckStack = 512ull << 20;

struct ThreadJob {
  const std::vector<CodeRecord>* code;
  CodeCheck result;
  std::exception_ptr error;
};

void* run_job(void* p) {
  auto* job = static_cast<ThreadJob*>(p);
  try {
    job->result = check_on_this_thread(*job->code);
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

bool allowlisted_operator(std::string_view qualified) {
  return std::binary_search(std::begin(kAllowlist), std::end(kAllowlist), qualified,
                            [](auto a, auto b) { return std::string_view(a) < std::string_view(b); });
}

CodeCheck check_torchscript_code(const std::vector<CodeRecord>& code) {
  ThreadJob job{&code, {}, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kCheckStack);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, run_job, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0)
    throw RuntimeFailure(fmt::format("cannot start the TorchScript trust check's thread: {}", std::strerror(rc)));
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return std::move(job.result);
}

}  // namespace mtrain::trainer
