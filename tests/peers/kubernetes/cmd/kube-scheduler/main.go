// kube-scheduler with one out-of-tree plugin: NodeResourceTopologyMatch, from
// sigs.k8s.io/scheduler-plugins. Not that project's cmd/scheduler, which compiles
// every plugin it has and their dependencies.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // the REST client's metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// The plugin's arguments (NodeResourceTopologyMatchArgs) in the configuration's scheme.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(noderesourcetopology.Name, noderesourcetopology.New))
	os.Exit(cli.Run(command))
}
