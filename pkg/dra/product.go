package dra

import (
	"fmt"
	"strings"
)

// The GPU type of a DRA device is its productName attribute matched to the
// catalog's product_label, GPU Feature Discovery's nvidia.com/gpu.product.
// NVIDIA's DRA driver publishes the NVML device name ("Tesla T4"); GFD's
// label is that name with every space replaced by "-" ("Tesla-T4"). The
// rule lives here twice, once in Go (ProductLabel, for hetsev's own
// accounting) and once in CEL (ProductSelector, for the allocator), side by
// side so that they stay one rule; TestProductLabelMatchesSelector checks
// that they agree.

// ProductLabel is the GFD product label of a device whose productName
// attribute is productName: its spaces replaced by "-". "" stays "" (a
// device without the attribute is of no catalog type).
func ProductLabel(productName string) string { return strings.ReplaceAll(productName, " ", "-") }

// ProductSelector is the CEL device selector that pins a claim to GPUs
// whose product label (ProductLabel of their productName attribute) is
// productLabel, among the devices of driver (whose name is the attributes'
// domain). A device without the attribute (another kind of device of the
// driver) does not match, rather than failing the evaluation.
func ProductSelector(driver, productLabel string) string {
	attrs := fmt.Sprintf("device.attributes[%q]", driver)
	return fmt.Sprintf(`%q in %s && %s.%s.replace(" ", "-") == %q`, string(AttributeProductName), attrs, attrs, AttributeProductName, productLabel)
}

// OfProduct keeps, on every node, the devices whose ProductLabel is
// productLabel; nodes left without a device are dropped. nodes is not
// changed.
func OfProduct(nodes map[string]*NodeDevices, productLabel string) map[string]*NodeDevices {
	out := map[string]*NodeDevices{}
	for name, nd := range nodes {
		kept := &NodeDevices{Node: nd.Node, Unusable: nd.Unusable}
		for _, d := range nd.Devices {
			if ProductLabel(d.Product) == productLabel {
				kept.Devices = append(kept.Devices, d)
			}
		}
		if len(kept.Devices) > 0 {
			out[name] = kept
		}
	}
	return out
}
