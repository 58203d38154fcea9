// Package scaler is hetsev-scaler's controller: for each ModelService it
// keeps one Deployment per GPU type and, every interval, reads the arrival
// rate from custom.metrics.k8s.io, runs HetSev's scaling decision
// (pkg/heterogeneity, paper 4.1) and sets the Deployments' replicas. A
// metrics outage holds replicas; it never scales in on missing data.
//
// It runs on controller-runtime: Options (options.go) are the program's
// flags, NewManager (manager.go) builds the manager, and Reconciler
// (reconciler.go) reconciles one ModelService.
package scaler
