package kubectlhetsev

import (
	"github.com/spf13/cobra"
)

// newExplainCommand is `explain pod NAME` and `explain modelservice NAME`.
func newExplainCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Explain a pod's placement or a ModelService's scaling decision",
	}
	cmd.AddCommand(newExplainPodCommand(e), newExplainModelServiceCommand(e))
	return cmd
}
