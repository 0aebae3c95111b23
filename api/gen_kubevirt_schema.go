//go:build ignore

// Command gen_kubevirt_schema writes the data that api embeds: the field
// names of KubeVirt's VirtualMachineInstance and VirtualMachine (every type
// reachable from them), taken from KubeVirt's OpenAPI documents
// (api/openapi-spec/swagger.json of each release given; the union of their
// fields), without descriptions. Run from api/, naming each release's
// swagger.json (a data file of KubeVirt's repository at that tag; nothing of
// KubeVirt is built):
//
//	go run gen_kubevirt_schema.go -tag v0.53.2,v1.9.0 \
//	  -swagger SWAGGER_V0_53_2,SWAGGER_V1_9_0
//
// The output, kubevirt_schema.json, maps each type name to its fields; a
// field's value is "" for a scalar, a type name for an object, "[]X" for an
// array of X, "{}X" for a map of X, and "*" for a free-form object (an
// empty struct, such as InterfaceBridge, is a type with no fields).
package main

import (
	"encoding/json"
	"flag"
	"log"
	"os"
	"sort"
	"strings"
)

type schema struct {
	Type                 typeName           `json:"type"`
	Ref                  string             `json:"$ref"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	AdditionalProperties *schema            `json:"additionalProperties"`
}

// typeName is a schema's "type": a string, or a list of which the first
// counts (["string", "integer"] is scalar either way).
type typeName string

func (t *typeName) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		if len(list) > 0 {
			*t = typeName(list[0])
		}
		return nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	*t = typeName(s)
	return err
}

// freeForm are the objects without properties that hold arbitrary JSON;
// every other one is an empty struct.
var freeForm = map[string]bool{
	"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": true,
	"k8s.io.apimachinery.pkg.apis.meta.v1.Patch":    true,
	"k8s.io.apimachinery.pkg.runtime.RawExtension":  true,
}

func main() {
	swaggers := flag.String("swagger", "", "comma-separated paths of KubeVirt's api/openapi-spec/swagger.json")
	tag := flag.String("tag", "", "the KubeVirt releases the files come from, comma-separated")
	out := flag.String("o", "kubevirt_schema.json", "output file")
	flag.Parse()
	types := map[string]map[string]string{}
	for _, swagger := range strings.Split(*swaggers, ",") {
		for name, fields := range fieldsOf(swagger) {
			if types[name] == nil {
				types[name] = map[string]string{}
			}
			for k, v := range fields {
				if old, ok := types[name][k]; !ok || old == "" || v == "*" {
					types[name][k] = v
				}
			}
		}
	}
	roots := map[string]string{"VirtualMachineInstance": "v1.VirtualMachineInstance", "VirtualMachine": "v1.VirtualMachine"}
	write(*out, *tag, roots, types)
}

// fieldsOf reads one swagger document: the fields of every type reachable
// from the roots.
func fieldsOf(swagger string) map[string]map[string]string {
	data, err := os.ReadFile(swagger)
	if err != nil {
		log.Fatal(err)
	}
	var doc struct {
		Definitions map[string]*schema `json:"definitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		log.Fatal(err)
	}
	types := map[string]map[string]string{}
	var ref func(s *schema) string
	var visit func(name string)
	ref = func(s *schema) string {
		switch {
		case s == nil:
			return "*"
		case s.Ref != "":
			name := strings.TrimPrefix(s.Ref, "#/definitions/")
			d := doc.Definitions[name]
			if d == nil {
				log.Fatalf("no definition %s", name)
			}
			if len(d.Properties) == 0 {
				switch {
				case d.AdditionalProperties != nil:
					return "{}" + ref(d.AdditionalProperties)
				case freeForm[name]:
					return "*"
				case d.Type == "object":
					// An empty struct (InterfaceBridge, Rng, …): no field.
					visit(name)
					return name
				}
				return ref(&schema{Type: d.Type, Items: d.Items})
			}
			visit(name)
			return name
		case s.Type == "array":
			return "[]" + ref(s.Items)
		case s.AdditionalProperties != nil:
			return "{}" + ref(s.AdditionalProperties)
		case s.Type == "object" && len(s.Properties) == 0:
			return "*"
		case s.Type == "object":
			log.Fatalf("inline object with properties")
		}
		return ""
	}
	visit = func(name string) {
		if _, done := types[name]; done {
			return
		}
		fields := map[string]string{}
		types[name] = fields
		for k, p := range doc.Definitions[name].Properties {
			fields[k] = ref(p)
		}
	}
	for _, r := range []string{"v1.VirtualMachineInstance", "v1.VirtualMachine"} {
		visit(r)
	}
	return types
}

func write(out, tag string, roots map[string]string, types map[string]map[string]string) {
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	f, err := os.Create(out)
	if err != nil {
		log.Fatal(err)
	}
	w := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			log.Fatal(err)
		}
	}
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			log.Fatal(err)
		}
		return string(b)
	}
	w("{\n")
	w(`"source": ` + enc("KubeVirt "+tag+", api/openapi-spec/swagger.json: field names of the types reachable from v1.VirtualMachineInstance and v1.VirtualMachine, union of the releases (descriptions dropped), by api/gen_kubevirt_schema.go") + ",\n")
	w(`"roots": ` + enc(roots) + ",\n")
	w(`"types": {` + "\n")
	for i, n := range names {
		sep := ",\n"
		if i == len(names)-1 {
			sep = "\n"
		}
		w(enc(n) + ": " + enc(types[n]) + sep)
	}
	w("}\n}\n")
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
