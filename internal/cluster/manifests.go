package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// BuildKustomization renders a kustomization directory as `kubectl
// kustomize` would (the kustomize library kubectl embeds).
func BuildKustomization(dir string) ([]*unstructured.Unstructured, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		mp, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: mp})
	}
	return objs, nil
}

// ReadManifests decodes every object of a multi-document YAML file.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// Applier server-side applies objects to a control plane with strict field
// validation, so an unknown or misspelt field is an error, as with
// `kubectl apply --server-side --validate=strict`.
type Applier struct {
	Dynamic dynamic.Interface
	crds    apiextclient.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier makes an Applier for cp.
func NewApplier(cp *ControlPlane) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	crds, err := apiextclient.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	return &Applier{Dynamic: dyn, crds: crds, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// Apply applies objs in kubectl's order of dependencies: namespaces and CRDs
// first (waiting until the CRDs are served), then everything else. ns is
// the namespace of namespaced objects that name none. It returns each
// object's "Kind namespace/name" as applied.
func (a *Applier) Apply(ctx context.Context, ns string, objs []*unstructured.Unstructured) ([]string, error) {
	first := func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition"
	}
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return first(sorted[i]) && !first(sorted[j]) })
	var applied []string
	crdsDone := false
	for _, o := range sorted {
		if !first(o) && !crdsDone {
			if err := a.waitCRDs(ctx, sorted); err != nil {
				return applied, err
			}
			crdsDone = true
		}
		id, err := a.applyOne(ctx, ns, o)
		if err != nil {
			return applied, err
		}
		applied = append(applied, id)
	}
	return applied, nil
}

func (a *Applier) applyOne(ctx context.Context, ns string, o *unstructured.Unstructured) (string, error) {
	gvk := o.GroupVersionKind()
	var m *meta.RESTMapping
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			a.mapper.Reset() // a CRD or APIService just added
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("%s %s: no such resource on the API server", gvk, o.GetName())
	}
	var ri dynamic.ResourceInterface = a.Dynamic.Resource(m.Resource)
	id := gvk.Kind + " " + o.GetName()
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			o = o.DeepCopy()
			o.SetNamespace(ns)
		}
		ri = a.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace())
		id = gvk.Kind + " " + o.GetNamespace() + "/" + o.GetName()
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return "", err
	}
	force := true
	if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		FieldManager: "hetsev-manifests-test", Force: &force, FieldValidation: "Strict",
	}); err != nil {
		return "", fmt.Errorf("applying %s: %w", id, err)
	}
	return id, nil
}

// Delete deletes objs in the reverse of Apply's order (everything else,
// then CRDs and namespaces), as `helm uninstall` or `kubectl delete -f`
// would, with background propagation; objects already gone are skipped.
// ns is the namespace of namespaced objects that name none. It returns
// each deleted object's "Kind namespace/name".
func (a *Applier) Delete(ctx context.Context, ns string, objs []*unstructured.Unstructured) ([]string, error) {
	last := func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition"
	}
	sorted := make([]*unstructured.Unstructured, 0, len(objs))
	for i := len(objs) - 1; i >= 0; i-- {
		sorted = append(sorted, objs[i])
	}
	sort.SliceStable(sorted, func(i, j int) bool { return !last(sorted[i]) && last(sorted[j]) })
	var deleted []string
	policy := metav1.DeletePropagationBackground
	for _, o := range sorted {
		gvk := o.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return deleted, fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = a.Dynamic.Resource(m.Resource)
		id := gvk.Kind + " " + o.GetName()
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			on := o.GetNamespace()
			if on == "" {
				on = ns
			}
			ri = a.Dynamic.Resource(m.Resource).Namespace(on)
			id = gvk.Kind + " " + on + "/" + o.GetName()
		}
		if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return deleted, fmt.Errorf("deleting %s: %w", id, err)
		}
		deleted = append(deleted, id)
	}
	return deleted, nil
}

// waitCRDs waits until every CRD among objs is Established.
func (a *Applier) waitCRDs(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := waitEstablished(ctx, a.crds, o.GetName()); err != nil {
			return err
		}
	}
	a.mapper.Reset()
	return nil
}

// KubeconfigAs writes a kubeconfig that impersonates user (for example a
// service account, "system:serviceaccount:NS:NAME", whose groups the API
// server adds), so a program runs with exactly the RBAC the manifests grant
// that identity. It returns the file's path.
func (cp *ControlPlane) KubeconfigAs(user string) (string, error) {
	kc, err := clientcmd.LoadFromFile(cp.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = user
	}
	path := filepath.Join(cp.Dir, "kubeconfig-"+strings.NewReplacer(":", "_", "/", "_").Replace(user))
	return path, clientcmd.WriteToFile(*kc, path)
}
