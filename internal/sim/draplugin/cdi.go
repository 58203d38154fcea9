package draplugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// CDIVersion is the CDI specification version of the specs written here:
// 0.6.0 has everything they use (device-level env edits) and is read by
// every CDI release containerd 2.x ships.
const CDIVersion = "0.6.0"

// CDIClass is the class of the CDI kind <driver>/<class> the specs
// declare: one CDI device per prepared claim, named by the claim's UID.
const CDIClass = "claim"

// EnvVisibleDevices is the variable NVIDIA's container runtime reads: the
// comma-separated GPU indices a container may use.
const EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// cdiSpec is the part of a CDI spec (github.com/cncf-tags/container-device-interface,
// SPEC.md) written here.
type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string            `json:"name"`
	ContainerEdits cdiContainerEdits `json:"containerEdits"`
}

type cdiContainerEdits struct {
	Env []string `json:"env,omitempty"`
}

// cdiName is what CDI allows in a device name, and what a claim UID must
// be to become a file and device name here.
var cdiName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.:-]*$`)

// CDIKind is the CDI kind of driver's claim specs, e.g.
// "gpu.nvidia.com/claim".
func CDIKind(driver string) string { return driver + "/" + CDIClass }

// CDIDeviceID is the fully qualified CDI device a container of the claim
// with uid gets: "<driver>/claim=<uid>".
func CDIDeviceID(driver, uid string) string { return CDIKind(driver) + "=" + uid }

// SpecFile is the path of the spec of the claim with uid in dir:
// <dir>/<driver>-claim_<uid>.json (CDI reads *.json in its spec dirs).
func SpecFile(dir, driver, uid string) string {
	return filepath.Join(dir, driver+"-"+CDIClass+"_"+uid+".json")
}

// writeSpec writes the spec of one claim: one device, named uid, whose
// edit sets EnvVisibleDevices to env. The file is written under a
// temporary name and renamed, so containerd never reads half a spec.
func writeSpec(dir, driver, uid, env string) (string, error) {
	if !cdiName.MatchString(uid) {
		return "", fmt.Errorf("claim UID %q cannot name a CDI device", uid)
	}
	b, err := json.MarshalIndent(cdiSpec{
		Version: CDIVersion,
		Kind:    CDIKind(driver),
		Devices: []cdiDevice{{Name: uid, ContainerEdits: cdiContainerEdits{
			Env: []string{EnvVisibleDevices + "=" + env},
		}}},
	}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("CDI spec dir: %w", err)
	}
	file := SpecFile(dir, driver, uid)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("CDI spec: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("CDI spec %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("CDI spec %s: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return "", fmt.Errorf("CDI spec %s: %w", file, err)
	}
	return file, nil
}

// removeSpec removes the spec of the claim with uid; a spec that is not
// there is no error (unprepare may be repeated).
func removeSpec(dir, driver, uid string) error {
	if !cdiName.MatchString(uid) {
		return fmt.Errorf("claim UID %q cannot name a CDI device", uid)
	}
	if err := os.Remove(SpecFile(dir, driver, uid)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
