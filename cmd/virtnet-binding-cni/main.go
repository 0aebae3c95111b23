//go:build linux

// Command virtnet-binding-cni is the CNI plugin of virtnet's KubeVirt 1.x
// network binding plugins (virtnet-bridge, virtnet-masquerade): it runs
// virtnet's phase1 for one VM interface in the pod's network namespace,
// and leaves the hand-off record the sidecar
// (cmd/virtnet-binding-sidecar) reads. It speaks CNI spec 0.4.0 to 1.1.0.
//
// It runs in two ways. As KubeVirt registers it (the KubeVirt CR's
// networkAttachmentDefinition), Multus calls it as an attachment of its
// own after the network's CNI, with cni-args
// {"logicNetworkName": "<VMI network name>"}: it then works on the pod
// interface KubeVirt 1.x names for that network (pod<hash> if it exists,
// else eth0). Chained after the network's CNI in one conflist, it works on
// CNI_IFNAME and passes prevResult through.
//
// Network configuration keys besides cniVersion, name and type:
//
//	binding            "bridge" or "masquerade" (required)
//	cacheDir           phase1's records on the node, under /run or /var/run (default /run/virtnet-binding)
//	ports              masquerade: [{"port": 80, "protocol": "TCP"}, …] to DNAT (default: all)
//	vmNetworkCIDR      masquerade: the VM network (default 10.0.2.0/24)
//	vmIPv6NetworkCIDR  masquerade: the VM's IPv6 network (default fd10:0:2::/120)
//	tapOwner           uid and gid of the taps (default 107, KubeVirt 1.x's non-root qemu; 0 for root VMIs)
//	logLevel           debug, info (default), warn, error; logs go to stderr
//
// The configuration is decoded strictly: keys are case-sensitive, and a
// repeated key or one the plugin does not know is refused (code 7) rather
// than ignored, because an ignored misspelt "ports" forwards every port.
// Every key is checked before the plugin touches a namespace.
//
// ADD is idempotent (phase1 resumes and converges) and, on a pod whose
// interface an earlier ADD finished, never takes it away; DEL undoes ADD
// and succeeds without a prior ADD or without the namespace (a missing or
// stale netns path); CHECK runs ADD dry (no change allowed) and fails on
// anything ADD would repair; GC (CNI 1.1) forgets the records of the
// attachments not in cni.dev/valid-attachments, except one that is mid-ADD
// or was ADDed after the GC began, and removes record directories no
// attachment owns (left by a killed GC or ADD). Each verb runs under a deadline (60 s) and
// waits at most 10 s for another run's lock. Errors are CNI errors: 7 for
// a bad configuration, 4 for bad CNI arguments, 8 for a network namespace
// that cannot be opened, 11 ("try again later") for a failure a retry may
// fix (a lock held, the deadline, a transient kernel error), 999 for a
// permanent failure of phase1, with its step in details.
package main

import (
	"runtime"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/virtnet/virtnet/internal/buildinfo"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/cniplugin"
)

func init() {
	// Namespace switches are per OS thread; keep main on the main thread.
	runtime.LockOSThread()
}

func main() {
	buildinfo.HandleVersionFlag("virtnet-binding-cni")
	var p cniplugin.Plugin // the default limits
	skel.PluginMainFuncs(skel.CNIFuncs{Add: p.Add, Del: p.Del, Check: p.Check, GC: p.GC},
		version.PluginSupports("0.4.0", "1.0.0", "1.1.0"), buildinfo.About("virtnet-binding-cni"))
}
