// The object built from what vrid says: zones, their costs, each resource's three figures, the
// attributes the scheduler plugin reads, and which pods the fingerprint covers.
#include "topology-export/topology_object.h"

#include <gtest/gtest.h>

#include "topology-export/pods_fingerprint.h"

namespace vri::topology_export {
namespace {

using nlohmann::json;

// Two NUMA nodes of 4 CPUs, CPU 0 reserved; a VM holds 2 CPUs of node 0; node 1 has 1 GiB pages.
v1::Node twoNodes() {
  v1::Node node;
  node.set_reserved_cpus("0");
  (*node.mutable_options())["topology_manager_policy"] = "single-numa-node";
  (*node.mutable_options())["topology_manager_scope"] = "pod";
  for (int id : {0, 1}) {
    v1::NumaNodeInfo& numa = *node.add_numa();
    numa.set_id(id);
    numa.set_cpus(id == 0 ? "0-3" : "4-7");
    numa.set_exclusive_cpus_available(id == 0 ? 1 : 4);
    (*numa.mutable_distances())[0] = id == 0 ? 10 : 21;
    (*numa.mutable_distances())[1] = id == 0 ? 21 : 10;
    v1::MemoryBooks& memory = *node.mutable_capacity()->add_memory();
    memory.set_numa_node(id);
    memory.mutable_books()->set_capacity(8ull << 30);
    memory.mutable_books()->set_allocatable((8ull << 30) - (id == 0 ? 1ull << 30 : 0));
    memory.mutable_books()->set_free(id == 0 ? 3ull << 30 : 8ull << 30);
    v1::MemoryBooks& huge = *node.mutable_capacity()->add_memory();
    huge.set_numa_node(id);
    huge.set_page_size(1ull << 30);
    huge.mutable_books()->set_capacity(id == 1 ? 2ull << 30 : 0);
    huge.mutable_books()->set_allocatable(id == 1 ? 2ull << 30 : 0);
    huge.mutable_books()->set_free(id == 1 ? 1ull << 30 : 0);
  }
  v1::MemoryBooks& whole = *node.mutable_capacity()->add_memory();  // the node's: in no zone
  whole.set_numa_node(-1);
  whole.mutable_books()->set_capacity(16ull << 30);
  return node;
}

v1::Tenant pod(const std::string& name, v1::Qos qos) {
  v1::Tenant tenant;
  tenant.mutable_pod()->set_name(name);
  tenant.mutable_pod()->set_qos(qos);
  return tenant;
}

json resourceNamed(const json& zone, const std::string& name) {
  for (const json& r : zone["resources"])
    if (r["name"] == name) return r;
  return nullptr;
}

TEST(TopologyObjectTest, OneZonePerNumaNodeWithWhatVridWouldGrant) {
  const json object = topologyObject("node-a", twoNodes(), {});
  EXPECT_EQ(object["apiVersion"], "topology.node.k8s.io/v1alpha2");
  EXPECT_EQ(object["kind"], "NodeResourceTopology");
  EXPECT_EQ(object["metadata"]["name"], "node-a");
  ASSERT_EQ(object["zones"].size(), 2u);
  const json& zero = object["zones"][0];
  EXPECT_EQ(zero["name"], "node-0");
  EXPECT_EQ(zero["type"], "Node");
  EXPECT_EQ(zero["costs"], json::parse(R"([{"name":"node-0","value":10},{"name":"node-1","value":21}])"));
  EXPECT_EQ(resourceNamed(zero, "cpu"),
            json::parse(R"({"name":"cpu","capacity":"4","allocatable":"3","available":"1"})"));
  EXPECT_EQ(resourceNamed(zero, "memory")["allocatable"], std::to_string(7ull << 30));
  EXPECT_EQ(resourceNamed(zero, "memory")["available"], std::to_string(3ull << 30));
  EXPECT_TRUE(resourceNamed(zero, "hugepages-1Gi").is_null()) << "node 0 has no 1 GiB pages";
  const json& one = object["zones"][1];
  EXPECT_EQ(resourceNamed(one, "cpu")["allocatable"], "4");
  EXPECT_EQ(resourceNamed(one, "hugepages-1Gi"),
            json::parse(R"({"name":"hugepages-1Gi","capacity":"2147483648","allocatable":"2147483648",)"
                        R"("available":"1073741824"})"));
}

TEST(TopologyObjectTest, TheAttributesNameThePolicyScopeAndFingerprint) {
  v1::TenantList pods;
  *pods.add_tenants() = pod("default/db", v1::GUARANTEED);
  *pods.add_tenants() = pod("default/web", v1::BURSTABLE);
  *pods.add_tenants() = pod("default/batch", v1::BEST_EFFORT);
  *pods.add_tenants() = pod("kube-system/etcd", v1::GUARANTEED);
  v1::Tenant vm;
  vm.mutable_vm()->set_name("web01");
  *pods.add_tenants() = vm;
  const json object = topologyObject("node-a", twoNodes(), pods);
  std::map<std::string, std::string> attributes;
  for (const json& a : object["attributes"]) attributes[a["name"]] = a["value"];
  EXPECT_EQ(attributes["topologyManagerPolicy"], "single-numa-node");
  EXPECT_EQ(attributes["topologyManagerScope"], "pod");
  EXPECT_EQ(attributes["nodeTopologyPodsFingerprintMethod"], "with-exclusive-resources");
  // Guaranteed pods only, whatever else vrid holds.
  EXPECT_EQ(attributes["nodeTopologyPodsFingerprint"], podsFingerprint({{"default", "db"}, {"kube-system", "etcd"}}));
}

TEST(TopologyObjectTest, HugepageSizesAsKubernetesNamesThem) {
  EXPECT_EQ(hugepageSizeName(2ull << 20), "2Mi");
  EXPECT_EQ(hugepageSizeName(1ull << 30), "1Gi");
  EXPECT_EQ(hugepageSizeName(64ull << 10), "64Ki");
}

}  // namespace
}  // namespace vri::topology_export
