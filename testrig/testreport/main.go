package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/virtnet/virtnet/internal/buildinfo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  testreport follow -o FILE          < go test -json output
  testreport table [-n 15] [-trim PREFIX] [-wall PASS=SECONDS]... FILE.json...
  testreport --version`

// run is main without the process: it returns the exit status (0, 1 when
// the stream followed holds a failure, 2 on bad usage or I/O errors).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "follow":
		return runFollow(args[1:], stdin, stdout, stderr)
	case "table":
		return runTable(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	case "--version", "-version":
		fmt.Fprintln(stdout, buildinfo.About("testreport"))
		return 0
	}
	fmt.Fprintf(stderr, "testreport: unknown command %q\n%s\n", args[0], usage)
	return 2
}

func runFollow(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("follow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "file to copy the JSON stream to (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "testreport follow: -o FILE is required and takes no arguments")
		return 2
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintf(stderr, "testreport follow: %v\n", err)
		return 2
	}
	failed, err := follow(stdin, f, stdout)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "testreport follow: %v\n", err)
		return 2
	}
	if failed {
		return 1
	}
	return 0
}

// walls is the repeated -wall PASS=SECONDS flag.
type walls map[string]float64

func (w walls) String() string { return fmt.Sprint(map[string]float64(w)) }

func (w walls) Set(s string) error {
	name, secs, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("-wall %q: want PASS=SECONDS", s)
	}
	v, err := strconv.ParseFloat(secs, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("-wall %q: seconds %q is not a non-negative number", s, secs)
	}
	w[name] = v
	return nil
}

func runTable(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 15, "how many of the slowest tests (and packages) to list")
	trim := fs.String("trim", "", "prefix to cut from package paths (the module path and a slash)")
	w := walls{}
	fs.Var(w, "wall", "PASS=SECONDS: the wall time of a pass, as its caller measured it (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 || *n <= 0 {
		fmt.Fprintln(stderr, "testreport table: give -n > 0 and at least one FILE.json")
		return 2
	}
	var passes []*pass
	for _, name := range fs.Args() {
		p, err := readPass(name)
		if err != nil {
			fmt.Fprintf(stderr, "testreport table: %v\n", err)
			return 2
		}
		if secs, ok := w[p.name]; ok {
			p.wall = secs
			p.hasWall = true
		}
		passes = append(passes, p)
	}
	if err := writeTable(stdout, passes, *n, *trim); err != nil {
		fmt.Fprintf(stderr, "testreport table: %v\n", err)
		return 2
	}
	return 0
}

// errNoEvents is returned for a file with no test2json event at all.
var errNoEvents = errors.New("no go test -json events")
