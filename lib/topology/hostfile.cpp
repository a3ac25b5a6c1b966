#include "lib/topology/hostfile.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <sys/stat.h>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::topology {

namespace {

constexpr int kMaxSlots = 1024;  // far above any real node; catches "slots=40000" typos
const char* const kFormatHint =
    "Write one host per line as 'HOST slots=N' or 'HOST gpus=0,2,3' (optionally USER@HOST).";

struct Field {
  std::string text;
  size_t column;  // 1-based
};

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':';
}
bool user_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

class LineParser {
 public:
  LineParser(const std::string& path, size_t line) : path_(path), line_(line) {}

  Error error(size_t column, const std::string& problem, const std::string& hint = kFormatHint) const {
    Error e(problem, hint);
    e.at(fmt::format("{}:{}:{}", path_, line_, column));
    return e;
  }

  // Fields of one line with their columns; the comment part is already removed.
  static std::vector<Field> fields(const std::string& line) {
    std::vector<Field> out;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      if (i > start) out.push_back({line.substr(start, i - start), start + 1});
    }
    return out;
  }

  HostSlots host(const Field& f) const {
    HostSlots h;
    std::string name = f.text;
    size_t col = f.column;
    size_t at = name.find('@');
    if (at != std::string::npos) {
      h.user = name.substr(0, at);
      if (h.user.empty()) throw error(col, "missing user name before '@'");
      for (size_t k = 0; k < h.user.size(); ++k)
        if (!user_char(h.user[k]))
          throw error(col + k, fmt::format("character '{}' is not allowed in a user name", h.user[k]));
      name = name.substr(at + 1);
      col += at + 1;
    }
    if (name.empty()) throw error(col, "missing host name after '@'");
    if (name.find('=') != std::string::npos)
      throw error(col, fmt::format("'{}' is a setting, but the line must start with a host name", f.text));
    for (size_t k = 0; k < name.size(); ++k)
      if (!host_char(name[k]))
        throw error(col + k, fmt::format("character '{}' is not allowed in a host name", name[k]),
                    "Host names use letters, digits, '.', '-', '_' (or an IP address).");
    // ':' belongs to IPv6 addresses (two or more). One colon is a typo or --include's HOST:SLOTS
    // form ("localhost: slots=2"), which must not reach name resolution as host "localhost:".
    if (std::count(name.begin(), name.end(), ':') == 1)
      throw error(col + name.find(':'), fmt::format("':' after host name '{}'", name.substr(0, name.find(':'))),
                  "Write 'HOST slots=N' without a colon (HOST:SLOTS is the --include/--exclude syntax).");
    h.host = name;
    return h;
  }

  std::vector<int> slots_value(size_t vcol, const std::string& value) const {
    if (value.empty()) throw error(vcol, "slots= needs a number", "Write e.g. slots=4.");
    auto n = str::parse_uint(value);
    if (!n) throw error(vcol, fmt::format("slots value '{}' is not a whole number", value), "Write e.g. slots=4.");
    if (*n == 0)
      throw error(vcol, "slots=0 gives this host nothing to run", "Remove the line or comment it out with '#'.");
    if (*n > kMaxSlots) throw error(vcol, fmt::format("slots={} is more than {}", value, kMaxSlots));
    std::vector<int> slots(static_cast<size_t>(*n));
    for (size_t k = 0; k < slots.size(); ++k) slots[k] = static_cast<int>(k);
    return slots;
  }

  std::vector<int> gpus_value(size_t vcol, const std::string& value) const {
    if (value.empty()) throw error(vcol, "gpus= needs a list of GPU indices", "Write e.g. gpus=0,2,3.");
    std::vector<int> ids;
    size_t col = vcol;
    for (const auto& item : str::split(value, ',')) {
      auto n = str::parse_uint(item);
      if (!n)
        throw error(col, item.empty() ? std::string("empty GPU index") : fmt::format("'{}' is not a GPU index", item),
                    "Write GPU indices separated by commas, e.g. gpus=0,2,3.");
      if (*n >= kMaxSlots) throw error(col, fmt::format("GPU index {} is out of range", item));
      int id = static_cast<int>(*n);
      if (std::find(ids.begin(), ids.end(), id) != ids.end())
        throw error(col, fmt::format("GPU {} is listed twice", id), "List each GPU index once.");
      ids.push_back(id);
      col += item.size() + 1;
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  HostSlots parse(const std::vector<Field>& fs) const {
    HostSlots h = host(fs[0]);
    bool have = false;
    std::string seen_key;
    for (size_t k = 1; k < fs.size(); ++k) {
      const Field& f = fs[k];
      size_t eq = f.text.find('=');
      if (eq == std::string::npos)
        throw error(f.column, fmt::format("'{}' is not KEY=VALUE", f.text),
                    "Settings after the host are slots=N or gpus=LIST; one host per line.");
      std::string key = f.text.substr(0, eq);
      std::string value = f.text.substr(eq + 1);
      size_t vcol = f.column + eq + 1;
      if (key != "slots" && key != "gpus") {
        std::string hint = "Known keys: slots, gpus.";
        if (auto near = str::closest(key, {"slots", "gpus"})) hint = fmt::format("Did you mean '{}'? {}", *near, hint);
        throw error(f.column, fmt::format("unknown key '{}'", key), hint);
      }
      if (have)
        throw error(f.column, seen_key == key ? fmt::format("{}= is given twice", key)
                                              : std::string("give either slots= or gpus=, not both"),
                    "slots=N means GPUs 0..N-1; gpus=0,2 names them.");
      have = true;
      seen_key = key;
      h.slots = key == "slots" ? slots_value(vcol, value) : gpus_value(vcol, value);
    }
    if (!have) {
      const Field& last = fs.back();
      throw error(last.column + last.text.size(), fmt::format("host '{}' has no slots=N", h.host),
                  fmt::format("Write '{} slots=N' with N its number of GPUs (or processes).", fs[0].text));
    }
    return h;
  }

 private:
  const std::string& path_;
  size_t line_;
};

}  // namespace

Inventory parse_hostfile(const std::string& text, const std::string& path) {
  Inventory inv;
  std::map<std::string, size_t> first_line;
  size_t line_no = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    auto fs = LineParser::fields(line);
    if (fs.empty()) continue;
    LineParser p(path, line_no);
    HostSlots h = p.parse(fs);
    auto [it, fresh] = first_line.emplace(h.host, line_no);
    if (!fresh)
      throw p.error(fs[0].column, fmt::format("host '{}' is listed again (first on line {})", h.host, it->second),
                    "List each host once; to use some of its GPUs write gpus=0,2 or use --include.");
    inv.push_back(std::move(h));
  }
  if (inv.empty())
    throw Error(fmt::format("{}: the hostfile lists no hosts", path),
                std::string(kFormatHint) + " Lines starting with '#' are comments.");
  return inv;
}

Inventory load_hostfile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(fmt::format("{}: is a directory, not a hostfile", path), "Give --hostfile the path of a file.");
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    int err = errno;
    throw Error(fmt::format("{}: cannot read the hostfile: {}", path, std::strerror(err)),
                "Check the path given to --hostfile (it is read on the launching machine).");
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(fmt::format("{}: cannot read the hostfile", path), "Check the file's permissions.");
  return parse_hostfile(ss.str(), path);
}

}  // namespace mtrain::topology
