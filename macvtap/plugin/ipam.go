package plugin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/types/create"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// The IPAM plugin is run as the CNI library's pkg/ipam.ExecAdd runs it, but
// with the CNI_* variables taken from args rather than from this process's
// environment (so in-process callers work), with the caller's context, and
// without the library's invoke package: that package imports OpenTelemetry
// (for trace propagation this plugin never does) and with it net/http,
// whose package initialisation every CNI call of this plugin would pay
// (docs/macvtap-device-plugin.md, "Start-up").

// Exec finds and runs IPAM plugins. The CNI library's invoke.Exec
// implementations satisfy it.
type Exec interface {
	// ExecPlugin runs the plugin at pluginPath with stdinData on its
	// standard input and environ as its whole environment, and returns
	// its standard output; a failed run is an error (a *types.Error when
	// the plugin printed one).
	ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error)
	// FindInPath returns the path of the plugin in the first of paths
	// that has it.
	FindInPath(plugin string, paths []string) (string, error)
}

// rawExec is the default [Exec]: exec the binary found in CNI_PATH.
type rawExec struct{}

func (rawExec) ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(ctx, pluginPath)
	c.Env, c.Stdin, c.Stdout, c.Stderr = environ, bytes.NewReader(stdinData), &stdout, &stderr
	if err := c.Run(); err != nil {
		return nil, pluginError(err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// pluginError is the error of a failed plugin run: the CNI error it
// printed, else one carrying its standard error.
func pluginError(err error, stdout, stderr []byte) error {
	e := &types.Error{}
	switch {
	case len(stdout) > 0:
		if perr := json.Unmarshal(stdout, e); perr != nil {
			e.Msg = fmt.Sprintf("plugin failed, and its error %q does not parse: %v", stdout, perr)
		}
	case len(stderr) > 0:
		e.Msg = fmt.Sprintf("plugin failed: %q: %v", strings.TrimSpace(string(stderr)), err)
	default:
		e.Msg = fmt.Sprintf("plugin failed with no error message: %v", err)
	}
	return e
}

func (rawExec) FindInPath(plugin string, paths []string) (string, error) {
	if plugin == "" {
		return "", errors.New("no plugin name")
	}
	if strings.ContainsRune(plugin, os.PathSeparator) {
		return "", fmt.Errorf("plugin name %q contains %q", plugin, os.PathSeparator)
	}
	if len(paths) == 0 {
		return "", errors.New("no paths (CNI_PATH is empty)")
	}
	for _, dir := range paths {
		full := filepath.Join(dir, plugin)
		if st, err := os.Stat(full); err == nil && st.Mode().IsRegular() {
			return full, nil
		}
	}
	return "", fmt.Errorf("failed to find plugin %q in path %s", plugin, paths)
}

func (p *Plugin) exec() Exec { return cmp.Or(p.Exec, Exec(rawExec{})) }

// ipamEnv is this process's environment without its CNI_* variables,
// then those of verb and args.
func ipamEnv(verb string, args *skel.CmdArgs) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNI_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"CNI_COMMAND="+verb,
		"CNI_CONTAINERID="+args.ContainerID,
		"CNI_NETNS="+args.Netns,
		"CNI_ARGS="+args.Args,
		"CNI_IFNAME="+args.IfName,
		"CNI_PATH="+args.Path,
	)
}

func (p *Plugin) ipamAdd(ctx context.Context, conf *cniconfig.NetConf, args *skel.CmdArgs) (*current.Result, error) {
	out, err := p.ipamRun(ctx, "ADD", conf, args)
	if err != nil {
		return nil, err
	}
	fail := func(err error) error {
		return &Error{Verb: "ADD", Step: "run IPAM plugin " + conf.IPAM.Type, Err: err}
	}
	// A result without a cniVersion is in the configuration's (as the
	// CNI library reads it).
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fail(fmt.Errorf("result %q: %w", out, err))
	}
	var ver string
	if v, ok := raw["cniVersion"]; ok {
		_ = json.Unmarshal(v, &ver)
	}
	if ver == "" {
		ver = conf.CNIVersion
		if raw == nil {
			raw = map[string]json.RawMessage{}
		}
		raw["cniVersion"], _ = json.Marshal(ver)
		if out, err = json.Marshal(raw); err != nil {
			return nil, fail(err)
		}
	}
	r, err := create.Create(ver, out)
	if err != nil {
		return nil, fail(err)
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return nil, fail(err)
	}
	return res, nil
}

func (p *Plugin) ipamExec(ctx context.Context, verb string, conf *cniconfig.NetConf, args *skel.CmdArgs) error {
	_, err := p.ipamRun(ctx, verb, conf, args)
	return err
}

// ipamRun runs verb of the IPAM plugin and returns its standard output.
func (p *Plugin) ipamRun(ctx context.Context, verb string, conf *cniconfig.NetConf, args *skel.CmdArgs) ([]byte, error) {
	path, err := p.exec().FindInPath(conf.IPAM.Type, filepath.SplitList(args.Path))
	var out []byte
	if err == nil {
		out, err = p.exec().ExecPlugin(ctx, path, args.StdinData, ipamEnv(verb, args))
	}
	if err != nil {
		return nil, &Error{Verb: verb, Step: "run IPAM plugin " + conf.IPAM.Type, Err: err}
	}
	return out, nil
}
