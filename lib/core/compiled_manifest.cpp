#include "lib/core/compiled_manifest.hpp"

#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 2;  // python/mtrain_export/__init__.py FORMAT_VERSION
const char* const kReexport =
    "Export the model again with this mtrain (`mtrain export MODULE.py:FACTORY --example "
    "... --wrap-module-types ... --out DIR`, docs/your-model.md) and pass that folder as model.path";

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    throw Error(fmt::format("model.path: the compiled package manifest '{}' is not usable: {} {}",
                            visible_text(origin_), field, what),
                kReexport);
  }
  const json& at(const json& obj, const std::string& key, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key)) bad(field, "is missing");
    return obj.at(key);
  }
  std::string str(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_string() || v.get_ref<const std::string&>().empty()) bad(field, "is not a non-empty string");
    return v.get<std::string>();
  }
  bool boolean(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_boolean()) bad(field, "is not true or false");
    return v.get<bool>();
  }
  std::vector<int64_t> shape(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_array() || v.size() > 16) bad(field, "is not a list of at most 16 dimensions");
    std::vector<int64_t> out;
    for (const json& d : v) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40))
        bad(field, "holds a dimension that is not an integer between 0 and 2^40");
      out.push_back(d.get<int64_t>());
    }
    return out;
  }
  std::vector<std::string> names(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_array()) bad(field, "is not a list of names");
    std::vector<std::string> out;
    for (const json& n : v) {
      if (!n.is_string() || n.get_ref<const std::string&>().empty()) bad(field, "holds an entry that is not a name");
      out.push_back(n.get<std::string>());
    }
    return out;
  }
  std::string dtype(const json& obj, const std::string& key, const std::string& field) const {
    static const std::set<std::string> known = {"float32", "float16", "bfloat16", "float64", "int64",
                                                "int32",   "int8",    "uint8",    "bool"};
    std::string d = str(obj, key, field);
    if (!known.count(d)) bad(field, fmt::format("names the dtype '{}', which mtrain does not train", visible_text(d)));
    return d;
  }

 private:
  std::string origin_;
};

CompiledProgram program(const Reader& r, const json& part, const std::string& key, const std::string& field,
                        const std::string& dir) {
  const json& p = r.at(part, key, field);
  CompiledProgram out{r.str(p, "file", field + ".file"), r.str(p, "key", field + ".key")};
  // Only a plain file in programs/: a manifest cannot point the loader elsewhere on the machine.
  const std::string stem = out.file.rfind("programs/", 0) == 0 ? out.file.substr(9) : std::string();
  if (stem.empty() || stem.find('/') != std::string::npos || stem.find("..") != std::string::npos || stem.size() < 5 ||
      stem.compare(stem.size() - 4, 4, ".pt2") != 0)
    r.bad(field + ".file", fmt::format("'{}' is not programs/<name>.pt2", visible_text(out.file)));
  const std::string why = not_regular_file(dir + "/" + out.file);
  if (!why.empty())
    r.bad(field + ".file", fmt::format("names {}, which {} (the program is missing)", visible_text(out.file), why));
  return out;
}

CompiledPart part(const Reader& r, const json& j, const std::string& field, const std::string& backward_key,
                  const std::string& dir) {
  CompiledPart p;
  p.args = r.names(j, "args", field + ".args");
  p.grads = r.names(j, "grads", field + ".grads");
  p.forward = program(r, j, "forward", field + ".forward", dir);
  p.backward = program(r, j, backward_key, field + "." + backward_key, dir);
  return p;
}

}  // namespace

