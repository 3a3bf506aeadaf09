// Command testplane runs a real Kubernetes control plane (embedded etcd,
// kube-apiserver, kube-controller-manager) on loopback for integration tests.
//
//	testplane up --dir DIR [--exit-with-parent] [--controllers LIST]
//	testplane apiserver <kube-apiserver flags...>
//	testplane controller-manager <kube-controller-manager flags...>
//
// `up` starts etcd inside its own process and the two Kubernetes components
// as child processes of the same binary (they install process-wide signal
// handlers and global registries, so they cannot share one process).
// See README.md for the full contract.
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones are validated by the apiserver

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as in the upstream mains
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as in the upstream mains
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

const usage = `usage:
  testplane up --dir DIR [--exit-with-parent] [--controllers LIST]
  testplane apiserver <kube-apiserver flags...>
  testplane controller-manager <kube-controller-manager flags...>
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "up":
		os.Exit(runUp(args))
	case "apiserver":
		os.Exit(runComponent(apiserverapp.NewAPIServerCommand(), args))
	case "controller-manager":
		os.Exit(runComponent(kcmapp.NewControllerManagerCommand(), args))
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "testplane: unknown subcommand %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

// runComponent runs an upstream component command exactly as its own main
// would, but with the arguments that follow our subcommand name.
func runComponent(cmd *cobra.Command, args []string) int {
	if args == nil {
		args = []string{}
	}
	cmd.SetArgs(args)
	return cli.Run(cmd)
}
