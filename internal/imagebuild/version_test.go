package imagebuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hack/version.sh: VERSION at its tag, dirty, past its tag and untagged.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	script, err := os.ReadFile("../../hack/version.sh")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write("hack/version.sh", string(script), 0o755)
	write("VERSION", "0.1.0\n", 0o644)
	run("git", "init", "-q")
	run("git", "add", ".")
	run("git", "commit", "-q", "-m", "one")
	sha := func() string { return run("git", "rev-parse", "--short=12", "HEAD") }

	if got, want := run("hack/version.sh"), "0.1.0-g"+sha(); got != want {
		t.Errorf("untagged: %q, want %q", got, want)
	}
	run("git", "tag", "v0.1.0")
	if got := run("hack/version.sh"); got != "0.1.0" {
		t.Errorf("at v0.1.0: %q, want 0.1.0", got)
	}
	write("hack/version.sh", string(script)+"\n", 0o755)
	if got := run("hack/version.sh"); got != "0.1.0-dirty" {
		t.Errorf("at v0.1.0 with a change: %q, want 0.1.0-dirty", got)
	}
	run("git", "commit", "-q", "-am", "two")
	if got, want := run("hack/version.sh"), "0.1.0-1-g"+sha(); got != want {
		t.Errorf("one commit past v0.1.0: %q, want %q", got, want)
	}
	write("VERSION", "0.2.0\n", 0o644)
	if got, want := run("hack/version.sh"), "0.2.0-g"+sha()+"-dirty"; got != want {
		t.Errorf("VERSION 0.2.0 not committed, no tag v0.2.0: %q, want %q", got, want)
	}
}
