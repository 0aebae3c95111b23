package phase1_test

import (
	"encoding"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestMigrationTargetMAC: on a migration target (Options.MigrationTarget)
// a bridge interface gets the source VM's MAC from status.interfaces, and
// one without it (and without macAddress) is refused before any change;
// masquerade needs no status. Without the option the pod link's MAC is
// the fallback, as before.
func TestMigrationTargetMAC(t *testing.T) {
	const srcMAC = "02:aa:bb:cc:dd:01"
	podMAC := "0a:58:0a:f4:01:07" // netdrivertest.SimulatedPod's eth0
	status := []api.InterfaceStatus{{Name: "default", MAC: srcMAC}}
	for _, tc := range []struct {
		name     string
		manifest string
		status   []api.InterfaceStatus
		target   bool
		wantMAC  string
		wantErr  string
	}{
		{name: "bridge, status MAC", manifest: bridgeVMI, status: status, target: true, wantMAC: srcMAC},
		{name: "bridge, no status", manifest: bridgeVMI, target: true, wantErr: `status.interfaces: a migration target needs the source VM's MAC of bridge interface "default"`},
		{name: "bridge, bad status MAC", manifest: bridgeVMI, status: []api.InterfaceStatus{{Name: "default", MAC: "zz"}}, target: true, wantErr: "status.interfaces[0].mac"},
		{name: "bridge, macAddress, no status", manifest: bridgeMACVMI, target: true, wantMAC: "02:00:00:00:00:42"},
		{name: "masquerade, no status", manifest: masqueradeVMI, target: true},
		{name: "bridge, no status, not a target", manifest: bridgeVMI, wantMAC: podMAC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, tc.manifest)
			vmi.Status.Interfaces = tc.status
			f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
			s := testutil.NewStore(t)
			err := run(t, vmi, f, s, phase1.Options{MigrationTarget: tc.target})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				var pe *phase1.Error
				require.True(t, errors.As(err, &pe))
				require.Equal(t, phase1.StepValidate, pe.Step)
				require.True(t, phase1.IsPermanent(err))
				require.Empty(t, f.Calls(), "refused before any change")
				return
			}
			require.NoError(t, err)
			rec, err := s.ReadInterface(uid, "default")
			require.NoError(t, err)
			if tc.wantMAC != "" {
				require.Equal(t, tc.wantMAC, recText(rec.MAC))
			}
		})
	}
}

const bridgeMACVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-bridge, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces: [{name: default, bridge: {}, macAddress: "02:00:00:00:00:42"}]
  networks: [{name: default, pod: {}}]
`

// recText is a record value as the record's JSON writes it ("" when unset).
func recText(v encoding.TextMarshaler) string {
	b, err := v.MarshalText()
	if err != nil {
		panic(err)
	}
	return string(b)
}

// addrTexts are the addresses as the record's JSON writes them.
func addrTexts(as []netip.Addr) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

// TestMigrationTargetRefusesMulticastStatusMAC: on a migration target a
// status.interfaces MAC that a spec macAddress could not be (multicast,
// all zero) is refused before any change, naming the field, as the spec's
// is; nothing is recorded (it used to be recorded as the VM's MAC).
func TestMigrationTargetRefusesMulticastStatusMAC(t *testing.T) {
	for _, tc := range []struct{ mac, why string }{
		{"01:00:5e:00:00:01", "multicast MAC address"},
		{"03:aa:bb:cc:dd:01", "multicast MAC address"},
		{"00:00:00:00:00:00", "all-zero MAC address"},
	} {
		t.Run(tc.mac, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, bridgeVMI)
			vmi.Status.Interfaces = []api.InterfaceStatus{{Name: "default", MAC: tc.mac}}
			f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
			s := testutil.NewStore(t)
			err := run(t, vmi, f, s, phase1.Options{MigrationTarget: true})
			require.ErrorContains(t, err, "status.interfaces[0].mac")
			require.ErrorContains(t, err, tc.why)
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, phase1.StepValidate, pe.Step)
			require.Equal(t, "default", pe.Interface)
			require.True(t, phase1.IsPermanent(err))
			require.Empty(t, f.Calls(), "refused before any change")
			_, err = s.ReadInterface(uid, "default")
			require.ErrorIs(t, err, cache.ErrNotExist, "nothing recorded")
		})
	}
}
