// Package reliability holds virtnet's fault, load and hostile-input tests
// (phase1 killed with SIGKILL at every kernel step and at every step of
// every cache write, each kill followed by a re-run or a Cleanup; the
// namespace deleted mid-run; two runs of one VMI at once and a run racing
// a Cleanup; 64 interfaces in one VM and 32 VMs at once; hostile caches
// and names) and [Driver], the wrapper of a [netdriver.Driver] they inject
// faults with; bench/cmd/phase1bench times kernel calls with it.
package reliability
