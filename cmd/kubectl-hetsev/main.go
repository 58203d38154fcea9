// Command kubectl-hetsev is `kubectl hetsev`, a kubectl plugin: copy it
// onto PATH and run `kubectl hetsev gpus`, `kubectl hetsev explain pod
// NAME`, `kubectl hetsev explain modelservice NAME` or `kubectl hetsev
// what-if` (internal/kubectlhetsev).
package main

import (
	"os"

	"github.com/hetsev/hetsev/internal/kubectlhetsev"
)

func main() {
	os.Exit(kubectlhetsev.Main(os.Args[1:], os.Stdout, os.Stderr))
}
