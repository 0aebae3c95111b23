// Package apicompat holds no code: its test (TestAPIDiff) keeps
// CHANGELOG.md honest about the Go API. It runs golang.org/x/exp's apidiff
// (from the module proxy) between the commit CHANGELOG.md records for the
// last release and the working tree (HEAD on a clean checkout), and fails
// when an incompatible change is not named in the "Unreleased" section.
//
// The CHANGELOG's shape that the test reads:
//
//   - "## Unreleased (next: vX.Y.Z)": the version the next release takes.
//     Before v1 an incompatible change needs a new minor version, from v1 on
//     a new major one.
//   - "## vX.Y.Z — <date>", whose first line is "Commit `<40 hex digits>`":
//     the commit the release is (the repository keeps no tags).
//
// The rule that names a change: apidiff reports it as a package path
// relative to the module and a name (./phase1.TapOwner.String,
// ./cache.(*Store).WriteInterface). It is named when "Unreleased" holds the
// package's name and that name, dot-separated, with a method's receiver
// written as its type (phase1.TapOwner.String, cache.Store.WriteInterface);
// the package's path relative to the module (binding/slirp.PortError) is
// the same name spelt in full. The name must not run on into a longer
// identifier: cache.Interface.Gateway is not named by
// cache.Interface.GatewayIPv6. On failure the test prints every unnamed
// change on a line of its own, ready to be written into the CHANGELOG.
//
// Two top-level folders are importable but outside the promise, and the
// test leaves their changes out: kubevirt/ (the KubeVirt plugins' logic,
// which the module's programs use) and testrig/ (the test rigs). Their
// package docs say so.
//
// The export data of the release's commit is cached (the user cache
// directory, virtnet-apidiff/<apidiff version>/<Go version>/<commit>.export), so only
// the working tree is type-checked on a second run. A clone without the
// release's commit (a shallow clone) skips the test saying so, also under
// VIRTNET_REQUIRE_KERNEL=1: history is not a kernel feature, and test.sh
// deepens a shallow clone first when a remote can.
package apicompat
