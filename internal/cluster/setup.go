package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// SystemNamespace is where hetsev's own objects live.
const SystemNamespace = v1alpha1.SystemNamespace

// InstallCRDs applies manifests/crd-*.yaml and waits until they are served.
func InstallCRDs(ctx context.Context, cp *ControlPlane) error {
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "manifests", "crd-*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in manifests/ (%v)", err)
	}
	cs, err := apiextclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD from %s: %w", f, err)
		}
		if err := waitEstablished(ctx, cs, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

// InstallIstioCRDs installs Istio's CRDs (bin/istio-crds.yaml, copied by
// `make build` from the istio.io/api module) so the scaler writes real
// VirtualServices and DestinationRules.
func InstallIstioCRDs(ctx context.Context, cp *ControlPlane) error {
	f, err := os.Open(filepath.Join(BinDir(), "istio-crds.yaml"))
	if err != nil {
		return fmt.Errorf("%w (run `make build`)", err)
	}
	defer f.Close()
	cs, err := apiextclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var names []string
	for {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("istio-crds.yaml: %w", err)
		}
		if crd.Name == "" {
			continue
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	for _, n := range names {
		if err := waitEstablished(ctx, cs, n); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, cs apiextclient.Interface, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}

// EnsureNamespace creates ns if missing and waits for its default service
// account, which the ServiceAccount admission plugin requires of every pod
// and kube-controller-manager creates shortly after the namespace.
func EnsureNamespace(ctx context.Context, c kubernetes.Interface, ns string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return WaitForServiceAccount(ctx, c, ns)
}

// WaitForServiceAccount waits until ns/default exists.
func WaitForServiceAccount(ctx context.Context, c kubernetes.Interface, ns string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("service account %s/default not created: %w", ns, err)
	}
	return nil
}
