package kubectlhetsev

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/sim/evaluate"
)

// newWhatIfCommand is `what-if`: internal/sim/evaluate with
// hetsev-evaluate's own flags (parsed by Go's flag package, as
// hetsev-evaluate parses them), e.g. --trace my.csv, plus -o. -o table
// prints the evaluator's tables and RESULT line; -o json and yaml print
// the evaluation.json it writes under --out.
func newWhatIfCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "what-if [hetsev-evaluate flags]",
		Short: "Replay a trace under hetsev and its peers (hetsev-evaluate's flags, e.g. --trace my.csv)",
		Long: `Replay a request trace in simulated time under default Kubernetes, hetsev and a
lower bound, with hetsev-evaluate's flags (run "kubectl hetsev what-if -h" for
them), e.g. --trace my.csv. -o json or yaml prints evaluation.json.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhatIf(args, e.out, e.errOut)
		},
	}
}

// runWhatIf parses args as hetsev-evaluate does and runs the evaluator.
func runWhatIf(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("kubectl hetsev what-if", flag.ContinueOnError)
	fs.SetOutput(errOut)
	o := evaluate.DefaultOptions()
	o.AddFlags(fs)
	format := outputTable
	fs.StringVar(&format, "o", format, "output format: table, json (evaluation.json) or yaml")
	fs.StringVar(&format, "output", format, "output format: table, json (evaluation.json) or yaml")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("what-if takes flags only, not %q", fs.Args())
	}
	if err := checkOutput(format); err != nil {
		return err
	}
	if format == outputTable {
		return evaluate.Run(o, out)
	}
	if err := evaluate.Run(o, errOut); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(o.Out, "evaluation.json"))
	if err != nil {
		return err
	}
	if format == outputYAML {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
	}
	_, err = out.Write(b)
	return err
}
