// Package schedulerconfig is hetsev-scheduler's admission parameters as
// other components read them: HetsevGPUShare's arguments
// (config.HetsevGPUShareArgs, defaulted and validated by pkg/apis/config)
// turned into the placement.Placer the plugin admits and rates GPUs with,
// and read from the KubeSchedulerConfiguration file the scheduler runs
// with. hetsev-scheduler's plugin builds its placer here, and hetsev-scaler
// counts free slots with the placer LoadFile gives for the same file, so
// both apply one rule with one set of parameters (maxBusyShare,
// anti-affinity, fit, interference weight, co-location model).
package schedulerconfig
