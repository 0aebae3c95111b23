// Package testutil holds test helpers: precise skips that turn into
// failures under VIRTNET_REQUIRE_KERNEL=1, throwaway network namespaces,
// and a pod-like namespace as a CNI plugin leaves it.
package testutil
