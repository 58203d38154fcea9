// Package config holds the configuration templates of a real `make e2e`
// node (kubelet-config.yaml, kubelet.flags, containerd-config.toml,
// cni-bridge.conflist) and the addresses they are filled with
// (addresses.env); its test fills them for one node and checks them with
// the kubelet's own loader and validation, and the address rules of
// test/e2e/README.md. ReadEnv reads addresses.env for the e2e test.
package config
