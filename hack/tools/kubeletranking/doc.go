// Package kubeletranking holds a test that runs the kubelet's own eviction
// manager (k8s.io/kubernetes/pkg/kubelet/eviction, at the version this module
// pins) against a fake node, to check the eviction order that chapter 18
// (docs/18-eviction.md) states for its six pods; `make test` runs it. It
// lives in hack/tools because that module already depends on
// k8s.io/kubernetes; minisched itself never does.
//
// The package has no code of its own beyond the test: run it with
//
//	cd hack/tools && go test ./kubeletranking/
package kubeletranking
