package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stream builds a go test -json stream: each ev is
// "seconds-after-t0 action package test elapsed [output]", fields split
// on '|'.
func stream(t *testing.T, evs ...string) string {
	t.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	for _, ev := range evs {
		f := strings.Split(ev, "|")
		require.Len(t, f, 6, ev)
		var at, elapsed float64
		_, err := fmt.Sscan(f[0], &at)
		require.NoError(t, err)
		if f[4] != "" {
			_, err = fmt.Sscan(f[4], &elapsed)
			require.NoError(t, err)
		}
		tm := t0.Add(time.Duration(at * float64(time.Second))).Format(time.RFC3339Nano)
		fmt.Fprintf(&b, `{"Time":%q,"Action":%q,"Package":%q`, tm, f[1], f[2])
		if f[3] != "" {
			fmt.Fprintf(&b, `,"Test":%q`, f[3])
		}
		if f[1] == "output" || f[1] == "build-output" {
			fmt.Fprintf(&b, `,"Output":%q`, f[5]+"\n")
		}
		if f[1] == "pass" || f[1] == "fail" || f[1] == "skip" {
			fmt.Fprintf(&b, `,"Elapsed":%g`, elapsed)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// A passing package prints its ok line only; a failing test prints its
// whole output; a test still running when its package fails (a panic, the
// timeout) prints its output too, then the package's own lines.
func TestFollow(t *testing.T) {
	in := stream(t,
		"0|start|m/a|||",
		"0|run|m/a|TestQuiet||",
		"0|output|m/a|TestQuiet||=== RUN   TestQuiet",
		"0|output|m/a|TestQuiet||    a_test.go:1: chatter of a passing test",
		"1|pass|m/a|TestQuiet|1|",
		"1|output|m/a|||PASS",
		"1|output|m/a|||ok  \tm/a\t1.000s",
		"1|pass|m/a||1|",
		"1|skip|m/none||0|",
		"2|run|m/b|TestBroken||",
		"2|output|m/b|TestBroken||    b_test.go:9: want 1, got 2",
		"2|output|m/b|TestBroken||--- FAIL: TestBroken (0.50s)",
		"2|fail|m/b|TestBroken|0.5|",
		"2|run|m/b|TestHangs||",
		"2|output|m/b|TestHangs||    b_test.go:20: waiting",
		"3|output|m/b|||panic: test timed out after 1s",
		"3|output|m/b|||FAIL\tm/b\t1.000s",
		"3|fail|m/b||1|",
	)
	var raw, human bytes.Buffer
	failed, err := follow(strings.NewReader(in), &raw, &human)
	require.NoError(t, err)
	require.True(t, failed)
	require.Equal(t, in, raw.String(), "the copy is the stream, byte for byte")
	require.Equal(t, "ok  \tm/a\t1.000s\n"+
		"?   \tm/none\t[no test files]\n"+
		"    b_test.go:9: want 1, got 2\n--- FAIL: TestBroken (0.50s)\n"+
		"    b_test.go:20: waiting\n"+
		"panic: test timed out after 1s\nFAIL\tm/b\t1.000s\n", human.String())
}

// Build errors and the go command's plain text are shown; a build failure
// is a failure; an all-pass stream is not.
func TestFollowBuildAndText(t *testing.T) {
	in := stream(t,
		"0|build-output|m/c|||# m/c",
		"0|build-output|m/c|||c.go:3:1: syntax error",
		"0|build-fail|m/c|||",
	) + "go: warning: something plain\n"
	var raw, human bytes.Buffer
	failed, err := follow(strings.NewReader(in), &raw, &human)
	require.NoError(t, err)
	require.True(t, failed)
	require.Equal(t, "# m/c\nc.go:3:1: syntax error\ngo: warning: something plain\n", human.String())

	human.Reset()
	failed, err = follow(strings.NewReader(stream(t, "0|pass|m/a||0.1|")), &raw, &human)
	require.NoError(t, err)
	require.False(t, failed)
	require.Equal(t, "ok  \tm/a\t0.100s\n", human.String())
}

func TestTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	static := write("static.json", stream(t,
		"0|run|mod/a|TestSlow||",
		"0|run|mod/a|TestSlow/sub||",
		"90|pass|mod/a|TestSlow/sub|90|",
		"95|pass|mod/a|TestSlow|95|",
		"95|run|mod/a|TestFast||",
		"95.2|fail|mod/a|TestFast|0.2|",
		"96|fail|mod/a||96|",
		"0|skip|mod/notests||0|",
		"0|run|mod/b|TestSkip||",
		"0|skip|mod/b|TestSkip|0|",
		"0.2|run|mod/b|BenchmarkX||",
		"0.7|output|mod/b|BenchmarkX||BenchmarkX-2   1   5000 ns/op", // no end event of its own
		"1|pass|mod/b||1|",
	))
	race := write("race.json", stream(t,
		"0|run|mod/a|TestSlow||",
		"120|pass|mod/a|TestSlow|120|",
		"120|run|mod/a|TestCut||",
		"130|output|mod/a|TestCut||still going", // the stream ends here
	))
	var out, errs bytes.Buffer
	code := run([]string{"table", "-n", "3", "-trim", "mod/", "-wall", "static=100", "-wall", "race=140", static, race}, nil, &out, &errs)
	require.Equal(t, 0, code, errs.String())
	require.Equal(t, `== the 3 slowest tests
  seconds  pass    result   package  test
    120.0  race    pass     a        TestSlow
     95.0  static  pass     a        TestSlow
     10.0  race    running  a        TestCut
== the 3 slowest packages
  seconds  pass    result   package
    130.0  race    running  a
     96.0  static  fail     a
      1.0  static  pass     b
== passes (wall: the pass from start to end, compiling included; packages: the sum of their times and the count of those with tests)
pass     wall s  packages s  packages  tests  passed  failed  skipped  running
static      100          97         2      4       2       1        1        0
race        140         130         1      2       1       0        0        1
`, out.String())
}

func TestVersion(t *testing.T) {
	var out, errs bytes.Buffer
	require.Equal(t, 0, run([]string{"--version"}, nil, &out, &errs))
	require.Regexp(t, `^testreport \S+ \(virtnet, go\S+\)\n$`, out.String())
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte("not json\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage:"},
		{"unknown command", []string{"sum"}, `unknown command "sum"`},
		{"follow without -o", []string{"follow"}, "-o FILE is required"},
		{"table without files", []string{"table"}, "at least one FILE.json"},
		{"bad wall", []string{"table", "-wall", "static=soon", empty}, `seconds "soon" is not a non-negative number`},
		{"no events", []string{"table", empty}, "empty.json: no go test -json events"},
		{"missing file", []string{"table", filepath.Join(dir, "gone.json")}, "gone.json: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			require.Equal(t, 2, run(tc.args, strings.NewReader(""), &out, &errs))
			require.Contains(t, errs.String(), tc.want)
		})
	}
}
