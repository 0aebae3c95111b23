package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
)

// The test binary doubles as the CNI plugin and as a fake IPAM plugin, so
// that tests delegated to the kernel VM (which only has this binary) can
// exec both: it plays a role when invoked through a symlink of that name.
const (
	roleIPAM   = "fakeipam"
	rolePlugin = "macvtap"
	// fakeIPAMLog is where the fake IPAM plugin appends "VERB CNI_IFNAME".
	fakeIPAMLog = "VIRTNET_FAKE_IPAM_LOG"
)

func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case roleIPAM:
		os.Exit(fakeIPAM())
	case rolePlugin:
		p := &Plugin{Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Stdout: os.Stdout}
		wrap := func(f func(*skel.CmdArgs) error) func(*skel.CmdArgs) error {
			return func(a *skel.CmdArgs) error { return CNIError(f(a)) }
		}
		skel.PluginMainFuncs(skel.CNIFuncs{Add: wrap(p.Add), Del: wrap(p.Del), Check: wrap(p.Check), Status: wrap(p.Status), GC: wrap(p.GC)},
			VersionInfo(), "macvtap CNI plugin (test binary)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeIPAM answers ADD with 192.0.2.10/24 via 192.0.2.1 and records every
// call.
func fakeIPAM() int {
	cmd, ifname := os.Getenv("CNI_COMMAND"), os.Getenv("CNI_IFNAME")
	if path := os.Getenv(fakeIPAMLog); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = fmt.Fprintf(f, "%s %s\n", cmd, ifname)
			_ = f.Close()
		}
	}
	if cmd != "ADD" {
		return 0
	}
	var conf struct {
		CNIVersion string `json:"cniVersion"`
	}
	data, _ := io.ReadAll(os.Stdin)
	if err := json.Unmarshal(data, &conf); err != nil {
		fmt.Printf(`{"code":6,"msg":%q}`, err.Error())
		return 1
	}
	fmt.Printf(`{"cniVersion":%q,"ips":[{"address":"192.0.2.10/24","gateway":"192.0.2.1"}],`+
		`"routes":[{"dst":"0.0.0.0/0","gw":"192.0.2.1"}],"dns":{"nameservers":["192.0.2.53"]}}`, conf.CNIVersion)
	return 0
}

// binDir makes a CNI_PATH directory holding this test binary as "macvtap"
// and "fakeipam".
func binDir(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, role := range []string{rolePlugin, roleIPAM} {
		if err := os.Symlink(self, filepath.Join(dir, role)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
