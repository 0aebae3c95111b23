// Package reliability holds virtnet's fault, load and hostile-input tests
// (phase1 killed with SIGKILL at every kernel step, the namespace deleted
// mid-run, 64 interfaces in one VM and 32 VMs at once, hostile caches and
// names) and [Driver], the wrapper of a [netdriver.Driver] they inject
// faults with; bench/cmd/phase1bench times kernel calls with it.
package reliability
