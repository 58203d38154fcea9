package draplugin

import (
	"flag"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/catalog"
)

func defaultCatalog(t *testing.T) catalog.Catalog {
	t.Helper()
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// validConfig is a Config of node1 with four catalog V100-32GB GPUs.
func validConfig() Config {
	c := DefaultConfig()
	c.Node, c.GPUType, c.GPUCount, c.Kubeconfig = "node1", "V100-32GB", 4, "/etc/node1/kubeconfig"
	return c
}

func TestValidateResolvesTheCatalogGPUType(t *testing.T) {
	got, err := validConfig().Validate(defaultCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := defaultCatalog(t).ByName("V100-32GB")
	if got != want {
		t.Errorf("GPU type %+v, want the catalog's %+v", got, want)
	}
}

func TestValidateRejectsBadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"no node":          {func(c *Config) { c.Node = "" }, "--node: required"},
		"bad node name":    {func(c *Config) { c.Node = "Node_1" }, `--node "Node_1" is not a node name`},
		"unknown GPU type": {func(c *Config) { c.GPUType = "H100" }, `--gpu-type "H100" is not in the GPU catalog (known: V100-32GB, T4`},
		"product label":    {func(c *Config) { c.GPUType = "Tesla-T4" }, `--gpu-type "Tesla-T4" is not in the GPU catalog`},
		"no GPU type":      {func(c *Config) { c.GPUType = "" }, `--gpu-type "" is not in the GPU catalog`},
		"zero GPUs":        {func(c *Config) { c.GPUCount = 0 }, "--gpu-count 0: want 1 to 128"},
		"negative GPUs":    {func(c *Config) { c.GPUCount = -2 }, "--gpu-count -2: want 1 to 128"},
		"too many GPUs":    {func(c *Config) { c.GPUCount = 129 }, "--gpu-count 129: want 1 to 128"},
		"no kubeconfig":    {func(c *Config) { c.Kubeconfig = "" }, "--kubeconfig: required"},
		"no CDI dir":       {func(c *Config) { c.CDIDir = "" }, "--cdi-dir: required"},
		"no plugin dir":    {func(c *Config) { c.PluginDataDir = "" }, "--plugin-data-dir: required"},
		"no registrar dir": {func(c *Config) { c.RegistrarDir = "" }, "--registrar-dir: required"},
	} {
		t.Run(name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			if _, err := c.Validate(defaultCatalog(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestFlagsFillTheConfig(t *testing.T) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("draplugin", flag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse([]string{"--node=t4-1", "--gpu-type=T4", "--gpu-count=2", "--kubeconfig=/n/kubeconfig", "--cdi-dir=/n/cdi"}); err != nil {
		t.Fatal(err)
	}
	want := Config{Node: "t4-1", GPUType: "T4", GPUCount: 2, Kubeconfig: "/n/kubeconfig",
		PluginDataDir: "/var/lib/kubelet/plugins/gpu.nvidia.com", RegistrarDir: "/var/lib/kubelet/plugins_registry", CDIDir: "/n/cdi"}
	if c != want {
		t.Errorf("config %+v, want %+v", c, want)
	}
}
