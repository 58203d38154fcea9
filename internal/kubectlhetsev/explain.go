package kubectlhetsev

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newExplainCommand is `explain pod NAME` and `explain modelservice NAME`.
func newExplainCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Explain a pod's placement or a ModelService's scaling decision",
	}
	pod := &cobra.Command{
		Use:   "pod NAME",
		Short: "Where a pod runs (node, GPU, predicted inflation, neighbours) and why, or why it is Pending",
	}
	model := addInterferenceModelFlag(pod)
	cmd.AddCommand(
		explainCommand(e, pod, func(ctx context.Context, c client.Reader, namespace, name string) (*PodExplanation, error) {
			m, err := loadInterferenceModel(*model)
			if err != nil {
				return nil, err
			}
			return explainPod(ctx, c, namespace, name, m)
		}),
		explainCommand(e, &cobra.Command{
			Use:     "modelservice NAME",
			Aliases: []string{"modelservices", "ms"},
			Short:   "A ModelService's SLO attainment, last scaling decisions, conditions, replicas per GPU type, arrival rate, saturation and events",
		}, ExplainModelService))
	return cmd
}

// explanation is what an explain subcommand prints: as a table (its text)
// or, for -o json|yaml, as itself.
type explanation interface{ writeText(io.Writer) error }

// explainCommand completes cmd (its use and help set) into `explain KIND
// NAME`: explain reads the object NAME in the flags' namespace, and the
// answer is written as -o asks.
func explainCommand[T explanation](e *env, cmd *cobra.Command, explain func(context.Context, client.Reader, string, string) (T, error)) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		ns, c, err := e.namespaced()
		if err != nil {
			return err
		}
		x, err := explain(cmd.Context(), c, ns, args[0])
		if err != nil {
			return err
		}
		return write(e.out, *format, x, x.writeText)
	}
	return cmd
}
