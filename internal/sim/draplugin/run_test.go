package draplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// TestServePublishesTheSliceAndPreparesClaims runs the plugin against a
// fake API server holding node1 and a claim allocated gpu-1 of it: the
// published ResourceSlice must be node1's, with dradriver.Slice's devices;
// a NodePrepareResources call on the plugin's socket, as the kubelet
// makes it, must write the claim's CDI spec with index 1; ending the
// context must stop the plugin without error and remove its sockets.
func TestServePublishesTheSliceAndPreparesClaims(t *testing.T) {
	base := t.TempDir()
	cfg := validConfig()
	cfg.Node = "node1"
	cfg.PluginDataDir = filepath.Join(base, "plugins", v1alpha1.DRADriver) // not there yet
	cfg.RegistrarDir = filepath.Join(base, "registry")
	cfg.CDIDir = filepath.Join(base, "cdi")
	rc := claim("uid-1", [2]string{"node1", "gpu-1"})
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node1-uid"}}, rc)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, v100, kube) }()

	var slices []resourceapi.ResourceSlice
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		slices = list.Items
		return len(slices) > 0, nil
	}); err != nil {
		select {
		case err := <-done:
			t.Fatalf("serve ended before publishing: %v", err)
		default:
		}
		t.Fatalf("no ResourceSlice published: %v", err)
	}
	s := slices[0]
	if len(slices) != 1 || s.Spec.Driver != v1alpha1.DRADriver || s.Spec.NodeName == nil || *s.Spec.NodeName != "node1" || s.Spec.Pool.Name != "node1" {
		t.Fatalf("ResourceSlices %+v, want one of driver %s, node node1, pool node1", slices, v1alpha1.DRADriver)
	}
	if want := dradriver.Slice("node1", v100, 4).Spec.Devices; !equality.Semantic.DeepEqual(s.Spec.Devices, want) {
		t.Errorf("published devices %+v, want dradriver.Slice's %+v", s.Spec.Devices, want)
	}
	inv := dra.Inventory([]*resourceapi.ResourceSlice{&s}, dra.NVIDIA)
	if nd := inv["node1"]; nd == nil || len(nd.Devices) != 4 || len(nd.Unusable) != 0 {
		t.Errorf("hetsev-scheduler's inventory of the published slice: %+v, want node1 with 4 usable GPUs", inv)
	}

	draSock := filepath.Join(cfg.PluginDataDir, "dra.sock")
	regSock := filepath.Join(cfg.RegistrarDir, v1alpha1.DRADriver+"-reg.sock")
	for _, sock := range []string{draSock, regSock} {
		if _, err := os.Stat(sock); err != nil {
			t.Errorf("socket: %v", err)
		}
	}
	conn, err := grpc.NewClient("unix://"+draSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := drapb.NewDRAPluginClient(conn).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{
		Claims: []*drapb.Claim{{Namespace: rc.Namespace, Name: rc.Name, Uid: string(rc.UID)}},
	})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	r := res.Claims["uid-1"]
	if r == nil || r.Error != "" || len(r.Devices) != 1 || r.Devices[0].DeviceName != "gpu-1" || len(r.Devices[0].CdiDeviceIds) != 1 || r.Devices[0].CdiDeviceIds[0] != "gpu.nvidia.com/claim=uid-1" {
		t.Fatalf("NodePrepareResources: %+v, want gpu-1 with CDI device gpu.nvidia.com/claim=uid-1", res.Claims)
	}
	if env := readEnv(t, cfg.CDIDir, "uid-1"); len(env) != 1 || env[0] != "NVIDIA_VISIBLE_DEVICES=1" {
		t.Errorf("CDI spec env %v, want [NVIDIA_VISIBLE_DEVICES=1]", env)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after the context ended: %v", err)
	}
	for _, sock := range []string{draSock, regSock} {
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("socket %s after stop: %v", sock, err)
		}
	}
}

// TestServeStopsCleanlyWhileTheAPIServerRefuses ends the context while
// the plugin's ResourceSlice list is refused (as the API server refuses a
// kubeconfig without the node's identity): serve must still stop without
// error, its sockets removed.
func TestServeStopsCleanlyWhileTheAPIServerRefuses(t *testing.T) {
	base := t.TempDir()
	cfg := validConfig()
	cfg.PluginDataDir = filepath.Join(base, "plugins", v1alpha1.DRADriver)
	cfg.RegistrarDir = filepath.Join(base, "registry")
	cfg.CDIDir = filepath.Join(base, "cdi")
	kube := fake.NewClientset()
	listed := make(chan struct{}, 1)
	kube.PrependReactor("list", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case listed <- struct{}{}:
		default:
		}
		return true, nil, apierrors.NewForbidden(resourceapi.Resource("resourceslices"), "", errors.New("not node1"))
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, v100, kube) }()
	select {
	case <-listed:
	case err := <-done:
		t.Fatalf("serve ended before listing ResourceSlices: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after the context ended: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.PluginDataDir, "dra.sock")); !os.IsNotExist(err) {
		t.Errorf("dra.sock after stop: %v", err)
	}
}
