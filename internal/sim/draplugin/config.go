package draplugin

import (
	"errors"
	"flag"
	"fmt"
	"path"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
)

// Config is what the plugin program of one e2e node runs with: the node,
// its GPUs, the node's API credentials and the directories it shares with
// the node's kubelet and containerd.
type Config struct {
	// Node is the name of the node whose GPUs the plugin serves; its
	// ResourceSlice gets this spec.nodeName and pool name.
	Node string
	// GPUType is a GPU type name of the catalog (catalog.GPUType.Name,
	// e.g. "V100-32GB" or "T4").
	GPUType string
	// Profile is the driver the plugin stands in for (dra.Profiles; ""
	// is dra.DefaultProfile): its ResourceSlice is
	// dradriver.ProfileSlice's.
	Profile string
	// GPUCount is the node's number of GPUs, 1 to
	// resourceapi.ResourceSliceMaxDevices (one ResourceSlice holds them).
	GPUCount int
	// Kubeconfig is the node's kubeconfig: a client certificate of
	// system:node:<Node> in group system:nodes, which the Node authorizer
	// lets manage the ResourceSlices of Node and read the ResourceClaims
	// of its pods.
	Kubeconfig string
	// PluginDataDir is where the DRA gRPC socket (dra.sock) is served; it
	// is created when missing.
	PluginDataDir string
	// RegistrarDir is the kubelet's plugin registration directory, where
	// the registration socket is served; it is created when missing.
	RegistrarDir string
	// CDIDir is where claim CDI specs are written: one of containerd's
	// cdi_spec_dirs.
	CDIDir string
}

// DefaultConfig is a Config with the kubelet's default directories for
// driver v1alpha1.DRADriver (/var/lib/kubelet/plugins/gpu.nvidia.com,
// /var/lib/kubelet/plugins_registry) and CDI's dynamic spec directory
// (/var/run/cdi).
func DefaultConfig() Config {
	return Config{
		PluginDataDir: path.Join(kubeletplugin.KubeletPluginsDir, v1alpha1.DRADriver),
		RegistrarDir:  kubeletplugin.KubeletRegistryDir,
		CDIDir:        kubeletplugin.DefaultCDIDir,
	}
}

// AddFlags binds c's fields to flags of fs, c's values as defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Node, "node", c.Node, "Name of the node whose GPUs this plugin serves (required).")
	fs.StringVar(&c.GPUType, "gpu-type", c.GPUType, "GPU type of the node's GPUs, a name of hetsev's GPU catalog such as V100-32GB or T4 (required).")
	fs.StringVar(&c.Profile, "dra-driver", c.Profile, "The DRA driver to stand in for, a profile: nvidia (default) or hami; its ResourceSlice is what that driver publishes.")
	fs.IntVar(&c.GPUCount, "gpu-count", c.GPUCount, fmt.Sprintf("Number of GPUs of the node, 1 to %d (required).", resourceapi.ResourceSliceMaxDevices))
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "The node's kubeconfig: credentials of system:node:<node> in group system:nodes (required).")
	fs.StringVar(&c.PluginDataDir, "plugin-data-dir", c.PluginDataDir, "Directory of the DRA gRPC socket; created when missing.")
	fs.StringVar(&c.RegistrarDir, "registrar-dir", c.RegistrarDir, "The kubelet's plugin registration directory; created when missing.")
	fs.StringVar(&c.CDIDir, "cdi-dir", c.CDIDir, "Directory the claims' CDI specs are written to: one of containerd's cdi_spec_dirs.")
}

// Validate checks c and returns the catalog entry of c.GPUType. Errors
// name the flag: an empty or non-DNS-subdomain node name, a GPU type cat
// does not know (the error lists the known ones), a GPU count outside 1
// to resourceapi.ResourceSliceMaxDevices, an empty kubeconfig or
// directory.
func (c Config) Validate(cat catalog.Catalog) (catalog.GPUType, error) {
	var errs []error
	if c.Node == "" {
		errs = append(errs, errors.New("--node: required"))
	} else if msgs := validation.IsDNS1123Subdomain(c.Node); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--node %q is not a node name: %s", c.Node, strings.Join(msgs, "; ")))
	}
	t, ok := cat.ByName(c.GPUType)
	if !ok {
		names := make([]string, len(cat.Types))
		for i, k := range cat.Types {
			names[i] = k.Name
		}
		errs = append(errs, fmt.Errorf("--gpu-type %q is not in the GPU catalog (known: %s)", c.GPUType, strings.Join(names, ", ")))
	}
	if c.Profile != "" {
		if _, err := dra.Profile(c.Profile); err != nil {
			errs = append(errs, fmt.Errorf("--dra-driver: %w", err))
		}
	}
	if c.GPUCount < 1 || c.GPUCount > resourceapi.ResourceSliceMaxDevices {
		errs = append(errs, fmt.Errorf("--gpu-count %d: want 1 to %d", c.GPUCount, resourceapi.ResourceSliceMaxDevices))
	}
	for _, f := range []struct{ flag, value string }{
		{"--kubeconfig", c.Kubeconfig}, {"--plugin-data-dir", c.PluginDataDir},
		{"--registrar-dir", c.RegistrarDir}, {"--cdi-dir", c.CDIDir},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s: required", f.flag))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return catalog.GPUType{}, err
	}
	return t, nil
}
