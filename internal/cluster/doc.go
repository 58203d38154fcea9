// Package harness starts hetsev's local world: embedded etcd, a real
// kube-apiserver and kube-controller-manager in process, kwok for node and pod
// lifecycle without kubelets, HetSev's GPU testbed as nodes, and the three
// hetsev programs as subprocesses. `make demo` and every integration test use
// it, so what the tests prove is what the demo runs. Every address it binds or
// dials is in 127.0.0.0/8.
package cluster
