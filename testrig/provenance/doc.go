// Package provenance holds no code: its test (TestNoKubeVirtBuild) keeps
// the repository's rule on other projects' code. KubeVirt's code is read
// and run outside the repository; what it produced (XML, JSON, a
// transcript, a figure) may be committed as test data with its provenance
// in words, but no program, script, patch or step-by-step recipe that
// builds it. Go modules the module proxy serves whole (Kubernetes, Multus,
// kustomize, the CNI plugins) are dependencies like any other. No path of
// a development machine is committed either.
package provenance
