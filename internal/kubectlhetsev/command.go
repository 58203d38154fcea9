package kubectlhetsev

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// env is what every subcommand runs with: where it writes, and how it
// reaches the API server.
type env struct {
	out, errOut io.Writer
	// flags are kubectl's connection flags (--kubeconfig, --context,
	// -n/--namespace, ...), as every kubectl plugin takes them.
	flags *genericclioptions.ConfigFlags
	// newClient builds the API client; nil: from flags. Tests give a fake.
	newClient func() (client.Client, error)
}

// client returns the API client.
func (e *env) client() (client.Client, error) {
	if e.newClient != nil {
		return e.newClient()
	}
	cfg, err := e.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return NewClient(cfg)
}

// namespaced returns the namespace (-n/--namespace, else the kubeconfig
// context's, else "default") and the API client.
func (e *env) namespaced() (string, client.Client, error) {
	ns, _, err := e.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", nil, err
	}
	if ns == "" {
		ns = "default"
	}
	c, err := e.client()
	return ns, c, err
}

// Scheme holds the types kubectl-hetsev reads: client-go's (nodes, pods,
// events, ResourceClaims and ResourceSlices) and ModelService.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// NewClient is a controller-runtime client of cfg's API server with
// Scheme's types, for PrintGPUs and the plugin's subcommands.
func NewClient(cfg *rest.Config) (client.Client, error) {
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

// Main runs the plugin with args (without the program name), writing to
// stdout and stderr, and returns the exit status: 0, or 1 after printing
// the error.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, nil)
}

// run is Main with the API client's constructor (nil: from the flags).
func run(args []string, stdout, stderr io.Writer, newClient func() (client.Client, error)) int {
	e := &env{out: stdout, errOut: stderr, flags: genericclioptions.NewConfigFlags(true), newClient: newClient}
	cmd := newRootCommand(e)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// newRootCommand is `kubectl hetsev` with its subcommands.
func newRootCommand(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-hetsev",
		Short: "Inspect hetsev's GPU sharing, placements and scaling decisions",
		Long: `kubectl hetsev answers day-two questions about hetsev:
  gpus                       who shares which GPU, and how much it slows them
  explain pod NAME           where a pod runs and why, or why it is Pending
  explain modelservice NAME  the scaler's last decision and why
  what-if                    replay a trace under hetsev (hetsev-evaluate's flags)
  profile MODELSERVICE       measure a running model server for the ModelService's profile`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Plugins are invoked as `kubectl hetsev ...`.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl hetsev"},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	e.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newGPUsCommand(e), newExplainCommand(e), newWhatIfCommand(e), newProfileCommand(e))
	return root
}
