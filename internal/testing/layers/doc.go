// Package layers holds no code: its test (TestFloors) checks that the
// folders of the module show its floors, and that no package imports one
// on a floor above its own. The floors, lowest first:
//
//  0. internal/…: ground-floor helpers (names, nsexec, nlhandle, safefile,
//     flock, errclass, uuidv5, buildinfo), which import nothing of the
//     module;
//  1. api, cache, netdriver, macvtap: the data and the seams;
//  2. domxml, netdriver/kernel, netdriver/intercept, netdriver/netdrivertest,
//     macvtap/cniconfig, macvtap/deviceplugin: rendering, the kernel, the
//     public test kit;
//  3. binding/…: the binding seam and every method;
//  4. phase1, phase2/…, migration, macvtap/dpserver, macvtap/plugin: the
//     two phases and the macvtap programs' logic;
//  5. internal/kubevirt/…: the KubeVirt 1.x plugins' logic and hook API;
//  6. cmd/…, examples/…, bench/…, deploy: programs;
//  7. internal/testing/…, reliability, e2e/…: the test rigs, which product
//     code never imports.
package layers
