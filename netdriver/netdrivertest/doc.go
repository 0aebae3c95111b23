// Package netdrivertest has an in-memory [netdriver.Driver] for tests of
// bindings and of phase1 ([Fake], [SimulatedPod]) and NAT specs with the
// listings a driver must give back for them ([SampleNAT4],
// [NATListingCases]), for tests of a Driver implementation.
package netdrivertest
