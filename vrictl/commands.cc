#include "vrictl/commands.h"
#include "vrictl/printable.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

#include "base/version.h"
#include "vrictl/completion.h"
#include "vrictl/config_command.h"
#include "vrictl/handback_command.h"
#include "vrictl/map_view.h"
#include "vrictl/node_views.h"
#include "vrictl/pin_commands.h"
#include "vrictl/report_views.h"
#include "vrictl/top_command.h"
#include "vrictl/tree_view.h"

namespace vri::ctl {

namespace {

constexpr char kDescription[] =
    "vrictl: administers vrid, VRI's node resource manager, the way virsh administers libvirt.\n"
    "Without a command it starts a shell with history and completion.\n"
    "Exit codes: 0 done, 1 vrid refused or failed, 2 the command line is wrong.";

// What one parsed line chose.
struct Choices {
  bool json = false;
  bool pods = false, vms = false, all = false;
  std::string key;
  bool follow = false;
  unsigned recent = 20;
  bool dryRun = false;
  bool noCompare = false;
  HandBackChoices handBack;
  std::string configAction, configFile;  // config
  PinChoices pins;                       // vcpupin, emulatorpin, numatune
  TopChoices top;
};

using Run = std::function<int(CommandContext&, const Choices&)>;

int failed(CommandContext& c, const Error& error) { return reportFailure(c, error); }

// `text` or, with --json, `message` as JSON.
int show(CommandContext& c, const Choices& o, const google::protobuf::Message& message, const std::string& text) {
  c.out << (o.json ? toJson(message) + "\n" : text);
  return kExitOk;
}

int nodeCommand(CommandContext& c, const std::function<int(const v1::Node&)>& then) {
  auto node = c.vrid().node();
  if (!node.ok()) return failed(c, node.error());
  return then(*node);
}

// The fields of the node that each view shows, for its --json.
const std::vector<std::string> kTopologyFields = {
    "topology_source", "online_cpus", "online_cpu_list", "packages", "cores", "numa_nodes", "numa", "cpus"};
const std::vector<std::string> kPoolFields = {"reserved_cpus",       "shared_cpus",    "exclusive_cpus",
                                              "shared_demand_milli", "shared_tenants", "strict_cpu_reservation",
                                              "cpuset_partitions",   "shared_cpuset"};

// A view of the node: `text`, or with --json only the view's `fields`.
int showNode(CommandContext& c, const Choices& o, const v1::Node& n, const std::vector<std::string>& fields,
             const std::string& text) {
  c.out << (o.json ? fieldsAsJson(n, fields) + "\n" : text);
  return kExitOk;
}

struct Parser {
  CLI::App app{kDescription, "vrictl"};
  Choices choices;
  ProgramOptions options;
  std::vector<std::pair<CLI::App*, Run>> commands;

