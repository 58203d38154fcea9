package config

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	proxyvalidation "k8s.io/kubernetes/pkg/proxy/apis/config/validation"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
)

// node1 are the per-node values `make e2e` gives node 1, on top of
// addresses.env.
func node1(t *testing.T) map[string]string {
	t.Helper()
	vars := readEnv(t, "addresses.env")
	dir := t.TempDir()
	for k, v := range map[string]string{
		"NODE":        "node1",
		"NODE_IP":     vars["NODE_IP_PREFIX"] + "1",
		"NODE_DIR":    dir,
		"NODE_LABELS": "nvidia.com/gpu.product=Tesla-V100-SXM2-16GB",
		"POD_CIDR":    "10.88.1.0/24",
		"POD_GATEWAY": "10.88.1.1",
		"CA_FILE":     filepath.Join(dir, "ca.crt"),
	} {
		vars[k] = v
	}
	return vars
}

// readEnv is ReadEnv, failing t on an error.
func readEnv(t *testing.T, file string) map[string]string {
	t.Helper()
	vars, err := ReadEnv(file)
	if err != nil {
		t.Fatal(err)
	}
	return vars
}

// render fills ${NAME} in the template file as envsubst does and fails on a
// name vars lacks, so every placeholder is one `make e2e` must give.
func render(t *testing.T, file string, vars map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return os.Expand(string(b), func(name string) string {
		v, ok := vars[name]
		if !ok {
			t.Errorf("%s: ${%s} has no value", file, name)
		}
		return v
	})
}

func TestKubeletConfigPassesKubeletValidation(t *testing.T) {
	vars := node1(t)
	file := filepath.Join(vars["NODE_DIR"], "kubelet-config.yaml")
	if err := os.WriteFile(file, []byte(render(t, "kubelet-config.yaml", vars)), 0o644); err != nil {
		t.Fatal(err)
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, file)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := loader.Load(context.Background())
	if err != nil {
		t.Fatalf("the kubelet's loader refuses kubelet-config.yaml: %v", err)
	}
	if err := validation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		t.Fatalf("the kubelet's validation refuses kubelet-config.yaml: %v", err)
	}
	if kc.FailCgroupV1 {
		t.Error("failCgroupV1 is true: the kubelet would refuse these cgroup v1 machines")
	}
	if kc.CgroupDriver != "cgroupfs" {
		t.Errorf("cgroupDriver %q, want cgroupfs (containerd's runc runs with SystemdCgroup false)", kc.CgroupDriver)
	}
	if kc.CgroupRoot != "/hetsev-e2e-node1" {
		t.Errorf("cgroupRoot %q, want the node's own /hetsev-e2e-node1", kc.CgroupRoot)
	}
	if kc.StaticPodPath != "" {
		t.Errorf("staticPodPath %q, want none", kc.StaticPodPath)
	}
	if kc.Address != vars["NODE_IP"] {
		t.Errorf("address %q, want the node IP %s on the run's bridge", kc.Address, vars["NODE_IP"])
	}
	if kc.ImageGCHighThresholdPercent != 100 {
		t.Errorf("imageGCHighThresholdPercent %d, want 100 (no image GC: images are imported, never pulled)", kc.ImageGCHighThresholdPercent)
	}
	if kc.ResolverConfig != "" {
		t.Errorf("resolvConf %q, want empty (pods get no copy of the machine's resolver)", kc.ResolverConfig)
	}
	if !strings.HasPrefix(kc.PodLogsDir, vars["NODE_DIR"]+"/") {
		t.Errorf("podLogsDir %q is outside the node's directory", kc.PodLogsDir)
	}
	if kc.ContainerRuntimeEndpoint != "unix://"+vars["NODE_DIR"]+"/containerd/containerd.sock" {
		t.Errorf("containerRuntimeEndpoint %q is not this node's containerd", kc.ContainerRuntimeEndpoint)
	}
}

func TestKubeletFlagsAreFilled(t *testing.T) {
	vars := node1(t)
	for _, line := range strings.Split(render(t, "kubelet.flags", vars), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "--") || !strings.Contains(line, "=") {
			t.Errorf("kubelet.flags: %q is not --name=value", line)
		}
	}
}

