package v1alpha1

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{Kind, Kind + "List"} {
		gvk := GroupVersion.WithKind(kind)
		if !s.Recognizes(gvk) {
			t.Errorf("scheme does not recognize %v", gvk)
		}
	}
	gvks, _, err := s.ObjectKinds(&ModelService{})
	if err != nil || len(gvks) != 1 || gvks[0] != GroupVersion.WithKind(Kind) {
		t.Errorf("ObjectKinds(ModelService) = %v, %v", gvks, err)
	}
}

// The generated DeepCopy shares nothing with the original, the status'
// maps, conditions and last decision included.
func TestStatusDeepCopy(t *testing.T) {
	st := ModelServiceStatus{
		Replicas:       map[string]int32{"T4": 1},
		TrafficWeights: map[string]int32{"T4": 100},
		LastDecision:   &Decision{Action: "ScaleOut", Delta: map[string]int32{"T4": 1}},
		Conditions:     []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}},
	}
	cp := st.DeepCopy()
	cp.Replicas["T4"] = 2
	cp.TrafficWeights["T4"] = 50
	cp.LastDecision.Delta["T4"] = 3
	cp.Conditions[0].Status = metav1.ConditionFalse
	if st.Replicas["T4"] != 1 || st.TrafficWeights["T4"] != 100 || st.LastDecision.Delta["T4"] != 1 || st.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("DeepCopy shares state with the original: %+v", st)
	}
}

// The generated CRD agrees with the names in wellknown.go and types.go
// (the +groupName marker in doc.go is not checked by the compiler).
func TestCRDNames(t *testing.T) {
	raw, err := os.ReadFile("../../../manifests/crd-modelservice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != GroupName || crd.Spec.Names.Kind != Kind || crd.Spec.Names.Plural != Resource.Resource ||
		crd.Name != Resource.Resource+"."+GroupName {
		t.Errorf("CRD %s: group %q, kind %q, plural %q; want %q, %q, %q", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Names.Plural, GroupName, Kind, Resource.Resource)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersion.Version || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
		t.Errorf("CRD versions %+v; want %s, served and stored", crd.Spec.Versions, GroupVersion.Version)
	}
}

// The schema's defaults (+kubebuilder:default markers) are the constants
// of defaults.go, which hetsev-scaler applies to what it reads.
func TestCRDDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../../manifests/crd-modelservice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	scaling := spec.Properties["scaling"]
	for field, want := range map[string]float64{
		"intervalSeconds":        DefaultIntervalSeconds,
		"scaleOutPeriodSeconds":  DefaultScaleOutPeriodSeconds,
		"scaleInIntervalSeconds": DefaultScaleInIntervalSeconds,
		"scaleInCoolDownSeconds": DefaultScaleInCoolDownSeconds,
		"scaleInHysteresis":      DefaultScaleInHysteresis,
		"lambda":                 DefaultLambda,
		"minReplicas":            DefaultMinReplicas,
	} {
		checkDefault(t, "spec.scaling."+field, scaling.Properties[field].Default, want)
	}
	// The saturation threshold has no schema default: unset, hetsev-scaler
	// applies DefaultSaturationThreshold or derives one from the SLO
	// latency model (--model-thresholds), which a stored default would hide.
	if d := scaling.Properties["saturationThreshold"].Default; d != nil {
		t.Errorf("spec.scaling.saturationThreshold has schema default %s, want none", d.Raw)
	}
	checkDefault(t, "spec.servicePort", spec.Properties["servicePort"].Default, DefaultServicePort)
	if d := scaling.Default; d == nil || string(d.Raw) != "{}" {
		t.Errorf("spec.scaling has default %v, want {} (so that its fields' defaults apply when it is absent)", d)
	}
}

// readCRD is the generated ModelService CRD and its file's bytes.
func readCRD(t *testing.T) (*apiextv1.CustomResourceDefinition, []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../../manifests/crd-modelservice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd, raw
}

// kubectlAnnotationLimit is the most bytes a Kubernetes object's
// annotations may hold together (apimachinery's TotalAnnotationSizeLimitB,
// 256 KiB); kubectl's client-side apply stores the applied object's JSON
// in its last-applied-configuration annotation.
const kubectlAnnotationLimit = 262144

