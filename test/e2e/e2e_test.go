//go:build e2e

// Package e2e runs hetsev on the local control plane with real nodes: a
// kubelet with containerd and runc per node, in network namespaces on a
// bridge that hack/e2e/run.sh (`make e2e`) creates and removes.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// modelServerImage is the e2e model server's image (hack/e2e/modelserver,
// built by `make e2e-binaries`), imported into every node, never pulled.
const modelServerImage = "localhost:5000/hetsev-e2e/e2e-modelserver:v1"

// env is one run: the control plane and its real nodes.
type env struct {
	cp    *cluster.ControlPlane
	nodes []*realNode
}

func setup(t *testing.T) (context.Context, *env) {
	t.Helper()
	dir := e2eDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	vars := addresses(t)
	if err := os.MkdirAll(filepath.Join(dir, "control-plane"), 0o755); err != nil {
		t.Fatal(err)
	}
	logToFile(t, filepath.Join(dir, "control-plane", "control-plane.log"))
	cp, err := cluster.StartControlPlaneWith(ctx, ktesting.Init(t), filepath.Join(dir, "control-plane"), cluster.Options{
		Nodes: &cluster.NodeAccess{HostIP: net.ParseIP(vars["HOST_IP"]), Port: 6443, ServiceCIDR: vars["SERVICE_CIDR"]},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	archives, err := filepath.Glob(filepath.Join(cluster.BinDir(), "e2e-images", "*.oci.tar"))
	if err != nil || len(archives) == 0 {
		t.Fatalf("no image archives in bin/e2e-images (run make e2e-binaries): %v", err)
	}
	if err := cluster.CreateNvidiaRuntimeClass(ctx, cp.Client); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cp: cp}
	for i, typ := range []string{"V100-32GB", "T4"} {
		g, ok := cat.ByName(typ)
		if !ok {
			t.Fatalf("catalog has no %s", typ)
		}
		n := newRealNode(t, cp, i+1, gpuLabels(g, gpusPerNode))
		n.GPUType = g
		n.start(t, ctx, archives)
		e.nodes = append(e.nodes, n)
	}
	for _, n := range e.nodes {
		took := waitNodeReady(ctx, t, cp.Client, n.Name, 2*time.Minute)
		t.Logf("node %s (%d %s) Ready after %v", n.Name, gpusPerNode, n.GPUType.Name, took.Round(100*time.Millisecond))
		n.startKubeProxy(ctx, t)
	}
	return ctx, e
}

// gpusPerNode is each real node's GPU count.
const gpusPerNode = 2

// TestE2E runs every check on one set-up: the control plane and the real
// nodes take seconds to start, the tests below minutes. The scheduler
// checks run hetsev-scheduler as a host process, each in its GPU mode;
// the scaler check installs the Helm chart, whose admission policy lets
// only the installed scheduler write GPU assignments, so it comes after
// them.
func TestE2E(t *testing.T) {
	ctx, e := setup(t)
	t.Run("pods", func(t *testing.T) { testPods(ctx, t, e) })
	t.Run("scheduler-annotations", func(t *testing.T) { testSchedulerAnnotations(ctx, t, e) })
	t.Run("scheduler-dra", func(t *testing.T) { testSchedulerDRA(ctx, t, e) })
	t.Run("scaler", func(t *testing.T) { testScaler(ctx, t, e, v1alpha1.GPUModeAnnotations) })
	t.Run("scaler-dra", func(t *testing.T) { testScaler(ctx, t, e, v1alpha1.GPUModeDRA) })
}

// testPods: a pod on each real node starts through the kubelet, reads the
// GPU index annotation through the downward API, and answers on its pod IP.
func testPods(ctx context.Context, t *testing.T, e *env) {
	defer deletePods(ctx, t, e, "e2e=smoke")
	for i, n := range e.nodes {
		pod := modelServerPod(fmt.Sprintf("smoke-%s", n.Name), n.Name, fmt.Sprint(i))
		pod.Labels["e2e"] = "smoke"
		start := time.Now()
		if _, err := e.cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ip := waitPodReady(ctx, t, e, pod.Name, 2*time.Minute)
		t.Logf("pod %s on %s Ready after %v at %s", pod.Name, n.Name, time.Since(start).Round(100*time.Millisecond), ip)
		var got struct {
			Pod, Node, GPUIndex string
		}
		getJSON(ctx, t, "http://"+net.JoinHostPort(ip, "8080")+"/gpu", &got)
		if got.Pod != pod.Name || got.Node != n.Name || got.GPUIndex != fmt.Sprint(i) {
			t.Errorf("pod %s reports pod %q node %q gpu index %q; want %q %q %q", pod.Name, got.Pod, got.Node, got.GPUIndex, pod.Name, n.Name, fmt.Sprint(i))
		}
	}
}

// modelServerPod is a model-server pod; node and gpuIndex are set when not
// empty.
func modelServerPod(name, node, gpuIndex string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr(int64(10)),
			Containers: []v1.Container{{
				Name:            "server",
				Image:           modelServerImage,
				ImagePullPolicy: v1.PullNever,
				Args:            []string{"--service-ms=20", "--load-ms=1000", "--drain-delay=1s"},
				Ports:           []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env: []v1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "NODE_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					{Name: "HETSEV_GPU_INDEX", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{
						FieldPath: "metadata.annotations['" + v1alpha1.AnnotationGPUIndex + "']"}}},
				},
				ReadinessProbe: &v1.Probe{
					ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz/ready", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	if gpuIndex != "" {
		p.Annotations = map[string]string{v1alpha1.AnnotationGPUIndex: gpuIndex}
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// logToFile sends klog (the in-process control plane's log) to file only,
// so the test's output is its own.
func logToFile(t *testing.T, file string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := kfs.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(f)
	t.Cleanup(func() { klog.Flush(); f.Close() })
}

// waitPodReady waits for the pod's Ready condition and returns its IP.
func waitPodReady(ctx context.Context, t *testing.T, e *env, name string, timeout time.Duration) string {
	t.Helper()
	var ip string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.cp.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				ip = p.Status.PodIP
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		dumpPod(ctx, t, e, name)
		t.Fatalf("pod %s not Ready within %v: %v", name, timeout, err)
	}
	return ip
}

// dumpPod logs a pod's status and events, for a failure.
func dumpPod(ctx context.Context, t *testing.T, e *env, name string) {
	p, err := e.cp.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		b, _ := json.MarshalIndent(p.Status, "", "  ")
		t.Logf("pod %s status: %s", name, b)
	}
	evs, err := e.cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err == nil {
		for _, ev := range evs.Items {
			t.Logf("event %s %s: %s", ev.Type, ev.Reason, ev.Message)
		}
	}
}

func getJSON(ctx context.Context, t *testing.T, url string, v any) {
	t.Helper()
	if err := fetchJSON(ctx, url, v); err != nil {
		t.Fatal(err)
	}
}

// fetchJSON GETs url and decodes its JSON answer into v.
func fetchJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
