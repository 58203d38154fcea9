package draplugin

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/catalog"
)

// Run serves cfg.Node's GPUs to its kubelet as the driver of
// cfg.Profile until ctx ends: it checks cfg against the default GPU catalog, connects
// with cfg.Kubeconfig, then runs as serve does. It returns nil when ctx
// ends, or the first error of validation, the kubeconfig or the start.
func Run(ctx context.Context, cfg Config) error {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		return err
	}
	t, err := cfg.Validate(cat)
	if err != nil {
		return err
	}
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	rest.UserAgent = "hetsev-e2e-draplugin/" + cfg.Node
	kube, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	return serve(ctx, cfg, t, kube)
}

// serve creates the plugin data and registrar directories, starts the
// kubeletplugin helper (the DRA gRPC service in cfg.PluginDataDir, the
// registration socket in cfg.RegistrarDir) with a Plugin for
// dradriver.ProfileSlice(cfg.Profile, cfg.Node, t, cfg.GPUCount), publishes that slice's
// devices through the helper, and stops the helper when ctx ends,
// returning nil then, also when the API server never answered. The
// helper writes the ResourceSlice in the background and retries failed
// writes; their errors are logged by Plugin.HandleError.
func serve(ctx context.Context, cfg Config, t catalog.GPUType, kube kubernetes.Interface) error {
	logger := klog.FromContext(ctx)
	slice, err := dradriver.ProfileSlice(cfg.Profile, cfg.Node, t, cfg.GPUCount)
	if err != nil {
		return err
	}
	plugin, err := New(slice, cfg.CDIDir)
	if err != nil {
		return err
	}
	// The helper listens in both directories and requires them to exist;
	// the kubelet creates its registration directory only when it starts.
	for _, dir := range []string{cfg.PluginDataDir, cfg.RegistrarDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	helper, err := kubeletplugin.Start(ctx, plugin,
		kubeletplugin.DriverName(slice.Spec.Driver),
		kubeletplugin.NodeName(cfg.Node),
		kubeletplugin.KubeClient(kube),
		kubeletplugin.PluginDataDirectoryPath(cfg.PluginDataDir),
		kubeletplugin.RegistrarDirectoryPath(cfg.RegistrarDir),
	)
	if err != nil {
		return fmt.Errorf("start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	// PublishResources waits until the helper's ResourceSlice informer has
	// listed the node's slices, as long as the API server refuses or does
	// not answer; a signal meanwhile is a clean stop.
	if err := helper.PublishResources(ctx, DriverResources(slice)); err != nil {
		if ctx.Err() != nil {
			logger.Info("Stopping before the ResourceSlice was published", "cause", context.Cause(ctx))
			return nil
		}
		return fmt.Errorf("publish the ResourceSlice: %w", err)
	}
	logger.Info("Serving the node's GPUs", "driver", slice.Spec.Driver, "node", cfg.Node,
		"gpuType", t.Name, "gpus", cfg.GPUCount, "pluginDataDir", cfg.PluginDataDir,
		"registrarDir", cfg.RegistrarDir, "cdiDir", cfg.CDIDir)
	<-ctx.Done()
	logger.Info("Stopping", "cause", context.Cause(ctx))
	return nil
}
