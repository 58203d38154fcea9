package imagebuild

import (
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NSSBundle is the CA bundle the images carry (at CABundle) when no file
// is given: the root certificates of Mozilla's NSS trust store as the
// golang.org/x/crypto/x509roots/fallback module ships them, at the version
// go.mod pins, PEM encoded in the module's order. The same module version
// gives the same bundle on every build machine, so the images' digests do
// not depend on the host's trust store. Roots that carry a constraint X.509
// cannot express (a distrust-after date) are left out: a PEM bundle would
// trust them without it.
func NSSBundle() []byte {
	var out []byte
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})...)
	}
	return out
}
