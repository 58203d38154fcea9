// Command sbom writes an SPDX 2.3 software bill of materials (JSON) for
// each of hetsev's programs, as `make release` ships beside its images: the
// program, the Go toolchain and every module compiled into it (go list
// -deps), with their versions and package URLs.
//
//	go run ./hack/sbom --version 0.1.0 --out DIR
//
// It writes DIR/<program>-<version>.spdx.json for each program of
// internal/imagebuild.Programs. Every timestamp is --source-date-epoch
// (default $SOURCE_DATE_EPOCH, else 0), so one commit gives the same files.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hetsev/hetsev/internal/imagebuild"
)

func main() {
	version := flag.String("version", "", "the release version; required")
	out := flag.String("out", ".", "directory of the SBOMs")
	epoch := flag.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time, seconds since 1970 (empty: 0)")
	flag.Parse()
	if err := run(*version, *out, *epoch); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

func run(version, out, epoch string) error {
	if version == "" {
		return fmt.Errorf("--version is required")
	}
	t, err := imagebuild.ParseSourceDateEpoch(epoch)
	if err != nil {
		return err
	}
	created := t.Format(time.RFC3339)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, p := range imagebuild.Programs {
		mods, err := modules(p.Package)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if p.CACerts {
			// The image's CA bundle (imagebuild.NSSBundle) comes from
			// this module, though the program does not import it.
			const bundle = "golang.org/x/crypto/x509roots/fallback"
			v, err := exec.Command(goCmd(), "list", "-m", "-f", "{{.Version}}", bundle).Output()
			if err != nil {
				return fmt.Errorf("%s: go list -m %s: %w", p.Name, bundle, err)
			}
			mods = append(mods, module{bundle, strings.TrimSpace(string(v))})
			sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
		}
		doc := document(p.Name, version, created, mods)
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		path := filepath.Join(out, fmt.Sprintf("%s-%s.spdx.json", p.Name, version))
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d modules\n", path, len(mods))
	}
	return nil
}

// module is one Go module compiled into a program.
type module struct{ Path, Version string }

// modules lists the modules of pkg's dependencies for linux (the images'
// OS), the main module left out; sorted by path.
func modules(pkg string) ([]module, error) {
	cmd := exec.Command(goCmd(), "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}", pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v: %s", pkg, err, stderr.String())
	}
	seen := map[string]module{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			seen[f[0]] = module{f[0], f[1]}
		}
	}
	out := make([]module, 0, len(seen))
	for _, m := range seen {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func goCmd() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// The SPDX 2.3 JSON fields the documents use.
type (
	spdxDoc struct {
		SPDXVersion       string     `json:"spdxVersion"`
		DataLicense       string     `json:"dataLicense"`
		SPDXID            string     `json:"SPDXID"`
		Name              string     `json:"name"`
		DocumentNamespace string     `json:"documentNamespace"`
		CreationInfo      spdxCreate `json:"creationInfo"`
		Packages          []spdxPkg  `json:"packages"`
		Relationships     []spdxRel  `json:"relationships"`
	}
	spdxCreate struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
	}
	spdxPkg struct {
		SPDXID           string    `json:"SPDXID"`
		Name             string    `json:"name"`
		VersionInfo      string    `json:"versionInfo"`
		DownloadLocation string    `json:"downloadLocation"`
		FilesAnalyzed    bool      `json:"filesAnalyzed"`
		LicenseConcluded string    `json:"licenseConcluded"`
		LicenseDeclared  string    `json:"licenseDeclared"`
		CopyrightText    string    `json:"copyrightText"`
		ExternalRefs     []spdxRef `json:"externalRefs,omitempty"`
	}
	spdxRef struct {
		ReferenceCategory string `json:"referenceCategory"`
		ReferenceType     string `json:"referenceType"`
		ReferenceLocator  string `json:"referenceLocator"`
	}
	spdxRel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
)

// document is the SBOM of program at version: the program (Apache-2.0, its
// image's package URL), the Go standard library of this toolchain and each
// module, which the program depends on. Module licences are not analysed
// (NOASSERTION): the module proxy's copies hold them.
func document(program, version, created string, mods []module) spdxDoc {
	root := "SPDXRef-Package-" + program
	noa := "NOASSERTION"
	d := spdxDoc{SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("%s-%s", program, version),
		DocumentNamespace: fmt.Sprintf("https://github.com/hetsev/hetsev/releases/v%s/%s.spdx.json", version, program),
		CreationInfo:      spdxCreate{Created: created, Creators: []string{"Organization: hetsev", "Tool: hetsev hack/sbom"}},
	}
	d.Packages = append(d.Packages, spdxPkg{SPDXID: root, Name: program, VersionInfo: version,
		DownloadLocation: "git+https://github.com/hetsev/hetsev@v" + version, LicenseConcluded: "Apache-2.0", LicenseDeclared: "Apache-2.0", CopyrightText: noa,
		ExternalRefs: []spdxRef{{"PACKAGE-MANAGER", "purl", fmt.Sprintf("pkg:oci/%s@v%s?repository_url=%s", program, version, imagebuild.Registry)}}})
	d.Relationships = append(d.Relationships, spdxRel{"SPDXRef-DOCUMENT", "DESCRIBES", root})
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	std := spdxPkg{SPDXID: "SPDXRef-Package-golang-stdlib", Name: "stdlib", VersionInfo: goVersion,
		DownloadLocation: "https://go.dev/dl/", LicenseConcluded: noa, LicenseDeclared: "BSD-3-Clause", CopyrightText: noa,
		ExternalRefs: []spdxRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + goVersion}}}
	d.Packages = append(d.Packages, std)
	d.Relationships = append(d.Relationships, spdxRel{root, "DEPENDS_ON", std.SPDXID})
	for i, m := range mods {
		id := fmt.Sprintf("SPDXRef-Package-go-%d", i+1)
		d.Packages = append(d.Packages, spdxPkg{SPDXID: id, Name: m.Path, VersionInfo: m.Version,
			DownloadLocation: noa, LicenseConcluded: noa, LicenseDeclared: noa, CopyrightText: noa,
			ExternalRefs: []spdxRef{{"PACKAGE-MANAGER", "purl", fmt.Sprintf("pkg:golang/%s@%s", m.Path, m.Version)}}})
		d.Relationships = append(d.Relationships, spdxRel{root, "DEPENDS_ON", id})
	}
	return d
}
