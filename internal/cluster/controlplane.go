package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager.
type ControlPlane struct {
	Config     *rest.Config
	Client     kubernetes.Interface
	Kubeconfig string // path of a kubeconfig file for subprocesses
	Dir        string // working directory for logs and files

	etcd      *embed.Etcd
	apiserver kubeapiservertesting.TestServer
	cancelKCM context.CancelFunc
	kcmDone   chan struct{}
	nodes     *nodePKI // with NodeAccess
}

// Options change what StartControlPlaneWith starts; the zero value is
// StartControlPlane's loopback-only control plane.
type Options struct {
	// Nodes, when set, opens the API server to real kubelets on a bridge.
	Nodes *NodeAccess
}

// KCMControllers are the kube-controller-manager controllers hetsev needs:
// Deployments create ReplicaSets and pods, HPA scales on custom metrics,
// garbage collection deletes owned objects, and the service-account
// controller creates the default service accounts pods need, and the
// resource-claim controller creates pods' ResourceClaims from their
// templates and frees (deallocates or deletes) those of deleted pods (GPU
// mode dra), and the namespace controller empties and removes deleted
// namespaces (the install guide's Uninstall deletes hetsev-system and waits), and
// the ClusterRole aggregation controller adds the rules of ClusterRoles
// labelled aggregate-to-view/edit/admin (manifests/user-roles.yaml) to the
// built-in view, edit and admin.
var KCMControllers = "deployment-controller,replicaset-controller,garbage-collector-controller,horizontal-pod-autoscaler-controller,serviceaccount-controller,resourceclaim-controller,namespace-controller,clusterrole-aggregation-controller"

// StartControlPlane starts etcd, kube-apiserver (with the aggregation layer's
// front-proxy certificates, for the metrics adapter) and
// kube-controller-manager, all on 127.0.0.1.
func StartControlPlane(ctx context.Context, tb ktesting.TB, dir string) (*ControlPlane, error) {
	return StartControlPlaneWith(ctx, tb, dir, Options{})
}

// StartControlPlaneWith is StartControlPlane with options.
func StartControlPlaneWith(ctx context.Context, tb ktesting.TB, dir string, o Options) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: dir}
	start := time.Now()
	e, etcdURL, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	cp.etcd = e

	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	opts.EnableCertAuth = true // front-proxy client certs, for aggregated APIs
	args := []string{
		"--bind-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		// No node-lifecycle controller runs to lift the not-ready taint this
		// plugin would put on new nodes; kwok reports them Ready instead.
		"--disable-admission-plugins=TaintNodesByCondition",
	}
	if o.Nodes == nil {
		// As in a real cluster (the test server's default is AlwaysAllow), so
		// programs run as their service accounts get only manifests/' RBAC.
		args = append(args, "--authorization-mode=RBAC")
	} else {
		cp.nodes = &nodePKI{access: *o.Nodes}
		extra, err := cp.nodes.apiserverArgs(filepath.Join(dir, "pki"))
		if err != nil {
			cp.etcd.Close()
			return nil, err
		}
		args = append(args, extra...)
	}
	srv, err := kubeapiservertesting.StartTestServer(tb, opts, args, storage)
	if err != nil {
		cp.etcd.Close()
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	cp.apiserver = srv
	cp.Config = rest.CopyConfig(srv.ClientConfig)
	cp.Config.QPS, cp.Config.Burst = 200, 400
	cp.Client, err = kubernetes.NewForConfig(cp.Config)
	if err != nil {
		cp.Stop()
		return nil, err
	}
	if cp.nodes != nil {
		if err := cp.nodes.startRelay(cp.Config.Host); err != nil {
			cp.Stop()
			return nil, err
		}
		if err := cp.nodes.publishKubernetesEndpoints(ctx, cp.Client); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(cp.Config, cp.Kubeconfig); err != nil {
		cp.Stop()
		return nil, err
	}
	if err := cp.startKCM(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	if err := WaitForServiceAccount(ctx, cp.Client, "default"); err != nil {
		cp.Stop()
		return nil, err
	}
	klog.InfoS("control plane ready", "apiserver", cp.Config.Host, "took", time.Since(start).Round(time.Millisecond))
	return cp, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file. The test apiserver's
// loopback certificate is issued for the name in cfg.ServerName, which
// becomes tls-server-name.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	return clientcmd.WriteToFile(*kc, path)
}

// startKCM runs kube-controller-manager in process, as its command would,
// with a fresh component registry so several control planes can share a
// test binary one after another.
func (cp *ControlPlane) startKCM(ctx context.Context) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	ev := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	ev.SetEmulationVersion(featureGate.EmulationVersion())
	ev.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	reg := compatibility.NewComponentGlobalsRegistry()
	if err := reg.Register(compatibility.DefaultKubeComponent, ev, featureGate); err != nil {
		return err
	}
	s.ComponentGlobalsRegistry = reg
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	controllers, extra := KCMControllers, []string(nil)
	if cp.nodes != nil {
		// Real kubelets mount kube-root-ca.crt into every pod's projected
		// service account volume; the publisher writes it in each namespace.
		// kube-proxy on the nodes reads Services' EndpointSlices.
		controllers += ",root-ca-certificate-publisher-controller,endpointslice-controller,endpoints-controller"
		extra = append(extra, "--root-ca-file="+cp.nodes.caFile)
	}
	if err := fs.Parse(append([]string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--horizontal-pod-autoscaler-sync-period=2s",
		"--horizontal-pod-autoscaler-downscale-stabilization=10s",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
	}, extra...)); err != nil {
		return fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	// Run registers its config in a process-wide registry; a control plane
	// started earlier in this process (tests) must not block this one.
	configz.Delete(kcmapp.ConfigzName)
	kctx, cancel := context.WithCancel(ctx)
	c, err := s.Config(kctx, all, disabled, aliases)
	if err != nil {
		cancel()
		return fmt.Errorf("kube-controller-manager config: %w", err)
	}
	cp.cancelKCM = cancel
	cp.kcmDone = make(chan struct{})
	go func() {
		defer close(cp.kcmDone)
		if err := kcmapp.Run(kctx, c.Complete()); err != nil && kctx.Err() == nil {
			klog.ErrorS(err, "kube-controller-manager exited")
		}
	}()
	return nil
}

// Stop tears everything down in reverse order.
func (cp *ControlPlane) Stop() {
	if cp.cancelKCM != nil {
		cp.cancelKCM()
		select {
		case <-cp.kcmDone:
		case <-time.After(10 * time.Second):
		}
		configz.Delete(kcmapp.ConfigzName)
	}
	if cp.nodes != nil {
		cp.nodes.stop()
	}
	if cp.apiserver.TearDownFn != nil {
		cp.apiserver.TearDownFn()
	}
	if cp.etcd != nil {
		cp.etcd.Close()
	}
}

func mustMkdir(dir string) error { return os.MkdirAll(dir, 0o755) }