  explicit Parser(bool program) {
    app.require_subcommand(program ? 0 : 1, 1);
    app.fallthrough();
    app.add_flag("--json", choices.json, "print the API's message as JSON");
    if (program) {
      app.add_option("--socket", options.socket, "vrid's socket (the read-only one by default)")
          ->capture_default_str()
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      app.add_option("--color,--colour", options.colour, "colour in pictures: auto, always or never")
          ->check(CLI::IsMember({"auto", "always", "never"}))
          ->capture_default_str();
    }
    add("nodeinfo", "the node: topology, cgroups, policies, vrid's and its clients' versions",
        [](CommandContext& c, const Choices& o) {
          return nodeCommand(c, [&](const v1::Node& n) { return show(c, o, n, formatNodeInfo(printable(n))); });
        });
    add("topology", "packages, NUMA nodes, cores, memory and hugepages", [](CommandContext& c, const Choices& o) {
      return nodeCommand(
          c, [&](const v1::Node& n) { return showNode(c, o, n, kTopologyFields, formatTopology(printable(n))); });
    });
    add("capacity", "capacity, reserved, allocatable, admitted by pods and by VMs, and free",
        [](CommandContext& c, const Choices& o) {
          return nodeCommand(c,
                             [&](const v1::Node& n) { return show(c, o, n.capacity(), formatCapacity(printable(n))); });
        });
    add("pool", "reserved, shared and exclusive CPUs", [](CommandContext& c, const Choices& o) {
      return nodeCommand(c,
                         [&](const v1::Node& n) { return showNode(c, o, n, kPoolFields, formatPool(printable(n))); });
    });
    CLI::App* list = add("list", "every tenant, with the CPUs it runs on", [](CommandContext& c, const Choices& o) {
      if (int(o.pods) + int(o.vms) + int(o.all) > 1) {
        c.err << "vrictl: list takes one of --pods, --vms and --all\n";
        return kExitUsage;
      }
      const auto kind = o.pods  ? v1::ListTenantsRequest::PODS
                        : o.vms ? v1::ListTenantsRequest::VMS
                                : v1::ListTenantsRequest::ALL;
      auto list = c.vrid().tenants(kind);
      if (!list.ok()) return failed(c, list.error());
      return show(c, o, *list, formatTenantList(printable(*list)));
    });
    // Checked when it runs: CLI11's own `excludes` lists the others in no stable order in --help.
    list->add_flag("--pods", choices.pods, "pods only");
    list->add_flag("--vms", choices.vms, "VMs only");
    list->add_flag("--all", choices.all, "pods and VMs (the default)");
    addTenantCommand("dominfo", "one VM: its vCPUs' CPUs, emulator, memory and cgroup", "domain",
                     "the VM's name or UUID", &v1::GetTenantRequest::set_vm);
    addTenantCommand("podinfo", "one pod and its containers", "pod", "the pod's UID or NAMESPACE/NAME",
                     &v1::GetTenantRequest::set_pod);
    addPinCommands();
    if (program) {
      // bash's completion (vrictl.bash-completion) asks here what its shell would offer: hidden.
      add("__complete", "",
          [](CommandContext& c, const Choices& o) {
            CompletionSource source = completionSourceFor(c);
            source.shellWords = false;
            for (const std::string& word : completionsFor(withoutProgramOptions(o.key, source.programOptions), source))
              c.out << word << "\n";
            return kExitOk;
          })
          ->group("")
          ->add_option("line", choices.key, "the line before the cursor, without the program's name");
    }
    add("tree", "the cgroup hierarchy as VRI models it, marked where the kernel differs",
        [](CommandContext& c, const Choices& o) {
          auto tree = c.vrid().tree(!o.noCompare);
          if (!tree.ok()) return failed(c, tree.error());
          v1::TenantList names;
          if (!o.json) {
            auto list = c.vrid().tenants(v1::ListTenantsRequest::ALL);
            if (!list.ok()) return failed(c, list.error());
            names = *list;
          }
          return show(c, o, *tree, o.json ? "" : formatTree(printable(*tree), printable(names), c.style));
        })
        ->add_flag("--no-compare", choices.noCompare,
                   "do not read the kernel's files (no wait for the decisions queued before)");
    add("map", "the machine's CPUs, each marked with who holds it and how busy it is",
        [](CommandContext& c, const Choices& o) {
          auto node = c.vrid().node();
          if (!node.ok()) return failed(c, node.error());
          auto list = c.vrid().tenants(v1::ListTenantsRequest::ALL);
          if (!list.ok()) return failed(c, list.error());
          // How busy: the latest usage round, when vrid samples usage (the map stands without it).
          auto usage = c.vrid().usage(0);
          const v1::UsageSample* busy = usage.ok() && !usage->samples().empty() && usage->samples(0).cpus_size() > 0
                                            ? &usage->samples(0)
                                            : nullptr;
          c.out << (o.json ? mapAsJson(*node, *list, busy) + "\n"
                           : formatMap(printable(*node), printable(*list), c.style, busy));
          return kExitOk;
        });
    CLI::App* top = add("top", "live CPU use, throttling and memory of every tenant (q quits); --once prints one table",
                        [](CommandContext& c, const Choices& o) {
                          TopChoices t = o.top;
                          t.json = o.json;
                          return runTop(c, t);
                        });
    top->add_option("--sort,-s", choices.top.sort, "the order: cpu, memory, throttled or name (keys c, m, t, n)")
        ->capture_default_str()
        ->check(CLI::IsMember({"cpu", "memory", "throttled", "name"}));
    top->add_flag("--once", choices.top.once, "one table of the latest round, then end (also when not on a terminal)");
    CLI::App* events =
        add("events", "vrid's recent events; --follow keeps showing new ones", [](CommandContext& c, const Choices& o) {
          v1::WatchRequest request;
          request.set_recent(o.recent);
          request.set_recent_only(!o.follow);
          auto watched = c.vrid().watch(
              request,
              [&](const v1::Event& e) {
                c.out << (o.json ? toJson(e, true) : formatEvent(printable(e), c.style));
                c.out.flush();
                return !c.interrupted();
              },
              c.interrupted);
          if (!watched.ok()) return failed(c, watched.error());
          return kExitOk;
        });
    events->add_flag("--follow,-f", choices.follow, "keep showing events as they come (Ctrl-C ends)");
    events->add_option("--recent", choices.recent, "how many of the events vrid keeps to show first (it keeps 256)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 256u));
    add("reconcile", "repair where the kernel differs from the ledger (admin socket); --dry-run only shows",
        [](CommandContext& c, const Choices& o) {
          auto reply = c.vrid().reconcile(o.dryRun);
          if (!reply.ok()) return failed(c, reply.error());
          return show(c, o, *reply, formatReconcile(printable(*reply), o.dryRun));
        })
        ->add_flag("--dry-run,-n", choices.dryRun, "show what reconcile would do, and do nothing");
    CLI::App* handback =
        add("handback",
            "hand the node back to kubelet's static CPU and memory managers (admin socket); --dry-run only shows "
            "kubelet's checkpoints",
            [](CommandContext& c, const Choices& o) {
              HandBackChoices handBack = o.handBack;
              handBack.dryRun = o.dryRun;
              auto reply = handBackToKubelet(c.vrid(), handBack);
              if (!reply.ok()) return failed(c, reply.error());
              return show(c, o, *reply, formatHandBack(*reply, o.dryRun));
            });
    handback->add_option("--kubelet-root-dir", choices.handBack.kubeletRootDir,
                         "kubelet's --root-dir (default: vrid's kubelet_root_dir)");
    handback->add_option("--kubelet-config", choices.handBack.kubeletConfig,
                         "the configuration kubelet will start with, cpuManagerPolicy static (default: vrid's "
                         "kubelet_config); with memoryManagerPolicy Static the memory manager's checkpoint is "
                         "written too");
    handback->add_flag("--dry-run,-n", choices.dryRun, "show the checkpoints, and do nothing");
    CLI::App* config =
        add("config",
            "vrid's configuration changed while it runs (admin socket): `config diff [FILE]` shows what a file would "
            "change, `config apply [--dry-run]` applies vrid's own file",
            [](CommandContext& c, const Choices& o) {
              auto reply = o.configAction == "apply" ? applyConfigFile(c.vrid(), o.configFile, o.dryRun)
                                                     : diffConfigFile(c.vrid(), o.configFile);
              if (!reply.ok()) return failed(c, reply.error());
              return show(c, o, *reply, formatConfigDiff(*reply));
            });
    config
        ->add_option("action", choices.configAction,
                     "diff: each option that differs, and each tenant it would move; apply: vrid reads its own "
                     "file again and applies it (the placement policy as one transaction)")
        ->required()
        ->check(CLI::IsMember({"diff", "apply"}));
    config->add_option("file", choices.configFile,
                       "diff only: a vrid.conf to compare (default: vrid's own file, as it is now)");
    config->add_flag("--dry-run,-n", choices.dryRun, "apply: show what it would do, and do nothing");
  }

  // vcpupin, emulatorpin, numatune: where one VM runs, shown or moved.
  void addPinCommands() {
    const auto withJson = [](int (*run)(CommandContext&, const PinChoices&)) {
      return [run](CommandContext& c, const Choices& o) {
        PinChoices p = o.pins;
        p.json = o.json;
        return run(c, p);
      };
    };
    PinChoices& p = choices.pins;
    CLI::App* vcpupin =
        add("vcpupin", "a VM's vCPUs and their CPUs; with VCPU and CPULIST, moves one live (admin socket)",
            withJson(runVcpupin));
    vcpupin->add_option("domain", p.domain, "the VM's name or UUID")->required();
    vcpupin->add_option("vcpu", p.vcpu, "a vCPU id: show it, or move it");
    vcpupin->add_option("cpulist", p.cpulist, "one CPU for the vCPU to hold, or 'shared'");
    vcpupin->add_flag("--config", p.config, "also change the persistent definition");
    vcpupin->footer(kVcpupinFooter);
    CLI::App* emulatorpin =
        add("emulatorpin", "a VM's emulator and its CPUs; with CPULIST, moves it live (admin socket)",
            withJson(runEmulatorpin));
    emulatorpin->add_option("domain", p.domain, "the VM's name or UUID")->required();
    emulatorpin->add_option("cpulist", p.cpulist, "one CPU for the emulator to hold, or 'shared'");
    emulatorpin->add_flag("--config", p.config, "also change the persistent definition");
    emulatorpin->footer(kEmulatorpinFooter);
    CLI::App* numatune = add("numatune", "the NUMA nodes a VM's memory is bound to (shown only: it does not move)",
                             withJson(runNumatune));
    numatune->add_option("domain", p.domain, "the VM's name or UUID")->required();
    numatune->add_option("--nodeset", p.nodeset, "refused: a running VM's bound memory does not move");
  }

  // dominfo and podinfo: one tenant by the key `set` puts in the request, shown as a VM or a pod.
  void addTenantCommand(const std::string& name, const std::string& help, const std::string& argument,
                        const std::string& argumentHelp, void (v1::GetTenantRequest::*set)(const std::string&)) {
    add(name, help,
        [set](CommandContext& c, const Choices& o) {
          v1::GetTenantRequest request;
          (request.*set)(o.key);
          auto tenant = c.vrid().tenant(request);
          if (!tenant.ok()) return failed(c, tenant.error());
          if (tenant->has_vm()) return show(c, o, tenant->vm(), formatVmInfo(printable(tenant->vm())));
          return show(c, o, tenant->pod(), formatPodInfo(printable(tenant->pod())));
        })
        ->add_option(argument, choices.key, argumentHelp)
        ->required();
  }

  CLI::App* add(const std::string& name, const std::string& help, Run run) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands.emplace_back(sub, std::move(run));
    return sub;
  }

