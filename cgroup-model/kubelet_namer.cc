#include "cgroup-model/kubelet_namer.h"

#include <algorithm>

#include "base/enum_text.h"
#include "base/quote.h"

namespace vri {

namespace {

bool isAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

std::optional<std::string> validUid(std::string_view uid) {
  if (!validatePodUid(uid).ok()) return std::nullopt;
  return std::string(uid);
}
std::optional<std::string> validId(std::string_view id) {
  if (!validateContainerId(id).ok()) return std::nullopt;
  return std::string(id);
}

// Appends a component that this file built from validated parts.
CgroupPath join(const CgroupPath& base, const std::string& component) {
  return std::move(base.child(component)).value();
}

class CgroupfsNamer : public KubeletNamer {
 public:
  explicit CgroupfsNamer(CgroupPath parent) : kubepods_(join(parent, "kubepods")) {}

  CgroupPath kubepods() const override { return kubepods_; }
  CgroupPath qos(QosClass qos) const override {
    return qos == QosClass::kGuaranteed ? kubepods_ : join(kubepods_, std::string(qosClassName(qos)));
  }
  Result<CgroupPath> pod(QosClass qos_class, std::string_view uid) const override {
    VRI_TRY(validatePodUid(uid));
    return join(qos(qos_class), "pod" + std::string(uid));
  }
  Result<CgroupPath> container(QosClass qos_class, std::string_view uid, std::string_view id) const override {
    VRI_TRY(validateContainerId(id));
    VRI_ASSIGN_OR_RETURN(CgroupPath pod_path, pod(qos_class, uid));
    return join(pod_path, std::string(id));
  }
  std::optional<std::string> podUidOf(QosClass, std::string_view name) const override {
    if (!name.starts_with("pod")) return std::nullopt;
    return validUid(name.substr(3));
  }
  std::optional<std::string> containerIdOf(std::string_view name) const override { return validId(name); }
  bool isQosParent(std::string_view name) const override { return name == "burstable" || name == "besteffort"; }

 protected:
  bool leafNamesPod() const override { return false; }

 private:
  CgroupPath kubepods_;
};

// systemd slices nest by name: "a-b.slice" lives in "a.slice". kubelet turns
// '-' inside a name part into '_' so that it does not read as nesting.
class SystemdNamer : public KubeletNamer {
 public:
  SystemdNamer(CgroupPath parent, std::string runtimePrefix)
      : parent_(std::move(parent)), runtimePrefix_(std::move(runtimePrefix)) {}

  CgroupPath kubepods() const override { return join(parent_, "kubepods.slice"); }
  CgroupPath qos(QosClass qos) const override {
    if (qos == QosClass::kGuaranteed) return kubepods();
    return join(kubepods(), "kubepods-" + std::string(qosClassName(qos)) + ".slice");
  }
  Result<CgroupPath> pod(QosClass qos_class, std::string_view uid) const override {
    VRI_TRY(validatePodUid(uid));
    // kubelet writes '-' as '_' here, so "a_b" and "a-b" would share one slice.
    if (uid.find('_') != std::string_view::npos)
      return Error::invalidArgument("pod UID " + quoteForMessage(uid) +
                                    " has '_', which the systemd cgroup driver's slice names cannot tell from '-'");
    std::string escaped(uid);
    std::replace(escaped.begin(), escaped.end(), '-', '_');
    const std::string prefix =
        qos_class == QosClass::kGuaranteed ? "kubepods" : "kubepods-" + std::string(qosClassName(qos_class));
    return join(qos(qos_class), prefix + "-pod" + escaped + ".slice");
  }
  Result<CgroupPath> container(QosClass qos_class, std::string_view uid, std::string_view id) const override {
    VRI_TRY(validateContainerId(id));
    VRI_ASSIGN_OR_RETURN(CgroupPath pod_path, pod(qos_class, uid));
    return join(pod_path, runtimePrefix_ + "-" + std::string(id) + ".scope");
  }
  std::optional<std::string> podUidOf(QosClass qos_class, std::string_view name) const override {
    const std::string prefix = qos_class == QosClass::kGuaranteed
                                   ? "kubepods-pod"
                                   : "kubepods-" + std::string(qosClassName(qos_class)) + "-pod";
    if (!name.starts_with(prefix) || !name.ends_with(".slice")) return std::nullopt;
    std::string uid(name.substr(prefix.size(), name.size() - prefix.size() - 6));
    std::replace(uid.begin(), uid.end(), '_', '-');  // kubelet's escaping, undone
    return validUid(uid);
  }
  std::optional<std::string> containerIdOf(std::string_view name) const override {
    if (!name.ends_with(".scope")) return std::nullopt;
    const std::string_view unit = name.substr(0, name.size() - 6);
    // This node's runtime's prefix first: an id may hold '-' itself ("cri-containerd-a-b.scope" is "a-b").
    if (const std::string own = runtimePrefix_ + "-"; unit.starts_with(own)) return validId(unit.substr(own.size()));
    const size_t dash = unit.rfind('-');
    if (dash == std::string_view::npos) return std::nullopt;
    return validId(unit.substr(dash + 1));
  }
  bool isQosParent(std::string_view name) const override {
    return name == "kubepods-burstable.slice" || name == "kubepods-besteffort.slice";
  }

