package kubectlhetsev

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of every subcommand's -o.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// addOutputFlag registers -o/--output on cmd and returns its value.
func addOutputFlag(cmd *cobra.Command) *string {
	o := outputTable
	cmd.Flags().StringVarP(&o, "output", "o", o, "output format: table, json or yaml")
	return &o
}

// checkOutput refuses an unknown output format before any request.
func checkOutput(format string) error {
	switch format {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o table, json or yaml", format)
}

// write prints v in format, with table for -o table.
func write(w io.Writer, format string, v any, table func(io.Writer) error) error {
	switch format {
	case outputTable:
		return table(w)
	case outputJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return checkOutput(format)
}
