// The Python that `mtrain launch -- python3 train.py` ranks will run: `python3` looked up on
// this PATH (ranks inherit the launcher's environment, so the same lookup), its version, and
// the PyTorch it imports (version, CUDA build, whether a GPU is usable). Asked from the
// interpreter itself; importing torch takes a second or two.
#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"

namespace mtrain::envreport {

const char* const kPythonProbe =
    "import json, sys\n"
    "r = {'executable': sys.executable, 'version': sys.version.split()[0]}\n"
    "try:\n"
    "    import torch\n"
    "    r['torch'] = torch.__version__\n"
    "    r['torch_cuda'] = torch.version.cuda\n"
    "    r['cuda_available'] = bool(torch.cuda.is_available())\n"
    "    r['distributed'] = bool(torch.distributed.is_available())\n"
    "except Exception as e:\n"
    "    r['torch'] = None\n"
    "    r['torch_error'] = type(e).__name__ + ': ' + str(e)\n"
    "print(json.dumps(r))\n";

json probe_python(const SystemProbe& probe, int timeout_ms) {
  json p = {{"command", "python3"}, {"path", nullptr}, {"found", false}};
  const std::string path = probe.which("python3");
  if (path.empty()) {
    p["error"] = "python3 is not on PATH: `mtrain launch -- python3 …` ranks would not start";
    return p;
  }
  p["path"] = path;
  auto r = probe.run({path, "-c", kPythonProbe}, timeout_ms);
  try {
    json info = json::parse(r.out);
    if (r.rc != 0 || !info.is_object()) throw std::runtime_error("not an object");
    p["found"] = true;
    for (auto& [k, v] : info.items()) p[k] = v;
  } catch (const std::exception&) {
    const std::string why = str::trim(r.err.empty() ? r.out : r.err);
    p["error"] = "`" + path + " -c …` failed (exit " + std::to_string(r.rc) + ")" +
                 (why.empty() ? std::string() : ": " + why.substr(0, 300));
  }
  return p;
}

}  // namespace mtrain::envreport