// containerdConfig is the part of containerd-config.toml the nodes rely on.
type containerdConfig struct {
	Version int
	Root    string
	State   string
	GRPC    struct{ Address string }
	Plugins struct {
		Images struct {
			Snapshotter  string
			PinnedImages map[string]string `toml:"pinned_images"`
		} `toml:"io.containerd.cri.v1.images"`
		Runtime struct {
			RestrictOOMScoreAdj bool     `toml:"restrict_oom_score_adj"`
			NetNSUnderState     bool     `toml:"netns_mounts_under_state_dir"`
			CDISpecDirs         []string `toml:"cdi_spec_dirs"`
			Containerd          struct {
				Runtimes map[string]struct {
					DisablePauseImagePull bool `toml:"disable_pause_image_pull"`
					Options               struct {
						SystemdCgroup bool
						Root          string
					}
				}
			}
			CNI struct {
				BinDirs []string `toml:"bin_dirs"`
				ConfDir string   `toml:"conf_dir"`
			}
		} `toml:"io.containerd.cri.v1.runtime"`
	}
}

func TestContainerdConfig(t *testing.T) {
	vars := node1(t)
	var c containerdConfig
	_, err := toml.Decode(render(t, "containerd-config.toml", vars), &c)
	if err != nil {
		t.Fatalf("containerd-config.toml: %v", err)
	}
	if c.Version != 3 {
		t.Errorf("version %d, want 3 (containerd 2.x)", c.Version)
	}
	dir := vars["NODE_DIR"]
	runc := c.Plugins.Runtime.Containerd.Runtimes["runc"]
	for what, p := range map[string]string{"root": c.Root, "state": c.State, "grpc address": c.GRPC.Address,
		"CNI conf_dir": c.Plugins.Runtime.CNI.ConfDir, "runc root": runc.Options.Root} {
		if !strings.HasPrefix(p, dir+"/") {
			t.Errorf("%s %q is outside the node's directory %s", what, p, dir)
		}
	}
	if !c.Plugins.Runtime.RestrictOOMScoreAdj {
		t.Error("restrict_oom_score_adj is false: runc fails every sandbox here (no CAP_SYS_RESOURCE)")
	}
	if got := c.Plugins.Images.PinnedImages["sandbox"]; got != vars["PAUSE_IMAGE"] {
		t.Errorf("sandbox image %q, want the local pause image %q", got, vars["PAUSE_IMAGE"])
	}
	if !c.Plugins.Runtime.NetNSUnderState {
		t.Error("pod network namespaces would be mounted in the machine's /var/run/netns")
	}
	if !runc.DisablePauseImagePull {
		t.Error("runc may pull the sandbox image: want disable_pause_image_pull")
	}
	if runc.Options.SystemdCgroup {
		t.Error("SystemdCgroup is true: the kubelet's cgroupDriver is cgroupfs")
	}
	if s := c.Plugins.Images.Snapshotter; s != "overlayfs" && s != "native" {
		t.Errorf("snapshotter %q, want overlayfs or native", s)
	}
	if len(c.Plugins.Runtime.CDISpecDirs) != 1 || c.Plugins.Runtime.CDISpecDirs[0] != dir+"/cdi" {
		t.Errorf("cdi_spec_dirs %v, want the node's own [%s/cdi]", c.Plugins.Runtime.CDISpecDirs, dir)
	}
	if len(c.Plugins.Runtime.CNI.BinDirs) != 1 || c.Plugins.Runtime.CNI.BinDirs[0] != vars["CNI_BIN_DIR"] {
		t.Errorf("CNI bin_dirs %v, want [%s]", c.Plugins.Runtime.CNI.BinDirs, vars["CNI_BIN_DIR"])
	}
}

