#include "cgroup-model/cgroup_path.h"

#include "base/quote.h"

namespace vri {

Result<void> validateCgroupComponent(std::string_view component) {
  const auto refuse = [&](const char* why) {
    return Error::invalidArgument("invalid cgroup name " + quoteForMessage(component) + ": " + why);
  };
  if (component.empty()) return refuse("empty");
  if (component.size() > 255) return refuse("longer than 255 bytes");
  if (component == "." || component == "..") return refuse("a relative path element");
  for (char c : component) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/') return refuse("contains '/'");
    if (byte < 0x20 || byte == 0x7f) return refuse("contains a control character");
  }
  return {};
}

Result<CgroupPath> CgroupPath::of(std::vector<std::string> components) {
  for (const std::string& component : components) VRI_TRY(validateCgroupComponent(component));
  return CgroupPath(std::move(components));
}

Result<CgroupPath> CgroupPath::parse(std::string_view text) {
  while (text.starts_with('/')) text.remove_prefix(1);
  while (text.ends_with('/')) text.remove_suffix(1);
  std::vector<std::string> components;
  if (text.empty()) return CgroupPath();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t slash = text.find('/', start);
    const size_t end = slash == std::string_view::npos ? text.size() : slash;
    components.emplace_back(text.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  auto path = of(std::move(components));
  if (!path.ok()) return std::move(path).context("cgroup path " + quoteForMessage(text));
  return path;
}

Result<CgroupPath> CgroupPath::child(std::string_view component) const {
  VRI_TRY(validateCgroupComponent(component));
  std::vector<std::string> components = components_;
  components.emplace_back(component);
  return CgroupPath(std::move(components));
}

CgroupPath CgroupPath::parent() const {
  if (components_.empty()) return {};
  return CgroupPath(std::vector<std::string>(components_.begin(), components_.end() - 1));
}

bool CgroupPath::isWithin(const CgroupPath& ancestor) const {
  if (ancestor.components_.size() > components_.size()) return false;
  for (size_t i = 0; i < ancestor.components_.size(); ++i) {
    if (components_[i] != ancestor.components_[i]) return false;
  }
  return true;
}

std::string CgroupPath::str() const {
  std::string text;
  for (const std::string& component : components_) {
    if (!text.empty()) text += '/';
    text += component;
  }
  return text;
}

}  // namespace vri
