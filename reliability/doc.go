// Package reliability holds virtnet's fault, load and hostile-input tests
// (phase1 killed with SIGKILL at every kernel step and at every step of
// every cache write, each kill followed by a re-run or a Cleanup; the
// namespace deleted mid-run; two runs of one VMI at once and a run racing
// a Cleanup; 64 interfaces in one VM and 32 VMs at once; hostile caches
// and names). It has no code of its own but this comment: the tests cross
// every package (phase1, cache, the bindings, the kernel driver), so they
// live apart from each of them, and the fault-injecting wrapper of the
// kernel seam they use is netdriver/intercept.
package reliability