// TestCRDSize: the CRD file, and the compact JSON kubectl apply keeps of
// it, stay under the annotation limit, so that `kubectl apply -f` (not
// only --server-side) installs it (hack/crdtrim trims the pod template's
// descriptions for it).
func TestCRDSize(t *testing.T) {
	crd, raw := readCRD(t)
	if len(raw) >= kubectlAnnotationLimit {
		t.Errorf("manifests/crd-modelservice.yaml is %d bytes, want under %d", len(raw), kubectlAnnotationLimit)
	}
	js, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) >= kubectlAnnotationLimit {
		t.Errorf("the CRD's JSON is %d bytes, want under %d", len(js), kubectlAnnotationLimit)
	}
}

// TestCRDModelPattern: spec.model takes the model names hetsev ships
// profiles for and refuses a "/", by which a cluster-wide "a/resnet50"
// would pose as namespace a's resnet50 (gpuinventory.Demand.Identity).
func TestCRDModelPattern(t *testing.T) {
	crd, _ := readCRD(t)
	pattern := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["model"].Pattern
	if pattern == "" {
		t.Fatal("spec.model has no pattern")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("spec.model pattern %q: %v", pattern, err)
	}
	for _, m := range []string{"resnet50", "ssd-resnet50", "bert-large", "resnet50_v1.5", "BERT", "m"} {
		if !re.MatchString(m) {
			t.Errorf("spec.model pattern %q refuses %q", pattern, m)
		}
	}
	for _, m := range []string{"a/resnet50", "/resnet50", "resnet50/", "-resnet50", "resnet 50"} {
		if re.MatchString(m) {
			t.Errorf("spec.model pattern %q takes %q", pattern, m)
		}
	}
}

func checkDefault(t *testing.T, field string, got *apiextv1.JSON, want float64) {
	t.Helper()
	var v float64
	if got == nil || json.Unmarshal(got.Raw, &v) != nil || v != want {
		t.Errorf("%s: schema default %v, want %v", field, got, want)
	}
}

// TestCRDScalingLimits: a ModelService cannot load the control plane
// without bound: spec.scaling.intervalSeconds is at least
// MinIntervalSeconds (below 1 ns it rounded to 0 and the service never
// decided again), and
// spec.scaling.flavors names at most 8 flavors (each a Deployment per GPU
// type and a status column).
func TestCRDScalingLimits(t *testing.T) {
	crd, _ := readCRD(t)
	scaling := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["scaling"]
	iv := scaling.Properties["intervalSeconds"]
	if iv.Minimum == nil || *iv.Minimum != MinIntervalSeconds || iv.ExclusiveMinimum {
		t.Errorf("intervalSeconds minimum %v (exclusive %t), want %v inclusive", iv.Minimum, iv.ExclusiveMinimum, MinIntervalSeconds)
	}
	re, err := regexp.Compile(scaling.Properties["flavors"].Pattern)
	if err != nil {
		t.Fatal(err)
	}
	eight, nine := "0.1,0.2,0.3,0.4,0.5,0.6,0.7,1", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,1"
	if !re.MatchString(eight) || !re.MatchString("1") || re.MatchString(nine) {
		t.Errorf("flavors pattern %q: 8 flavors %t, 1 flavor %t, 9 flavors %t; want true, true, false",
			re, re.MatchString(eight), re.MatchString("1"), re.MatchString(nine))
	}
}

// TestCRDColumnsFitStatus: every column a ModelService can have (one per
// GPU profile and flavor) fits a decision's status.decisions[].types, or
// every status write of such a service would fail on its maxItems.
func TestCRDColumnsFitStatus(t *testing.T) {
	crd, _ := readCRD(t)
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	profiles := props["spec"].Properties["profiles"]
	types := props["status"].Properties["lastDecision"].Properties["types"]
	if profiles.MaxItems == nil || types.MaxItems == nil {
		t.Fatalf("spec.profiles maxItems %v, status.lastDecision.types maxItems %v; want both set", profiles.MaxItems, types.MaxItems)
	}
	re, err := regexp.Compile(props["spec"].Properties["scaling"].Properties["flavors"].Pattern)
	if err != nil {
		t.Fatal(err)
	}
	flavors := 0 // the most flavors the pattern admits
	for n, list := 1, "1"; n <= 64; n, list = n+1, "0.5,"+list {
		if re.MatchString(list) {
			flavors = n
		}
	}
	if cols := *profiles.MaxItems * int64(flavors); cols > *types.MaxItems {
		t.Errorf("%d profiles x %d flavors = %d columns; status.lastDecision.types holds %d", *profiles.MaxItems, flavors, cols, *types.MaxItems)
	}
}
