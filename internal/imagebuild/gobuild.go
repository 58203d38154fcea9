package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// VersionVar is the variable the linker sets to the version.
const VersionVar = "github.com/hetsev/hetsev/pkg/version.Version"

// BuildBinary builds the main package pkg (relative to moduleRoot) for
// platform ("linux/amd64") into out: a static binary (CGO_ENABLED=0)
// without symbols or build paths (-trimpath, -s -w) and without VCS stamps
// (-buildvcs=false), so the same tree and Go toolchain give the same bytes,
// with the version linked into pkg/version. goTool is the go command
// ("go" when empty). The error carries go build's output.
func BuildBinary(ctx context.Context, goTool, moduleRoot, pkg, platform, version, out string) error {
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok || goos == "" || goarch == "" {
		return fmt.Errorf("platform %q: want GOOS/GOARCH, e.g. linux/amd64", platform)
	}
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.CommandContext(ctx, goTool, "build",
		"-trimpath", "-buildvcs=false",
		"-ldflags", fmt.Sprintf("-s -w -X %s=%s", VersionVar, version),
		"-o", out, pkg)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, platform, err, buf.String())
	}
	return nil
}
