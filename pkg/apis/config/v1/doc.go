// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hetsev/hetsev/pkg/apis/config
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/hetsev/hetsev/pkg/apis/config/v1
// +groupName=kubescheduler.config.k8s.io

// Package v1 is the versioned form of hetsev's scheduler-plugin arguments,
// as written in a KubeSchedulerConfiguration's pluginConfig: kind
// <plugin name>Args in kubescheduler.config.k8s.io/v1 (or no apiVersion and
// kind at all, as for upstream plugins). SetDefaults_* fill what is left
// out; zz_generated.*.go are written by `make generate`.
package v1
