package helmchart

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/scaler"
	"github.com/hetsev/hetsev/pkg/schedulerconfig"
)

// chartDir is the chart's directory in this checkout.
func chartDir() string { return filepath.Join(cluster.RepoRoot(), Dir) }

// render renders the chart with values, failing the test on an error.
func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	ch, err := Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(ch, values)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	return objs
}

// refused checks that the chart refuses values (YAML) with an error that
// names want, the field's path.
func refused(t *testing.T, ch *chart.Chart, values, want string) {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatal(err)
	}
	_, err := Render(ch, v)
	if err == nil {
		t.Errorf("%s: accepted", values)
	} else if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error does not name %s: %v", values, want, err)
	}
}

// allValues is ci/all-values.yaml: every documented value set.
func allValues(t *testing.T) map[string]any {
	t.Helper()
	v, err := ReadValues(filepath.Join(chartDir(), "ci", "all-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Chart.yaml's version and appVersion are the repository's VERSION, and the
// default image tags are v<VERSION>, the tag `make images` gives.
func TestChartVersionIsVERSION(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	ch, err := Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != version || ch.Metadata.AppVersion != version {
		t.Errorf("Chart.yaml: version %q, appVersion %q; want both %q (VERSION)", ch.Metadata.Version, ch.Metadata.AppVersion, version)
	}
	objs := render(t, nil)
	n := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		for _, c := range containers(t, o) {
			n++
			img := c["image"].(string)
			if !strings.HasSuffix(img, ":v"+version) {
				t.Errorf("%s: image %s, want tag v%s", o.GetName(), img, version)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d containers in Deployments, want 3", n)
	}
}

// `helm lint --strict` finds nothing, with the defaults and with every value
// set.
func TestChartLints(t *testing.T) {
	for name, values := range map[string]map[string]any{"defaults": nil, "ci/all-values.yaml": allValues(t)} {
		for _, m := range Lint(chartDir(), values) {
			t.Errorf("%s: %v", name, m)
		}
	}
}

// values.schema.json refuses wrong types and out-of-range values, naming the
// field's path.
func TestChartSchemaRefusesBadValues(t *testing.T) {
	ch, err := Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		values string
		want   string // the path in the error
	}{
		{"gpuMode: foo", "/gpuMode"},
		{"scheduler: {replicas: -1}", "/scheduler/replicas"},
		{"scaler: {image: {tag: 1}}", "/scaler/image/tag"},
		{"metricsAdapter: {image: {pullPolicy: Sometimes}}", "/metricsAdapter/image/pullPolicy"},
		{"metrics: {backend: influx}", "/metrics/backend"},
		{"metrics: {backend: prometheus}", "/metrics/prometheus/url"},
		{"metrics: {prometheus: {url: 'prometheus:9090'}}", "/metrics/prometheus/url"},
		{"metrics: {prometheus: {headers: {X-Org: 7}}}", "/metrics/prometheus/headers/X-Org"},
		{"metrics: {prometheus: {headers: {X-Org: ''}}}", "/metrics/prometheus/headers/X-Org"},
		{"metrics: {prometheus: {headers: {authorization: Bearer x}}}", "invalid propertyName 'authorization'"},
		{"certificates: {mode: vault}", "/certificates/mode"},
		{"certificates: {certManager: {duration: 90d}}", "/certificates/certManager/duration"},
		{"scheduler: {gpuShare: {interferenceWeight: 1.5}}", "/scheduler/gpuShare/interferenceWeight"},
		{"scheduler: {fairQueue: {k: 0}}", "/scheduler/fairQueue/k"},
		{"scaler: {podDisruptionBudget: {minAvailable: lots}}", "/scaler/podDisruptionBudget/minAvailable"},
		{"metricsAdapter: {logLevel: 11}", "/metricsAdapter/logLevel"},
		{"namespace: {name: Hetsev_System}", "/namespace/name"},
		{"gpumode: dra", "gpumode"},
		{"dra: {driver: amd}", "/dra/driver"},
		{"scaler: {policy: {solver: ilp}}", "/scaler/policy/solver"},
		{"scaler: {policy: {flavors: '0.5;1'}}", "/scaler/policy/flavors"},
		{"scaler: {policy: {maxReplicas: -1}}", "/scaler/policy/maxReplicas"},
		{"scaler: {policy: {modelThresholds: 'yes'}}", "/scaler/policy/modelThresholds"},
		{"dra: {driver: hami, claimRequests: {memory: 1Gi}}", "memory"},
		{"dra: {driver: hami, claimRequests: {cores: lots}}", "/dra/claimRequests/cores"},
		{"scheduler: {nodeselector: {a: b}}", "nodeselector"},
	} {
		refused(t, ch, c.values, c.want)
	}
	// The documented values themselves are accepted.
	if _, err := Render(ch, allValues(t)); err != nil {
		t.Errorf("ci/all-values.yaml: %v", err)
	}
}

// ci/all-values.yaml renders every option: the Prometheus flags for both
// programs, cert-manager's objects and annotations, the DRA objects, the
// catalog, PDBs, the pods' scheduling and the monitoring objects; and no APIService skips TLS
// verification.
func TestChartRendersEveryValue(t *testing.T) {
	objs := render(t, allValues(t))
	byID := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byID[id(o)] = o
		if ns := o.GetNamespace(); ns != "" && ns != "gpu-serving" && ns != "kube-system" {
			t.Errorf("%s in namespace %s, want gpu-serving", id(o), ns)
		}
	}
	get := func(i string) *unstructured.Unstructured {
		o := byID[i]
		if o == nil {
			t.Fatalf("no %s among %v", i, keys(byID))
		}
		return o
	}
	for _, i := range []string{
		"cert-manager.io/Issuer gpu-serving/hetsev-selfsigned",
		"cert-manager.io/Certificate gpu-serving/hetsev-ca",
		"cert-manager.io/Issuer gpu-serving/hetsev-ca",
		"cert-manager.io/Certificate gpu-serving/hetsev-webhook-serving-cert",
		"cert-manager.io/Certificate gpu-serving/hetsev-metrics-adapter-serving-cert",
		"resource.k8s.io/DeviceClass shared-gpu.hetsev.io",
		"rbac.authorization.k8s.io/ClusterRole hetsev-scheduler-dra",
		"policy/PodDisruptionBudget gpu-serving/hetsev-scheduler",
		"policy/PodDisruptionBudget gpu-serving/hetsev-metrics-adapter",
		"policy/PodDisruptionBudget gpu-serving/hetsev-scaler",
		"/ConfigMap gpu-serving/hetsev-gpu-catalog",
		"monitoring.coreos.com/PodMonitor gpu-serving/hetsev-scheduler",
		"monitoring.coreos.com/PodMonitor gpu-serving/hetsev-metrics-adapter",
		"monitoring.coreos.com/PodMonitor gpu-serving/hetsev-scaler",
		"monitoring.coreos.com/PrometheusRule gpu-serving/hetsev",
		"/ConfigMap gpu-serving/hetsev-grafana-dashboard",
	} {
		get(i)
	}
	pm := get("monitoring.coreos.com/PodMonitor gpu-serving/hetsev-scaler")
	ep := nested(t, pm, "spec")["podMetricsEndpoints"].([]any)[0].(map[string]any)
	if pm.GetLabels()["release"] != "kube-prometheus-stack" || ep["interval"] != "15s" || ep["scrapeTimeout"] != "5s" || ep["relabelings"] == nil || ep["metricRelabelings"] == nil {
		t.Errorf("PodMonitor hetsev-scaler: labels %v, endpoint %v", pm.GetLabels(), ep)
	}
	rule := get("monitoring.coreos.com/PrometheusRule gpu-serving/hetsev")
	if raw, _ := json.Marshal(rule.Object); !strings.Contains(string(raw), `"team":"ml-serving"`) {
		t.Errorf("PrometheusRule hetsev without the alert label team: %s", raw)
	}
	if cm := get("/ConfigMap gpu-serving/hetsev-grafana-dashboard"); cm.GetAnnotations()["grafana_folder"] != "hetsev" || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap: labels %v, annotations %v", cm.GetLabels(), cm.GetAnnotations())
	}
	for i := range byID {
		if strings.Contains(i, "APIService") {
			t.Errorf("%s rendered with metricsAdapter.apiService.enabled false", i)
		}
		if strings.Contains(i, "hetsev-scaler-webhook-certificate") {
			t.Errorf("%s rendered with certificates.mode certManager", i)
		}
	}
	whc := get("admissionregistration.k8s.io/MutatingWebhookConfiguration hetsev-scheduler-selection")
	if got := whc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "gpu-serving/hetsev-webhook-serving-cert" {
		t.Errorf("webhook configuration inject-ca-from %q", got)
	}
	prom := []string{
		"--prometheus-url=https://prometheus.monitoring.svc:9091",
		"--prometheus-bearer-token-file=/var/run/hetsev/prometheus-token/token",
		"--prometheus-ca-file=/var/run/hetsev/prometheus-ca/service-ca.crt",
		"--prometheus-header=X-Request-Source=hetsev",
		"--prometheus-header=X-Scope-OrgID=gpu-team",
		"--gpu-mode=dra",
	}
	for name, want := range map[string][]string{
		"hetsev-scaler": append([]string{"--metrics-backend=prometheus", "--webhook-self-signed=false",
			"--webhook-cert-dir=/var/run/webhook-cert", "--gpu-catalog=/etc/hetsev-catalog/gpu_catalog.csv",
			"--leader-elect-namespace=gpu-serving", "--webhook-cert-hosts=hetsev-webhook.gpu-serving.svc", "--v=3",
			"--gpu-runtime-class=nvidia-cdi", "--traffic-split=false", "--namespace=ml-serving", "--cluster-domain=cluster.example",
			"--decision-history=25"}, prom...),
		"hetsev-metrics-adapter": append([]string{"--backend=prometheus", "--tls-cert-file=/var/run/serving-cert/tls.crt",
			"--scrape-interval=10s", "--rate-window=2m", "--prometheus-namespace-label=kubernetes_namespace",
			"--prometheus-pod-label=kubernetes_pod_name", "--prometheus-node-label=node"}, prom...),
		"hetsev-scheduler": {"--v=4"},
	} {
		d := get("apps/Deployment gpu-serving/" + name)
		c := containers(t, d)[0]
		args := strings.Join(toStrings(c["args"]), "\n") + "\n"
		for _, a := range want {
			if !strings.Contains(args, a+"\n") {
				t.Errorf("%s: no %s in\n%s", name, a, args)
			}
		}
		if !strings.HasPrefix(c["image"].(string), "registry.internal:5000/hetsev/") || c["imagePullPolicy"] != "Always" {
			t.Errorf("%s: image %v %v", name, c["image"], c["imagePullPolicy"])
		}
		spec := nested(t, d, "spec", "template", "spec")
		if spec["priorityClassName"] != "system-cluster-critical" || spec["nodeSelector"] == nil || spec["tolerations"] == nil {
			t.Errorf("%s: pod scheduling values missing: %v", name, spec)
		}
		if fmt.Sprint(spec["imagePullSecrets"]) != "[map[name:registry-credentials]]" {
			t.Errorf("%s: imagePullSecrets %v", name, spec["imagePullSecrets"])
		}
	}
	cfg := schedulerConfig(t, get("/ConfigMap gpu-serving/hetsev-scheduler-config"))
	args := cfg["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[1].(map[string]any)["args"].(map[string]any)
	if args["gpuMode"] != "dra" || args["gpuPool"] != false || args["fit"] != "BestFit" || args["maxBusyShare"] != 0.9 {
		t.Errorf("HetsevGPUShare args %v", args)
	}
	// Never an unverified APIService, whatever the values.
	for _, values := range []map[string]any{nil, {"certificates": map[string]any{"mode": "certManager"}}} {
		for _, o := range render(t, values) {
			if o.GetKind() == "APIService" {
				if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "insecureSkipTLSVerify"); found {
					t.Errorf("%s sets insecureSkipTLSVerify", o.GetName())
				}
			}
		}
	}
}

// TestChartLeavesOtherAPIServicesAlone: with the built-in certificates and
// no APIService of hetsev's (prometheus-adapter serves
// custom.metrics.k8s.io), the adapter is told to patch no APIService and
// gets no permission to; its certificate names the Service in the
// namespace the chart installs to.
func TestChartLeavesOtherAPIServicesAlone(t *testing.T) {
	objs := render(t, map[string]any{"namespace": map[string]any{"name": "gpu-serving"},
		"metricsAdapter": map[string]any{"apiService": map[string]any{"enabled": false}}})
	for _, o := range objs {
		if o.GetKind() == "APIService" || strings.HasSuffix(o.GetName(), ":apiservices") {
			t.Errorf("%s rendered with metricsAdapter.apiService.enabled false", id(o))
		}
		if o.GetKind() == "Deployment" && o.GetName() == "hetsev-metrics-adapter" {
			args := strings.Join(toStrings(containers(t, o)[0]["args"]), "\n") + "\n"
			for _, a := range []string{"--cert-self-signed", "--cert-apiservices=", "--cert-hosts=hetsev-metrics-adapter.gpu-serving.svc"} {
				if !strings.Contains(args, a+"\n") {
					t.Errorf("hetsev-metrics-adapter: no %s in\n%s", a, args)
				}
			}
		}
	}
}

// The rendered scheduler config is read, strictly and validated, by the
// same loader hetsev-scaler reads --scheduler-config with, and holds the
// HetsevGPUShare arguments the values set.
func TestChartSchedulerConfigLoads(t *testing.T) {
	for _, c := range []struct {
		name                    string
		values                  map[string]any
		fit, gpuMode            string
		gpuPool                 bool
		maxBusyShare, interfere float64
	}{
		{"defaults", nil, "WorstFit", "annotations", true, 1, 0.5},
		{"ci/all-values.yaml", allValues(t), "BestFit", "dra", false, 0.9, 0.25},
	} {
		var cm *unstructured.Unstructured
		for _, o := range render(t, c.values) {
			if o.GetKind() == "ConfigMap" && o.GetName() == "hetsev-scheduler-config" {
				cm = o
			}
		}
		if cm == nil {
			t.Fatalf("%s: no ConfigMap hetsev-scheduler-config", c.name)
		}
		s, _, _ := unstructured.NestedString(cm.Object, "data", "scheduler-config.yaml")
		f := filepath.Join(t.TempDir(), "scheduler-config.yaml")
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := schedulerconfig.LoadFile(f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if a.Fit != c.fit || a.GPUMode != c.gpuMode || a.GPUPool == nil || *a.GPUPool != c.gpuPool || a.MaxBusyShare == nil || *a.MaxBusyShare != c.maxBusyShare ||
			a.InterferenceWeight == nil || *a.InterferenceWeight != c.interfere {
			t.Errorf("%s: HetsevGPUShare args %+v", c.name, a.HetsevGPUShareArgs)
		}
	}
}

// With the default values the chart renders the objects of `kustomize
// build manifests/`, and with gpuMode dra those of overlays/dra, apart from
// the labels and annotations only Helm adds.
func TestChartDefaultsEqualKustomize(t *testing.T) {
	for _, c := range []struct {
		kustomization string
		values        map[string]any
	}{
		{"manifests", nil},
		{"overlays/dra", map[string]any{"gpuMode": "dra"}},
	} {
		t.Run(c.kustomization, func(t *testing.T) {
			want, err := cluster.BuildKustomization(filepath.Join(cluster.RepoRoot(), c.kustomization))
			if err != nil {
				t.Fatal(err)
			}
			wantByID := normalize(t, want, true)
			gotByID := normalize(t, render(t, c.values), false)
			for i, w := range wantByID {
				g, ok := gotByID[i]
				if !ok {
					t.Errorf("chart does not render %s", i)
					continue
				}
				if !reflect.DeepEqual(w, g) {
					t.Errorf("%s differs (-kustomize +chart):\n%s", i, cmp.Diff(w, g))
				}
			}
			for i := range gotByID {
				if _, ok := wantByID[i]; !ok {
					t.Errorf("chart renders %s, kustomize build %s does not", i, c.kustomization)
				}
			}
		})
	}
}

// helmOnlyLabels are the labels the chart adds to say which release owns an
// object.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}

// normalize keys objs by id and strips what only one side has: Helm's
// labels and the pod templates' checksum annotations (chart). ConfigMap values that
// are YAML files are decoded, so comments and layout do not count. Values
// go through JSON, so that numbers compare as numbers.
func normalize(t *testing.T, objs []*unstructured.Unstructured, kustomize bool) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range objs {
		o = jsonCopy(t, o)
		stripHelm(o.Object, "metadata")
		if tmpl, ok, _ := unstructured.NestedMap(o.Object, "spec", "template"); ok {
			stripHelm(tmpl, "metadata")
			if a, ok, _ := unstructured.NestedStringMap(tmpl, "metadata", "annotations"); ok {
				for k := range a {
					if strings.HasPrefix(k, "checksum/") {
						delete(a, k)
					}
				}
				setOrDelete(tmpl, a, "metadata", "annotations")
			}
			if err := unstructured.SetNestedMap(o.Object, tmpl, "spec", "template"); err != nil {
				t.Fatal(err)
			}
		}
		if o.GetKind() == "ConfigMap" {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for k, v := range data {
				if strings.HasSuffix(k, ".yaml") {
					var doc any
					if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
						t.Fatalf("%s: %s: %v", id(o), k, err)
					}
					if err := unstructured.SetNestedField(o.Object, doc, "data", k); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if _, dup := out[id(o)]; dup {
			t.Errorf("%s rendered twice", id(o))
		}
		out[id(o)] = jsonCopy(t, o).Object
	}
	return out
}

// jsonCopy copies o through JSON: numbers become float64, whichever
// decoder produced them (kustomize's gives int, which DeepCopy refuses).
func jsonCopy(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	raw, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func stripHelm(obj map[string]any, fields ...string) {
	if a, ok, _ := unstructured.NestedStringMap(obj, append(fields, "annotations")...); ok {
		delete(a, "helm.sh/resource-policy") // the CRD's crds.keep
		setOrDelete(obj, a, append(fields, "annotations")...)
	}
	l, ok, _ := unstructured.NestedStringMap(obj, append(fields, "labels")...)
	if !ok {
		return
	}
	for _, k := range helmOnlyLabels {
		delete(l, k)
	}
	setOrDelete(obj, l, append(fields, "labels")...)
}

func setOrDelete(obj map[string]any, m map[string]string, fields ...string) {
	if len(m) == 0 {
		unstructured.RemoveNestedField(obj, fields...)
		return
	}
	_ = unstructured.SetNestedStringMap(obj, m, fields...)
}

// id is "group/Kind namespace/name" (no namespace for cluster objects).
func id(o *unstructured.Unstructured) string {
	s := o.GroupVersionKind().Group + "/" + o.GetKind() + " "
	if o.GetNamespace() != "" {
		s += o.GetNamespace() + "/"
	}
	return s + o.GetName()
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var k []string
	for i := range m {
		k = append(k, i)
	}
	sort.Strings(k)
	return k
}

func nested(t *testing.T, o *unstructured.Unstructured, fields ...string) map[string]any {
	t.Helper()
	m, ok, err := unstructured.NestedMap(o.Object, fields...)
	if !ok || err != nil {
		t.Fatalf("%s: no %v: %v", id(o), fields, err)
	}
	return m
}

func containers(t *testing.T, d *unstructured.Unstructured) []map[string]any {
	t.Helper()
	cs, ok, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if !ok || err != nil {
		t.Fatalf("%s: no containers: %v", id(d), err)
	}
	var out []map[string]any
	for _, c := range cs {
		out = append(out, c.(map[string]any))
	}
	return out
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func schedulerConfig(t *testing.T, cm *unstructured.Unstructured) map[string]any {
	t.Helper()
	s, _, _ := unstructured.NestedString(cm.Object, "data", "scheduler-config.yaml")
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(s), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The dra values configure one driver everywhere: the DeviceClass selects
// its full GPUs (dra.Driver.DeviceClassSelector), hetsev-scheduler's
// arguments load as that driver, and hetsev-scaler and
// hetsev-metrics-adapter get the same --dra-driver flags.
func TestChartDRADriverValues(t *testing.T) {
	hami, err := dra.Profile(dra.ProfileHAMi)
	if err != nil {
		t.Fatal(err)
	}
	hami30 := hami
	hami30.ClaimRequests = map[resourceapi.QualifiedName]resource.Quantity{"cores": resource.MustParse("30")}
	custom := dra.Driver{Name: "gpu.example.com", GPUType: "full"}
	for _, c := range []struct {
		name   string
		dra    map[string]any
		driver dra.Driver
		args   []string
	}{
		{"default", nil, dra.NVIDIA, nil},
		{"hami", map[string]any{"driver": "hami"}, hami, []string{"--dra-driver=hami"}},
		{"hami, 30 cores", map[string]any{"driver": "hami", "claimRequests": map[string]any{"cores": "30"}}, hami30, []string{"--dra-driver=hami", "--dra-claim-requests=cores=30"}},
		{"overrides", map[string]any{"driver": "nvidia", "driverName": "gpu.example.com", "gpuType": "full"}, custom, []string{"--dra-driver-name=gpu.example.com", "--dra-gpu-type=full"}},
	} {
		values := map[string]any{"gpuMode": "dra"}
		if c.dra != nil {
			values["dra"] = c.dra
		}
		objs := render(t, values)
		byID := map[string]*unstructured.Unstructured{}
		for _, o := range objs {
			byID[id(o)] = o
		}
		class := byID["resource.k8s.io/DeviceClass shared-gpu.hetsev.io"]
		if class == nil {
			t.Fatalf("%s: no DeviceClass; have %v", c.name, keys(byID))
		}
		sel, _, _ := unstructured.NestedSlice(class.Object, "spec", "selectors")
		if len(sel) != 1 || sel[0].(map[string]any)["cel"].(map[string]any)["expression"] != c.driver.DeviceClassSelector() {
			t.Errorf("%s: DeviceClass selectors %v, want %q", c.name, sel, c.driver.DeviceClassSelector())
		}
		s, _, _ := unstructured.NestedString(byID["/ConfigMap hetsev-system/hetsev-scheduler-config"].Object, "data", "scheduler-config.yaml")
		f := filepath.Join(t.TempDir(), "scheduler-config.yaml")
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := schedulerconfig.LoadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !a.Driver.Equal(c.driver) {
			t.Errorf("%s: scheduler's driver %s, want %s", c.name, a.Driver, c.driver)
		}
		for _, d := range []string{"apps/Deployment hetsev-system/hetsev-scaler", "apps/Deployment hetsev-system/hetsev-metrics-adapter"} {
			var got []string
			for _, a := range toStrings(containers(t, byID[d])[0]["args"]) {
				if strings.HasPrefix(a, "--dra-") {
					got = append(got, a)
				}
			}
			if !reflect.DeepEqual(got, c.args) {
				t.Errorf("%s: %s's DRA driver flags %v, want %v", c.name, d, got, c.args)
			}
		}
	}
}

// scaler.policy reaches hetsev-scaler as its flags, each only when it
// differs from the flag's default, and hetsev-scaler parses them into the
// policy the values name: the chart's defaults are hetsev-scaler's.
func TestChartScalerPolicyValues(t *testing.T) {
	all := scaler.DefaultDefaults
	all.Solver, all.SLOCheck, all.Replacement, all.Consolidation, all.ReplicaCeiling = "heuristic", "model", true, true, 40
	none := scaler.DefaultDefaults
	none.ModelThresholds, none.SeasonalForecast, none.Flavors = false, false, heterogeneity.Flavors{1}
	for _, c := range []struct {
		policy map[string]any
		want   []string
		parsed scaler.Defaults
	}{
		{nil, nil, scaler.DefaultDefaults},
		{map[string]any{"solver": "heuristic", "sloCheck": "model", "modelThresholds": true, "seasonalForecast": true,
			"flavors": "0.1,0.25,0.5,1", "replacement": true, "consolidation": true, "maxReplicas": 40},
			[]string{"--solver=heuristic", "--slo-check=model", "--replacement", "--consolidation", "--max-replicas=40"}, all},
		{map[string]any{"modelThresholds": false, "seasonalForecast": false, "flavors": "1"},
			[]string{"--model-thresholds=false", "--seasonal-forecast=false", "--flavors=1"}, none},
	} {
		values := map[string]any{}
		if c.policy != nil {
			values["scaler"] = map[string]any{"policy": c.policy}
		}
		var args []string
		for _, o := range render(t, values) {
			if o.GetKind() == "Deployment" && o.GetName() == "hetsev-scaler" {
				args = toStrings(containers(t, o)[0]["args"])
			}
		}
		var got []string
		for _, a := range args {
			for _, f := range []string{"--solver", "--slo-check", "--model-thresholds", "--seasonal-forecast", "--flavors", "--replacement", "--consolidation", "--max-replicas"} {
				if a == f || strings.HasPrefix(a, f+"=") {
					got = append(got, a)
				}
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("policy %v: scaler flags %v, want %v", c.policy, got, c.want)
		}
		o := scaler.NewOptions()
		fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(got); err != nil {
			t.Errorf("policy %v: hetsev-scaler refuses %v: %v", c.policy, got, err)
		}
		if !reflect.DeepEqual(o.Defaults, c.parsed) {
			t.Errorf("policy %v: hetsev-scaler's defaults %+v, want %+v", c.policy, o.Defaults, c.parsed)
		}
	}
}

// admissionPolicy: off renders neither the policy nor its binding;
// selectors scope the binding beside its two exemptions; the runtime
// classes become the policy's nvidiaRuntimeClasses; the schema refuses a
// runtime class that is no object name and an unknown selector operator.
func TestChartAdmissionPolicyValues(t *testing.T) {
	kinds := func(values map[string]any) map[string]*unstructured.Unstructured {
		out := map[string]*unstructured.Unstructured{}
		for _, o := range render(t, values) {
			if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
				out[o.GetKind()] = o
			}
		}
		return out
	}
	if got := kinds(nil); len(got) != 2 {
		t.Fatalf("defaults: %d policy objects, want the policy and its binding", len(got))
	}
	if got := kinds(map[string]any{"admissionPolicy": map[string]any{"enabled": false}}); len(got) != 0 {
		t.Errorf("enabled false: %v rendered", got)
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte(`admissionPolicy:
  namespaceSelector: {matchLabels: {tenant: gpu}, matchExpressions: [{key: team, operator: In, values: [a, b]}]}
  objectSelector: {matchLabels: {app: inference}}
  nvidiaRuntimeClasses: [nvidia, nvidia-cdi]
`), &v); err != nil {
		t.Fatal(err)
	}
	got := kinds(v)
	b := got["ValidatingAdmissionPolicyBinding"]
	ns, _, _ := unstructured.NestedMap(b.Object, "spec", "matchResources", "namespaceSelector")
	exprs := fmt.Sprint(ns["matchExpressions"])
	if !strings.Contains(exprs, "kube-system") || !strings.Contains(exprs, "exempt") || !strings.Contains(exprs, "key:team") || fmt.Sprint(ns["matchLabels"]) != "map[tenant:gpu]" {
		t.Errorf("namespaceSelector %v, want the exemptions, team In [a b] and tenant=gpu", ns)
	}
	if obj, _, _ := unstructured.NestedMap(b.Object, "spec", "matchResources", "objectSelector"); fmt.Sprint(obj) != "map[matchLabels:map[app:inference]]" {
		t.Errorf("objectSelector %v", obj)
	}
	vars, _, _ := unstructured.NestedSlice(got["ValidatingAdmissionPolicy"].Object, "spec", "variables")
	found := false
	for _, x := range vars {
		m := x.(map[string]any)
		if m["name"] == "nvidiaRuntimeClasses" {
			found = true
			if m["expression"] != "['nvidia', 'nvidia-cdi']" {
				t.Errorf("nvidiaRuntimeClasses = %v", m["expression"])
			}
		}
	}
	if !found {
		t.Error("no variable nvidiaRuntimeClasses")
	}
	// The scaler's runtime class joins them: its pods run NVIDIA's runtime.
	v["scaler"] = map[string]any{"gpuRuntimeClass": "nvidia-legacy"}
	vars, _, _ = unstructured.NestedSlice(kinds(v)["ValidatingAdmissionPolicy"].Object, "spec", "variables")
	for _, x := range vars {
		if m := x.(map[string]any); m["name"] == "nvidiaRuntimeClasses" && m["expression"] != "['nvidia', 'nvidia-cdi', 'nvidia-legacy']" {
			t.Errorf("with scaler.gpuRuntimeClass nvidia-legacy: nvidiaRuntimeClasses = %v", m["expression"])
		}
	}
	ch, err := Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ values, want string }{
		{"admissionPolicy: {nvidiaRuntimeClasses: [\"nvidia'] || true || ['\"]}", "/admissionPolicy/nvidiaRuntimeClasses/0"},
		{"admissionPolicy: {nvidiaRuntimeClasses: []}", "/admissionPolicy/nvidiaRuntimeClasses"},
		{"admissionPolicy: {namespaceSelector: {matchExpressions: [{key: a, operator: Maybe}]}}", "/admissionPolicy/namespaceSelector/matchExpressions/0/operator"},
		{"admissionPolicy: {enabled: 'no'}", "/admissionPolicy/enabled"},
		{"scaler: {gpuRuntimeClass: 'Nvidia CDI'}", "/scaler/gpuRuntimeClass"},
		{"scaler: {decisionHistory: 101}", "/scaler/decisionHistory"},
		{"metrics: {prometheus: {labels: {pod: 'pod-name'}}}", "/metrics/prometheus/labels/pod"},
	} {
		refused(t, ch, c.values, c.want)
	}
}

// namespace.name "" puts every namespaced object, and every name that
// holds the namespace (certificate hosts, the Lease's namespace), in the
// release's namespace, which the chart does not render.
func TestChartReleaseNamespace(t *testing.T) {
	objs := render(t, map[string]any{"namespace": map[string]any{"name": ""}})
	namespaced := 0
	for _, o := range objs {
		// The RoleBindings to the authentication reader live in
		// kube-system, beside its Role, and the HPA controller's service
		// account is there.
		if ns := o.GetNamespace(); ns != "" && ns != "kube-system" {
			namespaced++
			if ns != "default" {
				t.Errorf("%s: namespace %q, want the release's, default", id(o), ns)
			}
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if ns, _ := s.(map[string]any)["namespace"].(string); ns != "" && ns != "default" && ns != "kube-system" {
				t.Errorf("%s: subject in namespace %q, want default", id(o), ns)
			}
		}
		// Helm keeps the release's records in its namespace: the chart
		// must not own it, or helm uninstall deletes them with it.
		if o.GetKind() == "Namespace" {
			t.Errorf("renders Namespace %s, the release's", o.GetName())
		}
		if o.GetKind() == "Deployment" {
			args := strings.Join(toStrings(containers(t, o)[0]["args"]), "\n")
			if strings.Contains(args, "hetsev-system") {
				t.Errorf("%s names hetsev-system in its args:\n%s", id(o), args)
			}
		}
	}
	if namespaced < 10 {
		t.Errorf("%d namespaced objects, want the programs'", namespaced)
	}
}
