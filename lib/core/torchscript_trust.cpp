#include "lib/core/torchscript_trust.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain {

void check_torchscript_trust(const std::string& path, const std::vector<TrustFinding>& findings, bool trusted) {
  if (trusted || findings.empty()) return;
  std::vector<std::string> rest;
  for (size_t i = 1; i < findings.size() && i < 4; ++i)
    rest.push_back(visible_text(findings[i].what) + " at " + visible_text(findings[i].where));
  throw Error(fmt::format("the TorchScript model '{}' is a program that reaches outside the model: it {} (at {}){}{}; "
                          "nothing of it was run",
                          path, visible_text(findings.front().what), visible_text(findings.front().where),
                          rest.empty() ? "" : "; also " + str::join(rest, "; "),
                          findings.size() > 4 ? fmt::format(" ({} findings in all)", findings.size()) : ""),
              "use a model file from a source you trust; if you wrote it or trust its author, set "
              "model.trust_code: true (--set model.trust_code=true) to run it as it is (docs/your-model.md, "
              "\"A TorchScript file is a program\"; the allowlist: docs/reliability.md)")
      .at("model.trust_code");
}

}  // namespace mtrain