namespace {

// The manifest's JSON, read bounded: a missing, unreadable or malformed file is one paragraph.
json manifest_json(const std::string& dir, const std::string& path) {
  const std::string why = not_regular_file(path);
  if (!why.empty())
    throw Error(fmt::format("model.path: '{}' is not a compiled package: its manifest.json {}", visible_text(dir), why),
                kReexport);
  std::optional<std::string> text = read_input_file(path);
  if (!text) throw Error(fmt::format("model.path: cannot read '{}'", visible_text(path)), kReexport);
  try {
    return parse_json_limited(*text, path);
  } catch (const json::exception& e) {
    throw Error(fmt::format("model.path: the compiled package manifest '{}' is not JSON ({})", visible_text(path),
                            visible_text(e.what())),
                kReexport);
  }
}

// The loss inputs and the hidden state between units; their names join `known`.
void read_inputs(const Reader& r, const json& doc, CompiledManifest& m, std::set<std::string>& known) {
  const json& inputs = r.at(doc, "inputs", "inputs");
  if (!inputs.is_array() || inputs.empty()) r.bad("inputs", "is not a non-empty list");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string f = fmt::format("inputs[{}]", i);
    CompiledInput in{r.str(inputs[i], "name", f + ".name"), r.dtype(inputs[i], "dtype", f + ".dtype"),
                     r.shape(inputs[i], "shape", f + ".shape")};
    if (!known.insert(in.name).second) r.bad(f + ".name", "repeats an earlier name");
    m.inputs.push_back(std::move(in));
  }
  const json& hidden = r.at(doc, "hidden", "hidden");
  m.hidden_shape = r.shape(hidden, "shape", "hidden.shape");
  m.hidden_dtype = r.dtype(hidden, "dtype", "hidden.dtype");
  known.insert("hidden");
}

// The tensor table: each name (tied ones too) once, never an input's. Returns the names of the
// trainable parameters.
std::set<std::string> read_tensor_table(const Reader& r, const json& doc, CompiledManifest& m,
                                        std::set<std::string>& tensor_names, const std::set<std::string>& inputs) {
  std::set<std::string> trainable;
  const json& tensors = r.at(doc, "tensors", "tensors");
  if (!tensors.is_array() || tensors.empty()) r.bad("tensors", "is not a non-empty list");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string f = fmt::format("tensors[{}]", i);
    const json& t = tensors[i];
    CompiledTensor ct;
    ct.name = r.str(t, "name", f + ".name");
    const std::string kind = r.str(t, "kind", f + ".kind");
    if (kind != "parameter" && kind != "buffer") r.bad(f + ".kind", "is neither 'parameter' nor 'buffer'");
    ct.parameter = kind == "parameter";
    ct.shape = r.shape(t, "shape", f + ".shape");
    ct.dtype = r.dtype(t, "dtype", f + ".dtype");
    ct.requires_grad = r.boolean(t, "requires_grad", f + ".requires_grad");
    ct.persistent = r.boolean(t, "persistent", f + ".persistent");
    ct.tied = r.names(t, "tied", f + ".tied");
    std::vector<std::string> all = ct.tied;
    all.push_back(ct.name);
    for (const std::string& n : all)
      if (!tensor_names.insert(n).second || inputs.count(n))
        r.bad(f, fmt::format("names '{}' twice (in the table or as an input)", visible_text(n)));
    if (ct.parameter && ct.requires_grad) trainable.insert(ct.name);
    m.tensors.push_back(std::move(ct));
  }
  return trainable;
}

// One unit: its programs (part()), name, block type and the activations its forward saves.
CompiledPart read_unit(const Reader& r, const json& unit, const std::string& f, const std::string& dir) {
  CompiledPart u = part(r, unit, f, "backward", dir);
  u.name = r.str(unit, "name", f + ".name");
  u.type = r.str(unit, "type", f + ".type");
  const json& saved = r.at(unit, "saved", f + ".saved");
  if (!saved.is_array() || saved.size() > 4096) r.bad(f + ".saved", "is not a list of at most 4096 activations");
  for (size_t j = 0; j < saved.size(); ++j) {
    const std::string g = fmt::format("{}.saved[{}]", f, j);
    u.saved.push_back({r.dtype(saved[j], "dtype", g + ".dtype"), r.shape(saved[j], "shape", g + ".shape")});
  }
  return u;
}

