// kubectl, as k8s.io/kubernetes/cmd/kubectl builds it (same main), from the k8s.io/kubectl
// module of the Kubernetes release the test control plane runs, so that the tests do not
// depend on the kubectl of the machine. No client auth plugins: the test kubeconfigs use
// client certificates.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
