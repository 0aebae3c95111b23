package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// result of a test or package: pass, fail, skip, or running (no end event
// in the stream).
const running = "running"

// timing is a top-level test's or a package's time in one pass.
type timing struct {
	pass    string
	pkg     string
	test    string // "" for a package
	seconds float64
	result  string
	start   time.Time
	// lastSeen is the time of the test's last event (a benchmark's end).
	lastSeen time.Time
}

// pass is what one saved stream holds.
type pass struct {
	name    string
	wall    float64 // seconds, as the caller measured it
	hasWall bool
	pkgs    []*timing
	tests   []*timing
	last    time.Time // the stream's last event
	// counts of top-level tests by result
	counts map[string]int
}

// readPass reads a saved go test -json stream; lines that are not events
// are ignored.
func readPass(file string) (*pass, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := parsePass(strings.TrimSuffix(filepath.Base(file), ".json"), f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

func parsePass(name string, r io.Reader) (*pass, error) {
	p := &pass{name: name, counts: map[string]int{}}
	pkgs := map[string]*timing{}
	tests := map[[2]string]*timing{}
	events := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var e event
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" || e.Package == "" {
			continue
		}
		events++
		if e.Time.After(p.last) {
			p.last = e.Time
		}
		pk := pkgs[e.Package]
		if pk == nil {
			pk = &timing{pass: name, pkg: e.Package, result: running, start: e.Time}
			pkgs[e.Package] = pk
			p.pkgs = append(p.pkgs, pk)
		}
		if e.Test == "" {
			switch e.Action {
			case "pass", "fail", "skip":
				pk.result, pk.seconds = e.Action, e.Elapsed
				// A benchmark has no end event of its own: it ends
				// with its last output, and the package's result is
				// its result.
				for _, t := range p.tests {
					if t.pkg == e.Package && t.result == running && strings.HasPrefix(t.test, "Benchmark") {
						t.result, t.seconds = e.Action, t.lastSeen.Sub(t.start).Seconds()
					}
				}
			}
			continue
		}
		if strings.Contains(e.Test, "/") {
			continue // a subtest: its time is in its parent's
		}
		key := [2]string{e.Package, e.Test}
		t := tests[key]
		if t == nil {
			t = &timing{pass: name, pkg: e.Package, test: e.Test, result: running, start: e.Time}
			tests[key] = t
			p.tests = append(p.tests, t)
		}
		t.lastSeen = e.Time
		switch e.Action {
		case "pass", "fail", "skip":
			t.result, t.seconds = e.Action, e.Elapsed
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if events == 0 {
		return nil, errNoEvents
	}
	// Cut short: what ran until the stream's end.
	for _, t := range append(append([]*timing(nil), p.pkgs...), p.tests...) {
		if t.result == running {
			t.seconds = p.last.Sub(t.start).Seconds()
		}
	}
	for _, t := range p.tests {
		p.counts[t.result]++
	}
	return p, nil
}

// slowest returns the n longest of ts, longest first (ties: by pass,
// package, test, so that the order is stable).
func slowest(ts []*timing, n int) []*timing {
	s := append([]*timing(nil), ts...)
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.seconds != b.seconds {
			return a.seconds > b.seconds
		}
		if a.pass != b.pass {
			return a.pass < b.pass
		}
		if a.pkg != b.pkg {
			return a.pkg < b.pkg
		}
		return a.test < b.test
	})
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// writeTable prints the slowest tests and packages of all passes and one
// line per pass.
func writeTable(w io.Writer, passes []*pass, n int, trim string) error {
	var tests, pkgs []*timing
	for _, p := range passes {
		tests = append(tests, p.tests...)
		for _, pk := range p.pkgs {
			if pk.result != "skip" { // no test files
				pkgs = append(pkgs, pk)
			}
		}
	}
	short := func(pkg string) string {
		if s := strings.TrimPrefix(pkg, trim); s != "" {
			return s
		}
		return pkg
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "== the %d slowest tests\n", n)
	fmt.Fprintln(tw, "  seconds\tpass\tresult\tpackage\ttest")
	for _, t := range slowest(tests, n) {
		fmt.Fprintf(tw, "%9.1f\t%s\t%s\t%s\t%s\n", t.seconds, t.pass, t.result, short(t.pkg), t.test)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "== the %d slowest packages\n", n)
	fmt.Fprintln(tw, "  seconds\tpass\tresult\tpackage")
	for _, t := range slowest(pkgs, n) {
		fmt.Fprintf(tw, "%9.1f\t%s\t%s\t%s\n", t.seconds, t.pass, t.result, short(t.pkg))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "== passes (wall: the pass from start to end, compiling included; packages: the sum of their times and the count of those with tests)")
	fmt.Fprintln(tw, "pass\t wall s\tpackages s\tpackages\ttests\tpassed\tfailed\tskipped\trunning")
	for _, p := range passes {
		wall := "-"
		if p.hasWall {
			wall = fmt.Sprintf("%7.0f", p.wall)
		}
		var sum float64
		tested := 0
		for _, pk := range p.pkgs {
			sum += pk.seconds
			if pk.result != "skip" {
				tested++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%10.0f\t%8d\t%5d\t%6d\t%6d\t%7d\t%7d\n", p.name, wall, sum, tested, len(p.tests),
			p.counts["pass"], p.counts["fail"], p.counts["skip"], p.counts[running])
	}
	return tw.Flush()
}
