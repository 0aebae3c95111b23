package kernel

import (
	"errors"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/virtnet/virtnet/netdriver"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	mdnetlink "github.com/mdlayher/netlink"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestSendBatchReportsKernelErrors: a batch sent without ACKs still fails
// when the kernel refuses one of its messages (here a rule for a chain
// that does not exist), nothing of it is applied, and the driver's socket
// works for the next call.
func TestSendBatchReportsKernelErrors(t *testing.T) {
	ns := testutil.NewNS(t, "vn-batch")
	d, err := Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	_, err = d.NATRules(netdriver.IPv4) // dials the socket
	require.NoError(t, err)

	var batch []mdnetlink.Message
	ack := []mdnetlink.Message{{Header: mdnetlink.Header{Type: mdnetlink.Error}, Data: make([]byte, 4)}}
	c, err := nftables.New(nftables.WithTestDial(func(req []mdnetlink.Message) ([]mdnetlink.Message, error) {
		if req == nil {
			return ack, nil
		}
		batch = req
		return nil, nil
	}))
	require.NoError(t, err)
	table := c.AddTable(natTable(netdriver.IPv4))
	c.AddRule(&nftables.Rule{Table: table, Chain: &nftables.Chain{Name: "nope", Table: table},
		Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}})
	require.NoError(t, c.Flush())

	err = d.nftDo(func(*nftables.Conn) error {
		_, err := sendBatch(d.nftnl, batch)
		return err
	})
	require.Error(t, err)
	require.True(t, errors.Is(err, unix.ENOENT), "got %v", err)

	rules, err := d.NATRules(netdriver.IPv4)
	require.NoError(t, err)
	require.Nil(t, rules, "the failed batch created no table")
	require.NoError(t, d.ApplyNAT(netdrivertest.SampleNAT4()))
	rules, err = d.NATRules(netdriver.IPv4)
	require.NoError(t, err)
	want, err := netdriver.NATListing(netdrivertest.SampleNAT4())
	require.NoError(t, err)
	require.Equal(t, want, rules)
}

// TestBatchBuilderReuse: one builder makes batch after batch, each the
// same messages as a fresh builder's for the same rule set, and an
// invalid rule set leaves nothing behind for the next batch.
func TestBatchBuilderReuse(t *testing.T) {
	fresh := func(nat netdriver.NAT) []mdnetlink.Message {
		b, err := newBatchBuilder()
		require.NoError(t, err)
		batch, err := b.build(nat, true)
		require.NoError(t, err)
		return batch
	}
	strip := func(batch []mdnetlink.Message) []mdnetlink.Message {
		out := make([]mdnetlink.Message, len(batch))
		for i, m := range batch {
			m.Header.Sequence, m.Header.PID, m.Header.Length = 0, 0, 0
			out[i] = m
		}
		return out
	}
	b, err := newBatchBuilder()
	require.NoError(t, err)
	bad := netdrivertest.SampleNAT4()
	bad.Bridge = ""
	for _, nat := range []netdriver.NAT{netdrivertest.SampleNAT4(netdriver.NATPort{Protocol: "tcp", Port: 80}), netdrivertest.SampleNAT6(), bad, netdrivertest.SampleIstio4(), netdrivertest.SampleNAT4(netdriver.NATPort{Protocol: "tcp", Port: 80})} {
		got, err := b.build(nat, true)
		if nat.Bridge == "" {
			require.ErrorIs(t, err, netdriver.ErrInvalidNAT)
			continue
		}
		require.NoError(t, err)
		require.Greater(t, len(got), 2)
		require.Equal(t, strip(fresh(nat)), strip(got))
	}
}

// TestCreateOnlyBatch: the batch ApplyNAT sends first deletes nothing
// (no DELTABLE, so the socket's release has no destruction to wait for)
// and creates the table with NLM_F_EXCL (so that on a table that exists
// the kernel refuses it whole); the replacing batch deletes the table
// first, without EXCL; both carry the same chains and rules.
func TestCreateOnlyBatch(t *testing.T) {
	delTable := mdnetlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_DELTABLE)
	count := func(batch []mdnetlink.Message, typ mdnetlink.HeaderType) (n, excl int) {
		for _, m := range batch {
			if m.Header.Type == typ {
				n++
				if m.Header.Flags&mdnetlink.Excl != 0 {
					excl++
				}
			}
		}
		return n, excl
	}
	for _, nat := range []netdriver.NAT{netdrivertest.SampleNAT4(netdriver.NATPort{Protocol: "tcp", Port: 80}), netdrivertest.SampleNAT6(), netdrivertest.SampleIstio4()} {
		b, err := newBatchBuilder()
		require.NoError(t, err)
		create, err := b.build(nat, false)
		require.NoError(t, err)
		replace, err := b.build(nat, true)
		require.NoError(t, err)
		n, excl := count(create, newTableType)
		require.Equal(t, [2]int{1, 1}, [2]int{n, excl}, "one NEWTABLE, with EXCL")
		n, _ = count(create, delTable)
		require.Zero(t, n, "no DELTABLE")
		n, excl = count(replace, newTableType)
		require.Equal(t, [2]int{2, 0}, [2]int{n, excl}, "add, delete, add: no EXCL")
		n, _ = count(replace, delTable)
		require.Equal(t, 1, n)
		require.Equal(t, len(create)+2, len(replace), "the same batch but the table's add and delete")
	}
}
