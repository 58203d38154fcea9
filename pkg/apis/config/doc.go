// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io

// Package config holds the internal types of hetsev's scheduler-plugin
// arguments (HetsevFairQueueArgs, HetsevGPUShareArgs), registered in the
// kube-scheduler's own configuration group as scheduler-plugins does, so
// that the scheduler decodes, defaults and converts them with its
// KubeSchedulerConfiguration and shows them on /configz. The versioned
// form users write is in package v1; package scheme registers both.
package config
