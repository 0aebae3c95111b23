package phase1_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// markedError is an outside binding's error that marks itself.
type markedError struct{ permanent bool }

func (e markedError) Error() string   { return "outside binding" }
func (e markedError) Permanent() bool { return e.permanent }

// TestErrorPermanent: what a caller may retry (a re-run resumes and
// converges) and what needs someone to change the VMI, the pod or the node.
func TestErrorPermanent(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("set up link %q: %w", "k6t-eth0", err) }
	for _, tc := range []struct {
		name      string
		step      string
		err       error
		permanent bool
	}{
		// Permanent.
		{"validation step", phase1.StepValidate, errors.New("metadata.uid: bad"), true},
		{"invalid VMI", phase1.StepRead, &api.FieldError{Path: "spec.networks[0].name", Reason: "bad"}, true},
		{"unsupported feature", phase1.StepPlan, &api.UnsupportedError{Path: "spec.domain.devices.gpus"}, true},
		{"foreign link", phase1.StepPrepare, &binding.ForeignLinkError{Name: "k6t-eth0", Type: "veth", Want: "bridge"}, true},
		{"address in use", phase1.StepPrepare, &binding.AddressInUseError{Addr: netip.MustParseAddr("10.0.2.1"), Link: "other", Want: "k6t-eth0"}, true},
		{"pod link already prepared", phase1.StepDiscover, &binding.PodLinkError{Name: "eth0", Reason: "is a dummy", Err: binding.ErrPrepared}, true},
		{"pod link missing", phase1.StepDiscover, &binding.PodLinkError{Name: "eth0", Reason: "not found", Err: &netdriver.LinkNotFoundError{Name: "eth0"}}, true},
		{"no address", phase1.StepPlan, fmt.Errorf("eth0: %w", binding.ErrNoAddress), true},
		{"overlap", phase1.StepPlan, &masquerade.OverlapError{Field: "vmNetworkCIDR", Network: netip.MustParsePrefix("10.0.2.0/24"), PodLink: "eth0"}, true},
		{"not a namespace", phase1.StepOpen, fmt.Errorf("/etc/passwd is a regular file, %w", phase1.ErrNotNamespace), true},
		{"unsafe cache", phase1.StepRecord, &cache.UnsafeError{Path: "/var/run/x", Reason: "a symlink"}, true},
		{"corrupt record", phase1.StepRead, &cache.CorruptError{Path: "/var/run/x", Err: errors.New("eof")}, true},
		{"record of another version", phase1.StepRead, &cache.VersionError{Path: "/var/run/x", Got: 9, Want: 1}, true},
		{"bad record name", phase1.StepRecord, &cache.NameError{Field: "interface", Value: "../x"}, true},
		{"records of another namespace", phase1.StepNamespace, &cache.NamespaceMismatchError{UID: "u", Recorded: "4:1", Got: "4:2"}, true},
		{"wrapped invalid VMI", phase1.StepPlan, fmt.Errorf("plan: %w", api.ErrInvalid), true},
		{"EOPNOTSUPP", phase1.StepPrepare, wrap(syscall.EOPNOTSUPP), true},
		{"no privilege", phase1.StepPrepare, wrap(syscall.EPERM), true},
		{"not supported", phase1.StepOpen, phase1.ErrNotSupported, true},
		{"marked by an outside binding", phase1.StepPrepare, wrap(markedError{permanent: true}), true},
		// Retryable.
		{"EBUSY", phase1.StepPrepare, wrap(syscall.EBUSY), false},
		{"EAGAIN", phase1.StepPrepare, wrap(syscall.EAGAIN), false},
		{"ENOBUFS", phase1.StepDiscover, wrap(syscall.ENOBUFS), false},
		{"EINTR", phase1.StepPrepare, wrap(syscall.EINTR), false},
		{"lock held", phase1.StepLock, fmt.Errorf("cache: lock /x: %w", phase1.ErrLocked), false},
		{"deadline", phase1.StepCanceled, context.DeadlineExceeded, false},
		{"canceled", phase1.StepCanceled, context.Canceled, false},
		{"unknown", phase1.StepRecord, errors.New("disk on fire"), false},
		{"marked retryable by an outside binding", phase1.StepPrepare, wrap(markedError{}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := &phase1.Error{Interface: "default", Step: tc.step, Err: tc.err}
			require.Equal(t, tc.permanent, err.Permanent())
			require.Equal(t, tc.permanent, phase1.IsPermanent(fmt.Errorf("agent: %w", err)))
		})
	}
	require.False(t, phase1.IsPermanent(nil))
	require.True(t, phase1.IsPermanent(&binding.ForeignLinkError{Name: "tap0"}), "a bare error is classified too")
}

// TestErrorMessages: each layer adds only what it owns (phase1 the
// interface and the step, the binding the link and the value, the kernel
// seam nothing already said), on real failures through the fake.
func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		yaml      string
		links     []netdrivertest.SimLink
		extra     func(f *netdrivertest.Fake)
		mutate    func(v *api.VMI)
		want      string
		permanent bool
		is        error
	}{
		{name: "missing pod link", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth9"}},
			want:      `phase1: interface "default": discover: pod link "eth0": not found in the pod namespace`,
			permanent: true, is: phase1.ErrLinkNotFound},
		{name: "foreign bridge", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "k6t-eth0"}},
			want:      `phase1: interface "default": prepare: link "k6t-eth0" is not ours: has type veth, want bridge`,
			permanent: true},
		{name: "address in use", yaml: masqueradeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "other"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddrReplace("other", netip.MustParsePrefix("10.0.2.1/24")))
			},
			want:      `phase1: interface "default": prepare: address 10.0.2.1 is already on link "other", phase1 needs it on "k6t-eth0"`,
			permanent: true},
		{name: "bad UID", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			// Changed after Load validated it: the store still refuses the
			// name it would make a path of.
			mutate:    func(v *api.VMI) { v.Metadata.UID = "../x" },
			want:      `phase1: lock: cache: VMI UID "../x" cannot name a cache file (empty, '.', '..', '/', NUL or over 253 bytes)`,
			permanent: true},
		{name: "not validated", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			mutate:    func(v *api.VMI) { *v = api.VMI{Kind: v.Kind, Metadata: v.Metadata, Spec: v.Spec} },
			want:      `phase1: validate: VMI default/vmi-bridge (uid "` + uid + `"): VMI not validated (api.Load or api.Validate first)`,
			is:        api.ErrNotValidated,
			permanent: true},
		{name: "kernel busy", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			extra: func(f *netdrivertest.Fake) { f.FailAt(1, syscall.EBUSY) },
			want:  `phase1: interface "default": prepare: fake: SetDown eth0: device or resource busy`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, tc.yaml)
			if tc.mutate != nil {
				tc.mutate(vmi)
			}
			f := netdrivertest.SimulatedPod(tc.links...)
			if tc.extra != nil {
				tc.extra(f)
			}
			err := run(t, vmi, f, testutil.NewStore(t), phase1.Options{})
			require.Error(t, err)
			require.EqualError(t, err, tc.want)
			require.Equal(t, tc.permanent, phase1.IsPermanent(err))
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}
