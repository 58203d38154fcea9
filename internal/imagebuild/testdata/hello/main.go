// Command hello-image is the program the tests of internal/imagebuild put
// in an image: it prints its usage and the linked version on --help.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hetsev/hetsev/pkg/version"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage of hello-image (version %s):\n", version.Version)
		flag.PrintDefaults()
	}
	greeting := flag.String("greeting", "hello", "what to print")
	flag.Parse()
	fmt.Println(*greeting)
}
