package helmchart

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Each program's escape hatches reach its Deployment and ServiceAccount
// beside what the chart renders, a security-context key replaces the
// chart's one key only, a digest replaces the tag and global.imageRegistry
// the registry of every image.
func TestChartEscapeHatches(t *testing.T) {
	const hatches = `
extraArgs: [--kube-api-qps=50]
extraEnv: [{name: GODEBUG, value: "http2client=0"}]
extraVolumes: [{name: extra-ca, configMap: {name: corp-ca}}]
extraVolumeMounts: [{name: extra-ca, mountPath: /etc/corp-ca, readOnly: true}]
podLabels: {team: ml-platform}
podAnnotations: {sidecar.istio.io/inject: "false"}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
serviceAccount: {annotations: {iam.gke.io/gcp-service-account: hetsev@p.iam.gserviceaccount.com}}
podSecurityContext: {runAsUser: 1000}
securityContext: {readOnlyRootFilesystem: false}
image: {digest: "sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}
`
	var h map[string]any
	if err := yaml.Unmarshal([]byte(hatches), &h); err != nil {
		t.Fatal(err)
	}
	comps := map[string]string{"scheduler": "hetsev-scheduler", "metricsAdapter": "hetsev-metrics-adapter", "scaler": "hetsev-scaler"}
	values := map[string]any{"global": map[string]any{"imageRegistry": "registry.internal:5000"}}
	for c := range comps {
		values[c] = h
	}
	objs := render(t, values)
	for _, name := range comps {
		var d, sa *unstructured.Unstructured
		for _, o := range objs {
			if o.GetName() == name && o.GetKind() == "Deployment" {
				d = o
			}
			if o.GetName() == name && o.GetKind() == "ServiceAccount" {
				sa = o
			}
		}
		if d == nil || sa == nil {
			t.Fatalf("%s: Deployment %v, ServiceAccount %v", name, d != nil, sa != nil)
		}
		c := containers(t, d)[0]
		args := toStrings(c["args"])
		if args[len(args)-1] != "--kube-api-qps=50" || len(args) < 2 {
			t.Errorf("%s: args %v, want the chart's then --kube-api-qps=50", name, args)
		}
		if env := fmt.Sprint(c["env"]); !strings.Contains(env, "GODEBUG") {
			t.Errorf("%s: env %s", name, env)
		}
		mounts := fmt.Sprint(c["volumeMounts"])
		if !strings.Contains(mounts, "/etc/corp-ca") || !strings.Contains(mounts, "mountPath:/tmp") {
			t.Errorf("%s: volumeMounts %s, want the chart's and /etc/corp-ca", name, mounts)
		}
		spec := nested(t, d, "spec", "template", "spec")
		if vols := fmt.Sprint(spec["volumes"]); !strings.Contains(vols, "corp-ca") || !strings.Contains(vols, "name:tmp") {
			t.Errorf("%s: volumes %s", name, vols)
		}
		if tsc := fmt.Sprint(spec["topologySpreadConstraints"]); !strings.Contains(tsc, "topology.kubernetes.io/zone") {
			t.Errorf("%s: topologySpreadConstraints %s", name, tsc)
		}
		meta := nested(t, d, "spec", "template", "metadata")
		if l := meta["labels"].(map[string]any); l["team"] != "ml-platform" || l["app.kubernetes.io/name"] != name {
			t.Errorf("%s: pod labels %v", name, l)
		}
		if a, _ := meta["annotations"].(map[string]any); a["sidecar.istio.io/inject"] != "false" {
			t.Errorf("%s: pod annotations %v", name, a)
		}
		psc := spec["securityContext"].(map[string]any)
		if fmt.Sprint(psc["runAsUser"]) != "1000" || psc["runAsNonRoot"] != true {
			t.Errorf("%s: pod securityContext %v, want runAsUser 1000 and the chart's runAsNonRoot", name, psc)
		}
		sc := c["securityContext"].(map[string]any)
		if sc["readOnlyRootFilesystem"] != false || sc["allowPrivilegeEscalation"] != false {
			t.Errorf("%s: container securityContext %v", name, sc)
		}
		if img := c["image"].(string); img != "registry.internal:5000/hetsev/"+name+"@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
			t.Errorf("%s: image %s", name, img)
		}
		if a := sa.GetAnnotations(); a["iam.gke.io/gcp-service-account"] == "" {
			t.Errorf("%s: ServiceAccount annotations %v", name, a)
		}
	}
	// global.imageRegistry alone keeps the tag.
	for _, o := range render(t, map[string]any{"global": map[string]any{"imageRegistry": "mirror.example.com"}}) {
		if o.GetKind() == "Deployment" && o.GetName() == "hetsev-scaler" {
			if img := containers(t, o)[0]["image"].(string); !strings.HasPrefix(img, "mirror.example.com/hetsev/hetsev-scaler:v") {
				t.Errorf("imageRegistry alone: image %s", img)
			}
		}
	}
	ch, err := Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ values, want string }{
		{"scaler: {extraArgs: [leader-elect=false]}", "/scaler/extraArgs/0"},
		{"scheduler: {extraEnv: [{value: x}]}", "/scheduler/extraEnv/0"},
		{"metricsAdapter: {extraVolumeMounts: [{name: a, mountPath: relative}]}", "/metricsAdapter/extraVolumeMounts/0/mountPath"},
		{"scaler: {image: {digest: 'sha256:xyz'}}", "/scaler/image/digest"},
		{"scaler: {podLabels: {a: 1}}", "/scaler/podLabels/a"},
		{"scaler: {serviceAccount: {name: other}}", "/scaler/serviceAccount"},
		{"global: {imageRegistry: 'https://r.example.com'}", "/global/imageRegistry"},
	} {
		refused(t, ch, c.values, c.want)
	}
}

// A PodDisruptionBudget is rendered for a program with more than one
// replica: by default the scaler's (its webhook fails closed), and the
// scheduler's once it runs two; never for one replica, where a budget
// either blocks every drain or allows anything.
func TestChartPodDisruptionBudgetsFollowReplicas(t *testing.T) {
	pdbs := func(values map[string]any) []string {
		var out []string
		for _, o := range render(t, values) {
			if o.GetKind() == "PodDisruptionBudget" {
				out = append(out, o.GetName())
			}
		}
		return out
	}
	if got := fmt.Sprint(pdbs(nil)); got != "[hetsev-scaler]" {
		t.Errorf("defaults: PodDisruptionBudgets %s, want the scaler's only", got)
	}
	two := map[string]any{"scheduler": map[string]any{"replicas": 2}, "scaler": map[string]any{"replicas": 1}}
	if got := fmt.Sprint(pdbs(two)); got != "[hetsev-scheduler]" {
		t.Errorf("scheduler 2 replicas, scaler 1: PodDisruptionBudgets %s, want the scheduler's only", got)
	}
	off := map[string]any{"scaler": map[string]any{"podDisruptionBudget": map[string]any{"enabled": false}}}
	if got := pdbs(off); len(got) != 0 {
		t.Errorf("scaler's budget off: %v rendered", got)
	}
}