 protected:
  bool leafNamesPod() const override { return true; }

 private:
  CgroupPath parent_;
  std::string runtimePrefix_;
};

}  // namespace

std::string_view qosClassName(QosClass qos) {
  switch (qos) {
    case QosClass::kGuaranteed: return "guaranteed";
    case QosClass::kBurstable: return "burstable";
    case QosClass::kBestEffort: return "besteffort";
  }
  return "unknown";
}

constexpr EnumText<KubeletDriver, 2> kKubeletDriverText{
    "kubelet cgroup driver", {{{KubeletDriver::kCgroupfs, "cgroupfs"}, {KubeletDriver::kSystemd, "systemd"}}}};

Result<KubeletDriver> parseKubeletDriver(std::string_view text) { return kKubeletDriverText.parse(text); }
std::string_view kubeletDriverName(KubeletDriver driver) { return kKubeletDriverText.name(driver); }

Result<void> validatePodUid(std::string_view uid) {
  const bool ok = !uid.empty() && uid.size() <= 128 &&
                  std::all_of(uid.begin(), uid.end(), [](char c) { return isAlnum(c) || c == '-' || c == '_'; });
  if (!ok) return Error::invalidArgument("invalid pod UID " + quoteForMessage(uid) + " (1-128 of A-Z a-z 0-9 - _)");
  return {};
}

Result<void> validateContainerId(std::string_view id) {
  const bool ok =
      !id.empty() && id.size() <= 128 && isAlnum(id.front()) &&
      std::all_of(id.begin(), id.end(), [](char c) { return isAlnum(c) || c == '-' || c == '_' || c == '.'; });
  if (!ok)
    return Error::invalidArgument("invalid container id " + quoteForMessage(id) + " (1-128 of A-Z a-z 0-9 . - _)");
  return {};
}

Result<void> validateContainerName(std::string_view name) {
  if (name.empty()) return Error::invalidArgument("container name: must not be empty");
  if (name.size() > kMaxContainerNameBytes)
    return Error::invalidArgument("container name: longer than " + std::to_string(kMaxContainerNameBytes) +
                                  " bytes: " + quoteForMessage(name));
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    // C0 controls, DEL, and the C1 controls as UTF-8 encodes them (U+0080..U+009F: CSI among them).
    const bool c1 = c == 0xC2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) < 0xA0 &&
                    static_cast<unsigned char>(name[i + 1]) >= 0x80;
    if (c < 0x20 || c == 0x7F || c1)
      return Error::invalidArgument("container name: control character in " + quoteForMessage(name));
  }
  return {};
}

std::unique_ptr<KubeletNamer> makeKubeletNamer(KubeletDriver driver, CgroupPath parent, std::string runtimePrefix) {
  if (driver == KubeletDriver::kSystemd)
    return std::make_unique<SystemdNamer>(std::move(parent), std::move(runtimePrefix));
  return std::make_unique<CgroupfsNamer>(std::move(parent));
}

Result<KubeletPod> KubeletNamer::podOfCgroupParent(std::string_view parent) const {
  std::string_view path = parent;
  while (path.starts_with("/")) path.remove_prefix(1);
  while (path.ends_with("/")) path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  const std::string_view dir = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
  const std::string_view leaf = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (QosClass candidate : {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort}) {
    const std::optional<std::string> uid = podUidOf(candidate, leaf);
    if (!uid) continue;
    const bool placed = dir.empty() ? leafNamesPod() : dir == qos(candidate).str();
    if (placed) return KubeletPod{candidate, *uid};
  }
  return Error::invalidArgument("cgroup_parent: " + quoteForMessage(parent) + " is not where this node puts pods");
}

}  // namespace vri
