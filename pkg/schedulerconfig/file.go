package schedulerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// LoadFile reads HetsevGPUShare's arguments from the KubeSchedulerConfiguration
// file at path (YAML or JSON, kubescheduler.config.k8s.io/v1, as
// hetsev-scheduler's --config): the pluginConfig entry named HetsevGPUShare of
// the profile whose schedulerName is v1alpha1.SchedulerName, decoded
// strictly as configv1.HetsevGPUShareArgs (apiVersion and kind may be left
// out), defaulted, validated and completed (CompleteGPUShareArgs). A
// profile without that entry takes DefaultGPUShareArgs, as the scheduler
// does.
//
// Errors name the file and the field: an unreadable file, a document that
// is not a v1 KubeSchedulerConfiguration or has unknown fields, no profile
// named hetsev-scheduler, two entries for the plugin, and every invalid
// argument (e.g. "profiles[0].pluginConfig[1].args.maxBusyShare").
func LoadFile(path string) (GPUShareArgs, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return GPUShareArgs{}, fmt.Errorf("scheduler config %s: %w", path, err)
	}
	a, err := parse(raw)
	if err != nil {
		return GPUShareArgs{}, fmt.Errorf("scheduler config %s: %w", path, err)
	}
	return a, nil
}

// parse is LoadFile on the file's content.
func parse(raw []byte) (GPUShareArgs, error) {
	var cfg schedconfigv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		return GPUShareArgs{}, err
	}
	if gv := schedconfigv1.SchemeGroupVersion.String(); cfg.APIVersion != gv || cfg.Kind != "KubeSchedulerConfiguration" {
		return GPUShareArgs{}, fmt.Errorf("apiVersion %q, kind %q: want %s, KubeSchedulerConfiguration", cfg.APIVersion, cfg.Kind, gv)
	}
	profiles := field.NewPath("profiles")
	for i, p := range cfg.Profiles {
		if p.SchedulerName == nil || *p.SchedulerName != v1alpha1.SchedulerName {
			continue
		}
		var found *field.Path
		var args config.HetsevGPUShareArgs
		for j, pc := range p.PluginConfig {
			if pc.Name != GPUShareName {
				continue
			}
			at := profiles.Index(i).Child("pluginConfig").Index(j)
			if found != nil {
				return GPUShareArgs{}, fmt.Errorf("%s: a second entry for %s (the first is %s)", at.Child("name"), GPUShareName, found)
			}
			found = at
			var err error
			if args, err = decodeArgs(at.Child("args"), pc.Args.Raw); err != nil {
				return GPUShareArgs{}, err
			}
		}
		if found == nil {
			return DefaultGPUShareArgs(), nil
		}
		return CompleteGPUShareArgs(found.Child("args"), args)
	}
	return GPUShareArgs{}, fmt.Errorf("%s: no profile with schedulerName %s", profiles, v1alpha1.SchedulerName)
}

// decodeArgs decodes one pluginConfig entry's args (JSON, as the outer
// decoder leaves them) strictly and defaults them.
func decodeArgs(at *field.Path, raw []byte) (config.HetsevGPUShareArgs, error) {
	var v configv1.HetsevGPUShareArgs
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return config.HetsevGPUShareArgs{}, fmt.Errorf("%s: %w", at, err)
		}
	}
	if v.APIVersion != "" && v.APIVersion != configv1.SchemeGroupVersion.String() {
		return config.HetsevGPUShareArgs{}, fmt.Errorf("%s: apiVersion %q, want %s", at.Child("apiVersion"), v.APIVersion, configv1.SchemeGroupVersion)
	}
	if v.Kind != "" && v.Kind != GPUShareName+"Args" {
		return config.HetsevGPUShareArgs{}, fmt.Errorf("%s: kind %q, want %sArgs", at.Child("kind"), v.Kind, GPUShareName)
	}
	configv1.SetObjectDefaults_HetsevGPUShareArgs(&v)
	var out config.HetsevGPUShareArgs
	if err := configv1.Convert_v1_HetsevGPUShareArgs_To_config_HetsevGPUShareArgs(&v, &out, nil); err != nil {
		return config.HetsevGPUShareArgs{}, fmt.Errorf("%s: %w", at, err)
	}
	return out, nil
}
