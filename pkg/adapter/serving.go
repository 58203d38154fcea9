package adapter

import corev1 "k8s.io/api/core/v1"

// Serving says whether pod takes traffic: Ready, and not being deleted (a
// terminating pod leaves its Service's endpoints). The adapter withholds a
// Deployment's or ModelService's value while one of its serving pods has
// no data, and the scaler counts the measured share of the serving pods
// by the same rule.
func Serving(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
