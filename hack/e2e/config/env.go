package config

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// ReadEnv reads a file of NAME=value lines such as addresses.env,
// skipping blank lines and # comments, as the shell scripts source it. A
// line without "=" is an error naming the file and the line.
func ReadEnv(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not NAME=value", file, line)
		}
		vars[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return vars, nil
}
