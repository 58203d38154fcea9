package scaler

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// DeploymentName is the Deployment serving ms on one GPU type, e.g.
// "resnet50-t4" or "resnet50-v100-32gb".
func DeploymentName(ms, gpuType string) string {
	return strings.ToLower(ms + "-" + strings.NewReplacer(" ", "-", "_", "-", ".", "-").Replace(gpuType))
}

// desiredDeployment builds the Deployment of one GPU type: the service's pod
// template, pinned to the type's nodes by GFD's product label, scheduled by
// hetsev-scheduler, with the hetsev annotations the scheduler needs and
// NVIDIA_VISIBLE_DEVICES read from the GPU index the scheduler writes.
func desiredDeployment(s *service, p gpuProfile, replicas int32) *appsv1.Deployment {
	ms := s.obj
	name := DeploymentName(ms.Name, p.gpuType.Name)
	sel := map[string]string{v1alpha1.LabelModelService: ms.Name, v1alpha1.LabelGPUType: strings.ToLower(strings.ReplaceAll(p.gpuType.Name, " ", "-"))}
	tpl := *ms.Spec.Template.DeepCopy()
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	for k, v := range sel {
		tpl.Labels[k] = v
	}
	if tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	tpl.Annotations[v1alpha1.AnnotationModel] = ms.Spec.Model
	tpl.Annotations[v1alpha1.AnnotationGPUMemory] = fmt.Sprintf("%dMi", p.gpuMemMiB)
	tpl.Spec.SchedulerName = v1alpha1.SchedulerName
	if tpl.Spec.NodeSelector == nil {
		tpl.Spec.NodeSelector = map[string]string{}
	}
	tpl.Spec.NodeSelector[gpuinventory.LabelGPUProduct] = p.gpuType.ProductLabel
	for i := range tpl.Spec.Containers {
		c := &tpl.Spec.Containers[i]
		gpuinventory.SetVisibleDevices(c)
		if i == 0 {
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			if p.spec.CPU != "" {
				c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(p.spec.CPU)
			}
			if p.spec.Memory != "" {
				c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(p.spec.Memory)
			}
		}
	}
	isController := true
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ms.Namespace,
			Labels:    sel,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind,
				Name: ms.Name, UID: ms.UID, Controller: &isController,
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: tpl,
		},
	}
}
