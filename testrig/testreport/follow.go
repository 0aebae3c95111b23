package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json's TestEvent, plus the
// go command's build events).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// pkgOutput is what follow holds of one package until it ends: its own
// output lines and those of each test still running.
type pkgOutput struct {
	lines []string
	tests map[string][]string
	order []string // tests in the order they started
}

// follow copies r to raw line by line and writes to human what go test
// prints without -v (see the package doc). It reports whether the stream
// holds a failure (a failed test, package or build).
func follow(r io.Reader, raw, human io.Writer) (failed bool, err error) {
	pkgs := map[string]*pkgOutput{}
	get := func(name string) *pkgOutput {
		p := pkgs[name]
		if p == nil {
			p = &pkgOutput{tests: map[string][]string{}}
			pkgs[name] = p
		}
		return p
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if _, err := fmt.Fprintf(raw, "%s\n", line); err != nil {
			return failed, fmt.Errorf("copy of the stream: %w", err)
		}
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not an event (the go command's own text): pass it on.
			if _, err := fmt.Fprintf(human, "%s\n", line); err != nil {
				return failed, err
			}
			continue
		}
		switch {
		case e.Action == "build-output":
			_, err = io.WriteString(human, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test != "":
			p := get(e.Package)
			switch e.Action {
			case "run":
				if _, ok := p.tests[e.Test]; !ok {
					p.tests[e.Test] = nil
					p.order = append(p.order, e.Test)
				}
			case "output":
				if _, ok := p.tests[e.Test]; !ok {
					p.order = append(p.order, e.Test)
				}
				p.tests[e.Test] = append(p.tests[e.Test], e.Output)
			case "pass", "skip":
				delete(p.tests, e.Test)
			case "fail":
				failed = true
				err = writeLines(human, p.tests[e.Test])
				delete(p.tests, e.Test)
			}
		default:
			p := get(e.Package)
			switch e.Action {
			case "output":
				p.lines = append(p.lines, e.Output)
			case "pass", "skip":
				err = writeSummary(human, p.lines, e)
				delete(pkgs, e.Package)
			case "fail":
				failed = true
				// Tests that never ended: a panic or the -timeout.
				for _, t := range p.order {
					if out, ok := p.tests[t]; ok {
						if err = writeLines(human, out); err != nil {
							break
						}
					}
				}
				if err == nil {
					err = writeLines(human, p.lines)
				}
				delete(pkgs, e.Package)
			}
		}
		if err != nil {
			return failed, err
		}
	}
	if err := sc.Err(); err != nil {
		return failed, fmt.Errorf("reading the stream: %w", err)
	}
	return failed, nil
}

// writeSummary writes a passed or skipped package's line(s) go test itself
// printed ("ok  \t…", "?   \t…"), or one made from the event.
func writeSummary(w io.Writer, lines []string, e event) error {
	var sum []string
	for _, l := range lines {
		if strings.HasPrefix(l, "ok  ") || strings.HasPrefix(l, "?   ") {
			sum = append(sum, l)
		}
	}
	if len(sum) > 0 {
		return writeLines(w, sum)
	}
	if e.Action == "skip" {
		_, err := fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
		return err
	}
	_, err := fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	return err
}

func writeLines(w io.Writer, lines []string) error {
	for _, l := range lines {
		if _, err := io.WriteString(w, l); err != nil {
			return err
		}
	}
	return nil
}
