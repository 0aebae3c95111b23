// Package layers holds no code: its test (TestFloors) checks that the
// top-level folders of the module are its floors. Every package stands on
// its folder's floor and imports from other folders only on lower floors
// (two folders of one floor are neighbours and do not import each other).
// The floors, lowest first:
//
//  0. internal/: ground helpers (names, nsexec, nlhandle, safefile, flock,
//     errclass, uuidv5, buildinfo), which import nothing of the module
//     outside internal/;
//  1. api/, cache/, netdriver/, macvtap/: the data, the seams, and the
//     macvtap stack (its CNI plugin and device plugin stand on ground
//     helpers alone);
//  2. domxml/: rendering;
//  3. binding/: the binding seam and every method;
//  4. phase1/, phase2/, migration/: the two phases and migration;
//  5. kubevirt/: the KubeVirt 1.x plugins' logic and hook API;
//  6. cmd/, examples/, bench/, deploy/: programs;
//  7. testrig/, reliability/, e2e/: the test rigs and the tests that span
//     the module, which product code never imports.
package layers
