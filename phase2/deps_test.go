package phase2_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoKernelCodeLinked: phase2 and its packages (what an unprivileged
// virt-launcher imports) link no code that changes the kernel's network
// state: not phase1, not the netlink driver, not vishvananda/netlink, not
// google/nftables. The bindings they reach name only the netdriver
// interface. The one netlink client linked is the DHCP server's
// (phase2/dhcp, alone in importing jsimonetti/rtnetlink and
// mdlayher/netlink), and it only reads: address and neighbour dumps and
// the address subscription, never a request that creates, changes or
// deletes anything (checked in its source below).
func TestNoKernelCodeLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
	}
	require.Contains(t, imports, "github.com/virtnet/virtnet/netdriver", "the check must see the bindings' interface package")
	require.Contains(t, imports, "github.com/virtnet/virtnet/phase2/dhcp", "the check must see the DHCP server")
	under := func(dep, pkg string) bool { return dep == pkg || strings.HasPrefix(dep, pkg+"/") }
	for dep, imps := range imports {
		for _, banned := range []string{
			"github.com/vishvananda/netlink",
			"github.com/google/nftables",
			"github.com/virtnet/virtnet/netdriver/kernel",
			"github.com/virtnet/virtnet/netdriver/netdrivertest",
			"github.com/virtnet/virtnet/phase1",
		} {
			require.False(t, under(dep, banned), "phase2 links %s", dep)
		}
		if !strings.HasPrefix(dep, "github.com/virtnet/virtnet/") {
			continue
		}
		for _, imp := range imps {
			if under(imp, "github.com/mdlayher/netlink") || under(imp, "github.com/jsimonetti/rtnetlink") {
				require.Equal(t, "github.com/virtnet/virtnet/phase2/dhcp", dep, "%s imports %s: only the DHCP server's read-only client may", dep, imp)
			}
		}
	}
	requireReadOnlyNetlink(t, filepath.Join("dhcp"))
}

// requireReadOnlyNetlink fails unless every rtnetlink request in the
// non-test sources of dir reads: a service call (c.Address, c.Link,
// c.Route, c.Neigh, c.Rule) is List or Get, and Execute's message type
// is an RTM_GET*. A raw Send on a netlink connection is refused.
func requireReadOnlyNetlink(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	requests := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		if !slices.ContainsFunc(f.Imports, func(s *ast.ImportSpec) bool { return strings.Contains(s.Path.Value, "netlink") }) {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pos := fset.Position(call.Pos())
			if svc, ok := sel.X.(*ast.SelectorExpr); ok && slices.Contains([]string{"Address", "Link", "Route", "Neigh", "Rule"}, svc.Sel.Name) {
				requests++
				require.Contains(t, []string{"List", "Get"}, sel.Sel.Name, "%s: rtnetlink %s.%s changes the kernel", pos, svc.Sel.Name, sel.Sel.Name)
			}
			switch sel.Sel.Name {
			case "Execute":
				requests++
				require.GreaterOrEqual(t, len(call.Args), 2, "%s", pos)
				typ, ok := call.Args[1].(*ast.SelectorExpr)
				require.True(t, ok && strings.HasPrefix(typ.Sel.Name, "RTM_GET"), "%s: Execute with a message type that is not RTM_GET*", pos)
			case "Send", "SendMessages":
				t.Errorf("%s: a raw netlink %s", pos, sel.Sel.Name)
			}
			return true
		})
	}
	require.Positive(t, requests, "the check must see the server's requests")
}
