// Package testing decodes hetsev's plugin arguments for tests the way
// hetsev-scheduler does, through the kube-scheduler's scheme with
// pkg/apis/config/scheme registered.
package testing

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	_ "github.com/hetsev/hetsev/pkg/apis/config/scheme" // hetsev's args in the scheduler's scheme
)

// DecodeConfig decodes a KubeSchedulerConfiguration as the kube-scheduler's
// --config loader does (k8s.io/kubernetes/cmd/kube-scheduler/app/options
// loadConfig): strictly, defaulted, converted to the internal version.
func DecodeConfig(data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, gvk, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("decoded %s, not a KubeSchedulerConfiguration", gvk)
	}
	return cfg, nil
}

// DecodePluginArgs is what a plugin factory receives when args (YAML or
// JSON; empty for none) are the pluginConfig args of plugin in a v1
// KubeSchedulerConfiguration profile that enables plugin at preFilter.
func DecodePluginArgs(plugin, args string) (runtime.Object, error) {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: test
    plugins:
      preFilter:
        enabled:
          - name: %s
`, plugin)
	if args != "" {
		fmt.Fprintf(&b, "    pluginConfig:\n      - name: %s\n        args:\n", plugin)
		for _, l := range strings.Split(args, "\n") {
			b.WriteString("          " + l + "\n")
		}
	}
	cfg, err := DecodeConfig([]byte(b.String()))
	if err != nil {
		return nil, err
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == plugin {
			return pc.Args, nil
		}
	}
	return nil, nil
}
