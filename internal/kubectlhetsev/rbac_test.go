package kubectlhetsev

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
)

// userRoles reads the ClusterRoles of manifests/user-roles.yaml by name.
func userRoles(t *testing.T) map[string]*rbacv1.ClusterRole {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "manifests", "user-roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
			t.Fatalf("manifests/user-roles.yaml: %v", err)
		}
		roles[r.Name] = &r
	}
	return roles
}

// grants reports whether rules allow verb on group/resource (no
// wildcards: the roles name what they grant).
func grants(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	has := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		if has(r.Verbs, verb) && has(r.APIGroups, group) && has(r.Resources, resource) {
			return true
		}
	}
	return false
}

// ClusterRole hetsev-viewer, which the Forbidden message tells users to
// be bound to, grants every get and list each command makes, and no
// resource that none reads.
func TestViewerRoleGrantsWhatThePluginReads(t *testing.T) {
	role := userRoles(t)[viewerRole]
	if role == nil {
		t.Fatalf("manifests/user-roles.yaml has no ClusterRole %s", viewerRole)
	}
	read := map[string]bool{} // "verb group/resource"
	var c client.Client
	note := func(verb string, obj runtime.Object) {
		gvk, err := apiutil.GVKForObject(obj, c.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		resource := strings.ToLower(strings.TrimSuffix(gvk.Kind, "List")) + "s"
		if strings.HasSuffix(resource, "sss") { // DeviceClass: deviceclasses
			resource = strings.TrimSuffix(resource, "s") + "es"
		}
		read[verb+" "+gvk.Group+"/"+resource] = true
	}
	ms := &v1alpha1.ModelService{}
	ms.Name, ms.Namespace = "resnet", "default"
	c = newFake(&interceptor.Funcs{
		Get: func(ctx context.Context, w client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			note("get", obj)
			return w.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, w client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			note("list", list)
			return w.List(ctx, list, opts...)
		},
	}, append(append(annotationCluster(), ms), draNodeWithClass(t)...)...)
	for _, args := range [][]string{
		{"gpus"}, {"gpus", "--node", "t4-0"},
		{"explain", "pod", "s0"}, {"explain", "pod", "pending"},
		{"explain", "modelservice", "resnet"},
	} {
		if _, errOut, code := runWith(c, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	granted := map[string]bool{}
	for k := range read {
		verb, gr, _ := strings.Cut(k, " ")
		group, resource, _ := strings.Cut(gr, "/")
		if !grants(role.Rules, verb, group, resource) {
			t.Errorf("kubectl-hetsev does %s, ClusterRole %s does not grant it", k, viewerRole)
		}
		granted[gr] = true
	}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if !granted[g+"/"+res] {
					t.Errorf("ClusterRole %s grants %s/%s, which kubectl-hetsev never reads", viewerRole, g, res)
				}
			}
		}
	}
	if t.Failed() {
		keys := make([]string, 0, len(read))
		for k := range read {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Logf("reads: %v", keys)
	}
}

// draNodeWithClass is a node of GPU mode dra: its ResourceSlice and
// hetsev's DeviceClass.
func draNodeWithClass(t *testing.T) []client.Object {
	t.Helper()
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	return []client.Object{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dra-0"}}, dradriver.Slice("dra-0", t4, 2), shippedDeviceClass(t)}
}
