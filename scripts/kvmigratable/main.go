//go:build ignore

// Command kvmigratable runs KubeVirt v1.9.0's VerifyVMIMigratable on the cases of
// migration/testdata/kubevirt-v1.9.0-migratable.in.json (see scripts/kvmigratable.sh).
package main

import (
	"encoding/json"
	"os"

	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/network/vmispec"
)

func main() {
	var in struct {
		Plugins map[string]v1.InterfaceBindingPlugin `json:"plugins"`
		Cases   []struct {
			Name string                    `json:"name"`
			VMI  v1.VirtualMachineInstance `json:"vmi"`
		} `json:"cases"`
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &in); err != nil {
		panic(err)
	}
	type answer struct {
		Name       string `json:"name"`
		Migratable bool   `json:"migratable"`
		Error      string `json:"error,omitempty"`
	}
	var out []answer
	for _, c := range in.Cases {
		vmi := c.VMI
		err := vmispec.VerifyVMIMigratable(&vmi, in.Plugins)
		a := answer{Name: c.Name, Migratable: err == nil}
		if err != nil {
			a.Error = err.Error()
		}
		out = append(out, a)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
