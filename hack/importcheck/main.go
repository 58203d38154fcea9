// Command importcheck fails when a production package depends, directly or
// transitively, on a forbidden package, and prints the chain of imports
// that brings each one in. hack/verify-imports.sh runs it with the lists of
// production and forbidden packages; see there.
//
// Usage:
//
//	importcheck -roots 'PATTERN ...' -forbid 'PREFIX ...'
//
// Roots are `go list` patterns. A package P is forbidden by a prefix X when
// P == X or P starts with X + "/"; an embedded file counts as the package's
// path + "/" + the file, so data/traces forbids a package that embeds files
// under data/traces.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

type pkg struct {
	ImportPath string
	Imports    []string
	EmbedFiles []string
	Standard   bool
	Error      *struct{ Err string }
}

func main() {
	roots := flag.String("roots", "", "go list patterns of production packages (space separated)")
	forbid := flag.String("forbid", "", "forbidden import path prefixes")
	flag.Parse()
	os.Exit(run(strings.Fields(*roots), strings.Fields(*forbid), os.Stdout))
}

func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

func match(p string, prefixes []string) string {
	for _, x := range prefixes {
		if under(p, x) {
			return x
		}
	}
	return ""
}

func goList(args ...string) ([]pkg, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

func run(rootPatterns, forbid []string, w io.Writer) int {
	if len(rootPatterns) == 0 {
		fmt.Fprintln(w, "importcheck: no -roots")
		return 2
	}
	// The roots themselves, then the whole graph below them.
	// -e: a graph with errors (an import cycle that a forbidden import
	// made, say) is still checked; the errors are reported at the end.
	rootPkgs, err := goList(append([]string{"-e", "-json=ImportPath"}, rootPatterns...)...)
	if err != nil {
		fmt.Fprintln(w, err)
		return 2
	}
	graph, err := goList(append([]string{"-e", "-deps", "-json=ImportPath,Imports,EmbedFiles,Standard,Error"}, rootPatterns...)...)
	if err != nil {
		fmt.Fprintln(w, err)
		return 2
	}
	byPath := map[string]pkg{}
	for _, p := range graph {
		byPath[p.ImportPath] = p
	}
	var roots []string
	for _, p := range rootPkgs {
		roots = append(roots, p.ImportPath)
	}
	sort.Strings(roots)

	// One line per (importer, forbidden) edge, with the shortest chain from
	// the first root that reaches it.
	type edge struct{ from, to string }
	chains := map[edge][]string{}
	for _, r := range roots {
		parent := map[string]string{r: ""}
		queue := []string{r}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			p := byPath[cur]
			deps := append([]string(nil), p.Imports...)
			for _, f := range p.EmbedFiles {
				deps = append(deps, cur+"/"+f)
			}
			for _, d := range deps {
				if _, seen := parent[d]; seen {
					continue
				}
				if byPath[d].Standard {
					continue
				}
				parent[d] = cur
				if match(d, forbid) != "" {
					e := edge{cur, d}
					if _, ok := chains[e]; !ok {
						var c []string
						for x := d; x != ""; x = parent[x] {
							c = append([]string{x}, c...)
						}
						chains[e] = c
					}
					continue // do not look below a forbidden package
				}
				queue = append(queue, d)
			}
		}
	}
	edges := make([]edge, 0, len(chains))
	for e := range chains {
		edges = append(edges, e)
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].to != edges[j].to {
			return edges[i].to < edges[j].to
		}
		return edges[i].from < edges[j].from
	})
	for _, e := range edges {
		verb := "imports"
		if p, ok := byPath[e.from]; ok && !contains(p.Imports, e.to) {
			verb = "embeds"
		}
		fmt.Fprintf(w, "FORBIDDEN: %s %s %s (rule %s)\n    via %s\n", short(e.from), verb, short(e.to), short(match(e.to, forbid)), shortChain(chains[e]))
	}
	fmt.Fprintf(w, "importcheck: %d production packages, %d forbidden dependencies\n", len(roots), len(edges))
	listErrs := 0
	for _, p := range graph {
		if p.Error != nil {
			fmt.Fprintf(w, "importcheck: go list: %s: %s\n", p.ImportPath, strings.TrimSpace(p.Error.Err))
			listErrs++
		}
	}
	if len(edges) > 0 || listErrs > 0 {
		return 1
	}
	return 0
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

const module = "github.com/hetsev/hetsev/"

func short(p string) string { return strings.TrimPrefix(p, module) }

func shortChain(c []string) string {
	s := make([]string, len(c))
	for i, p := range c {
		s[i] = short(p)
	}
	return strings.Join(s, " -> ")
}
