// Command kubectl is kubectl (k8s.io/kubectl) at this module's Kubernetes
// version, so that the install test runs the chart's helm test script
// (bash and kubectl, as in its pod) with a kubectl the module pins rather
// than one a machine may or may not have.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
