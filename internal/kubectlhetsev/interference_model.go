package kubectlhetsev

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hetsev/hetsev/pkg/interference"
)

// addInterferenceModelFlag adds --interference-model to cmd: the
// co-location model file the inflation now is predicted with ("": the
// fitted model).
func addInterferenceModelFlag(cmd *cobra.Command) *string {
	var path string
	cmd.Flags().StringVar(&path, "interference-model", "", "co-location model file to predict the inflation now with, as hetsev-scheduler's interferenceModelFile (a local copy of it); empty: the fitted model, the scheduler's default")
	return &path
}

// loadInterferenceModel loads --interference-model's file.
func loadInterferenceModel(path string) (interference.Colocation, error) {
	m, err := interference.LoadColocation(path)
	if err != nil {
		return interference.Colocation{}, fmt.Errorf("--interference-model: %w", err)
	}
	return m, nil
}