  // CLI11 parses a reversed vector.
  std::optional<int> parse(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
    std::vector<std::string> reversed(words.rbegin(), words.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      out << helpFor(words);
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      err << "vrictl: " << e.what() << "\n"
          << "Run 'vrictl --help' or 'vrictl COMMAND --help'.\n";
      return kExitUsage;
    }
    return std::nullopt;
  }

  // The help of the command the words name, or the program's.
  std::string helpFor(const std::vector<std::string>& words) {
    for (auto& [sub, run] : commands) {
      if (std::find(words.begin(), words.end(), sub->get_name()) != words.end()) return sub->help();
    }
    return app.help();
  }

  int runChosen(CommandContext& c) {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run(c, choices);
    }
    return kExitUsage;
  }
};

}  // namespace

int reportFailure(CommandContext& c, const Error& error) {
  c.err << "vrictl: " << error.message() << "\n";
  if (error.code() == ErrorCode::kPermissionDenied) {
    c.err << "vrictl: changes go through the admin socket: --socket /run/vri/admin.sock (as root)\n";
  }
  return kExitFailed;
}

CompletionSource completionSourceFor(CommandContext& context) {
  const auto names = [&context](bool vms) {
    std::vector<std::string> out;
    auto list = context.vrid().tenants(vms ? v1::ListTenantsRequest::VMS : v1::ListTenantsRequest::PODS);
    if (!list.ok()) return out;
    for (const v1::Tenant& t : list->tenants()) {
      if (vms) {
        out.push_back(t.vm().name());
        out.push_back(t.vm().uuid());
      } else {
        out.push_back(t.pod().name());
        out.push_back(t.pod().uid());
      }
    }
    return out;
  };
  CompletionSource source{commandSummaries(), [names] { return names(true); }, [names] { return names(false); }};
  Parser program(true);
  for (const CLI::Option* option : program.app.get_options()) {
    for (const std::string& name : option->get_lnames())
      source.programOptions["--" + name] = option->get_items_expected_min() > 0;
  }
  return source;
}

