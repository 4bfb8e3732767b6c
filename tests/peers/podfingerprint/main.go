// podfingerprint prints the pods fingerprint that github.com/k8stopologyawareschedwg/podfingerprint
// computes (as the scheduler's NodeResourceTopologyMatch plugin does) for the pods named on its
// command line as namespace/name; VRI's own computation is checked against it.
//
//	podfingerprint [namespace/name ...]
//	podfingerprint --version
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/k8stopologyawareschedwg/podfingerprint"
)

func main() {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("podfingerprint " + podfingerprint.Prefix + podfingerprint.Version)
		return
	}
	fp := podfingerprint.NewFingerprint(len(args))
	for _, arg := range args {
		namespace, name, ok := strings.Cut(arg, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "podfingerprint: %q is not namespace/name\n", arg)
			os.Exit(2)
		}
		fp.Add(namespace, name)
	}
	fmt.Println(fp.Sign())
}
