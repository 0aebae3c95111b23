package testutil

import (
	"os"
	"testing"
)

// RequireKernelEnv is the environment variable that turns every skip of
// this package into a failure; CI sets it to 1 (and runs as root).
const RequireKernelEnv = "VIRTNET_REQUIRE_KERNEL"

// Required reports whether missing features must fail tests.
func Required() bool { return os.Getenv(RequireKernelEnv) == "1" }

// Skip skips the test, naming exactly what is missing, or fails it when
// VIRTNET_REQUIRE_KERNEL=1 so that CI cannot pass by skipping.
func Skip(tb testing.TB, missing string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s=1 but this test cannot run: %s", RequireKernelEnv, missing)
	}
	tb.Skipf("skipped: %s (set %s=1 to make this a failure)", missing, RequireKernelEnv)
}

// RequireRoot skips (or fails, see [Skip]) unless the test runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Skip(tb, "needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) to create network namespaces")
	}
}
