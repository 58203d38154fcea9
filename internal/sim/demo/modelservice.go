package demo

import (
	"context"
	"fmt"

	"github.com/hetsev/hetsev/pkg/adapter"

	"github.com/hetsev/hetsev/pkg/catalog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hetsev/hetsev/internal/cluster"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	v1 "k8s.io/api/core/v1"

	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// CreateModelService creates ms through the dynamic client.
func CreateModelService(ctx context.Context, dyn dynamic.Interface, ms *v1alpha1.ModelService) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ms)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(v1alpha1.Resource).Namespace(ms.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	return err
}

// SimService describes ms, built by modelservice.For with time compression
// compression, to the simulator (launch times back in trace seconds).
func SimService(ms *v1alpha1.ModelService, share float64, cat catalog.Catalog, compression float64) simulator.Service {
	s := simulator.Service{Namespace: ms.Namespace, Name: ms.Name, Model: ms.Spec.Model, Share: share,
		RTMaxMs: ms.Spec.SLO.ResponseTimeMs, DeadlineAware: true, BatchSize: ms.Spec.BatchSize, PerProduct: map[string]simulator.InstanceProfile{}}
	for _, p := range ms.Spec.Profiles {
		g, ok := cat.ByName(p.GPUType)
		if !ok {
			continue
		}
		ip := simulator.InstanceProfile{GPUType: g.Name, LatencyMs: p.LatencyMs, LaunchSeconds: p.LaunchSeconds * compression, PriceUSDPerH: g.PriceUSDPerHour}
		for _, pt := range p.SmallBatches {
			if ip.SmallBatchMs == nil {
				ip.SmallBatchMs = map[int]float64{}
			}
			ip.SmallBatchMs[pt.BatchSize] = pt.LatencyMs
		}
		s.PerProduct[g.ProductLabel] = ip
	}
	return s
}

// CreateDCGMExporters puts one dcgm-exporter pod on every node, as its
// DaemonSet would (bound directly: no default scheduler runs here), annotated
// for scraping on dcgm-exporter's port.
func CreateDCGMExporters(ctx context.Context, c kubernetes.Interface, nodes []string) error {
	if err := cluster.EnsureNamespace(ctx, c, cluster.SystemNamespace); err != nil {
		return err
	}
	for _, n := range nodes {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "dcgm-exporter-" + n, Namespace: cluster.SystemNamespace,
				Labels: map[string]string{"app": simulator.LabelDCGMExporter},
				Annotations: map[string]string{
					adapter.AnnotationScrape: "true",
					adapter.AnnotationPort:   fmt.Sprint(simulator.DCGMPort),
					adapter.AnnotationPath:   simulator.DCGMPath,
				},
			},
			Spec: v1.PodSpec{
				NodeName:   n,
				Containers: []v1.Container{{Name: "dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter:sim"}},
			},
		}
		if _, err := c.CoreV1().Pods(cluster.SystemNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", pod.Name, err)
		}
	}
	return nil
}