ProgramRun runProgram(const std::vector<std::string>& args,
                      const std::function<CommandContext(const ProgramOptions&)>& contextFor) {
  Parser parser(true);
  ProgramRun run;
  CommandContext probe = contextFor(parser.options);  // for the streams of --help and usage errors
  if (auto done = parser.parse(args, probe.out, probe.err)) {
    run.exitCode = *done;
    return run;
  }
  run.options = parser.options;
  if (parser.app.get_subcommands().empty()) {
    run.shell = true;
    return run;
  }
  CommandContext context = contextFor(parser.options);
  run.exitCode = parser.runChosen(context);
  return run;
}

int runShellCommand(const std::vector<std::string>& words, CommandContext& context) {
  Parser parser(false);
  if (auto done = parser.parse(words, context.out, context.err)) return *done;
  return parser.runChosen(context);
}

std::vector<CommandSummary> commandSummaries() {
  Parser parser(false);
  std::vector<CommandSummary> out;
  for (auto& [sub, run] : parser.commands) {
    if (sub->get_group().empty()) continue;  // hidden
    CommandSummary summary{sub->get_name(), {"--help", "--json"}, CommandSummary::Argument::kNone};
    for (const CLI::Option* option : sub->get_options()) {
      for (const std::string& name : option->get_lnames()) {
        if (name != "help") summary.flags.push_back("--" + name);
      }
    }
    if (summary.name == "dominfo" || summary.name == "vcpupin" || summary.name == "emulatorpin" ||
        summary.name == "numatune") {
      summary.argument = CommandSummary::Argument::kVm;
    }
    if (summary.name == "podinfo") summary.argument = CommandSummary::Argument::kPod;
    std::sort(summary.flags.begin(), summary.flags.end());
    summary.flags.erase(std::unique(summary.flags.begin(), summary.flags.end()), summary.flags.end());
    out.push_back(std::move(summary));
  }
  return out;
}

}  // namespace vri::ctl