// TestAddressesStayOnTheMachine checks the address rule of test/e2e/README.md
// on the CNI conflist and addresses.env: private ranges only, the node's
// pod range inside the pod network, and no default route for pods.
func TestAddressesStayOnTheMachine(t *testing.T) {
	vars := node1(t)
	var conf struct {
		Plugins []struct {
			Type             string
			IPMasq           bool `json:"ipMasq"`
			IsDefaultGateway bool `json:"isDefaultGateway"`
			IPAM             struct {
				Ranges [][]struct{ Subnet, Gateway string }
				Routes []struct{ Dst string }
			}
		}
	}
	if err := json.Unmarshal([]byte(render(t, "cni-bridge.conflist", vars)), &conf); err != nil {
		t.Fatalf("cni-bridge.conflist: %v", err)
	}
	if len(conf.Plugins) == 0 || conf.Plugins[0].Type != "bridge" {
		t.Fatalf("first plugin %+v, want bridge", conf.Plugins)
	}
	br := conf.Plugins[0]
	if br.IPMasq {
		t.Error("ipMasq: pod traffic would be masqueraded towards the machine's other interfaces")
	}
	if br.IsDefaultGateway {
		t.Error("isDefaultGateway: pods would get a default route")
	}
	podNet := mustPrefix(t, vars["POD_NETWORK"])
	for _, rs := range br.IPAM.Ranges {
		for _, r := range rs {
			sub, gw := mustPrefix(t, r.Subnet), netip.MustParseAddr(r.Gateway)
			if !sub.Contains(gw) {
				t.Errorf("gateway %s outside the range %s", gw, sub)
			}
			if sub.Bits() < podNet.Bits() || !podNet.Contains(sub.Addr()) {
				t.Errorf("pod range %s outside the pod network %s", sub, podNet)
			}
		}
	}
	for _, r := range br.IPAM.Routes {
		p := mustPrefix(t, r.Dst)
		if p.Bits() == 0 || !p.Addr().IsPrivate() {
			t.Errorf("pod route %s: want private destinations only, no default route", p)
		}
	}
	for _, name := range []string{"NODE_NETWORK", "POD_NETWORK", "SERVICE_CIDR"} {
		if p := mustPrefix(t, vars[name]); !p.Addr().IsPrivate() {
			t.Errorf("%s %s is not a private range", name, p)
		}
	}
	node := mustPrefix(t, vars["NODE_NETWORK"])
	for _, name := range []string{"HOST_IP", "NODE_IP"} {
		if a := netip.MustParseAddr(vars[name]); !node.Contains(a) {
			t.Errorf("%s %s is not on the run's bridge %s", name, a, node)
		}
	}
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return p
}

func TestKubeProxyConfigPassesKubeProxyValidation(t *testing.T) {
	vars := node1(t)
	obj, _, err := proxyscheme.Codecs.UniversalDecoder().Decode([]byte(render(t, "kube-proxy-config.yaml", vars)), nil, nil)
	if err != nil {
		t.Fatalf("kube-proxy's decoder refuses kube-proxy-config.yaml: %v", err)
	}
	kc, ok := obj.(*proxyconfig.KubeProxyConfiguration)
	if !ok {
		t.Fatalf("kube-proxy-config.yaml decodes to %T", obj)
	}
	if errs := proxyvalidation.Validate(kc); len(errs) > 0 {
		t.Fatalf("kube-proxy's validation refuses kube-proxy-config.yaml: %v", errs.ToAggregate())
	}
	if kc.Mode != proxyconfig.ProxyModeNFTables {
		t.Errorf("mode %q, want nftables (rules inside the node's namespace)", kc.Mode)
	}
	if kc.Linux.Conntrack.MaxPerCore == nil || *kc.Linux.Conntrack.MaxPerCore != 0 || kc.Linux.Conntrack.TCPEstablishedTimeout == nil || kc.Linux.Conntrack.TCPEstablishedTimeout.Duration != 0 {
		t.Errorf("conntrack %+v: kube-proxy would set the host's conntrack sysctls", kc.Linux.Conntrack)
	}
	if kc.HostnameOverride != "node1" || len(kc.DetectLocal.ClusterCIDRs) != 1 || kc.DetectLocal.ClusterCIDRs[0] != vars["POD_NETWORK"] {
		t.Errorf("hostnameOverride %q, clusterCIDRs %v: want node1 and the pod network %s", kc.HostnameOverride, kc.DetectLocal.ClusterCIDRs, vars["POD_NETWORK"])
	}
	for _, a := range append([]string{kc.HealthzBindAddress, kc.MetricsBindAddress}, kc.NodePortAddresses...) {
		if !strings.HasPrefix(a, vars["NODE_IP"]+":") && a != vars["NODE_IP"]+"/32" {
			t.Errorf("kube-proxy serves on %q, want only the node IP %s", a, vars["NODE_IP"])
		}
	}
}
