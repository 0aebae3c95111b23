// Package migration is what live migration asks of the network: whether a
// VMI may migrate ([Check], KubeVirt v1.9.0's rule, typed), and on the
// target pod, after phase1 (phase1.Options.MigrationTarget) and phase2
// (prestart.Hook) ran there, the domain to migrate into ([TargetDomain]:
// the source's interfaces with the target pod's link names) and what
// follows the switch-over ([RefreshLinks], the SR-IOV devices to attach).
//
// docs/migration.md has the policy, the launcher's path and the figures
// of a real migration (e2e TestLiveMigration).
package migration