// Every trainable parameter gets its gradient from some program: one left out would silently
// never train.
void check_every_gradient(const Reader& r, const CompiledManifest& m, const std::set<std::string>& trainable) {
  std::set<std::string> with_grad;
  for (const CompiledPart* p : {&m.prologue, &m.epilogue}) with_grad.insert(p->grads.begin(), p->grads.end());
  for (const CompiledPart& u : m.units) with_grad.insert(u.grads.begin(), u.grads.end());
  for (const std::string& t : trainable)
    if (!with_grad.count(t))
      r.bad("tensors",
            fmt::format("has the trainable parameter '{}', which no program returns a gradient for", visible_text(t)));
}

}  // namespace

CompiledManifest read_compiled_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  const json doc = manifest_json(dir, path);
  const Reader r(path);
  CompiledManifest m;
  m.dir = dir;
  if (r.str(doc, "format", "format") != "mtrain-compiled") r.bad("format", "is not 'mtrain-compiled'");
  const json& v = r.at(doc, "format_version", "format_version");
  if (!v.is_number_integer() || v.get<int>() != kFormatVersion)
    r.bad("format_version", fmt::format("is {}, this mtrain reads version {}", visible_text(v.dump()), kFormatVersion));
  m.format_version = kFormatVersion;
  m.torch_version = r.str(doc, "torch", "torch");
  m.device = r.str(doc, "device", "device");

  std::set<std::string> known;  // every name a program may take
  read_inputs(r, doc, m, known);
  std::set<std::string> tensor_names;
  const std::set<std::string> trainable = read_tensor_table(r, doc, m, tensor_names, known);
  known.insert(tensor_names.begin(), tensor_names.end());
  auto check_names = [&](const CompiledPart& p, const std::string& f) {
    for (const std::string& a : p.args)
      if (!known.count(a)) r.bad(f + ".args", fmt::format("names '{}', which is no tensor or input", visible_text(a)));
    for (const std::string& g : p.grads)
      if (!tensor_names.count(g))
        r.bad(f + ".grads", fmt::format("names '{}', which is not in the tensor table", visible_text(g)));
  };
  m.prologue = part(r, r.at(doc, "prologue", "prologue"), "prologue", "backward", dir);
  m.prologue.name = "prologue";
  check_names(m.prologue, "prologue");
  const json& units = r.at(doc, "units", "units");
  if (!units.is_array() || units.empty()) r.bad("units", "is not a non-empty list");
  for (size_t i = 0; i < units.size(); ++i) {
    m.units.push_back(read_unit(r, units[i], fmt::format("units[{}]", i), dir));
    check_names(m.units.back(), fmt::format("units[{}]", i));
  }
  m.epilogue = part(r, r.at(doc, "epilogue", "epilogue"), "epilogue", "step", dir);
  m.epilogue.name = "epilogue";
  check_names(m.epilogue, "epilogue");
  check_every_gradient(r, m, trainable);
  return m;
}

namespace {
// "2.15.0+cu132" -> "2.15.0": the local suffix names the wheel's CUDA build, not the release.
std::string release(const std::string& v) { return v.substr(0, v.find('+')); }
}  // namespace

void check_compiled_target(const CompiledManifest& m, const std::string& worker_torch_version,
                           const std::string& worker_device) {
  if (release(m.torch_version) != release(worker_torch_version))
    throw Error(fmt::format("model.path: the compiled package '{}' was compiled by PyTorch {}, the worker runs "
                            "LibTorch {}; a compiled program only runs under the release that compiled it",
                            visible_text(m.dir), visible_text(m.torch_version), visible_text(worker_torch_version)),
                "Export the model again with the PyTorch that matches the worker's LibTorch");
  auto type = [](const std::string& d) { return d.substr(0, d.find(':')); };
  if (type(m.device) != type(worker_device))
    throw Error(fmt::format("model.path: the compiled package '{}' was compiled for device '{}', the job trains on "
                            "'{}'",
                            visible_text(m.dir), visible_text(m.device), visible_text(worker_device)),
                fmt::format("Export it again with --device {}", type(worker_device)));
}

}  // namespace mtrain
