package domxml_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/domxml"
)

// TestOptionsDirsDocumented: every directory field of domxml.Options says
// what it holds and what an empty value means (its default), so that a
// program that is not a KubeVirt launcher knows which to set; and the
// defaults WithDefaults applies are those the comments name.
func TestOptionsDirsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "options.go", nil, parser.ParseComments)
	require.NoError(t, err)
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Options" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range fld.Names {
				docs[name.Name] = fld.Doc.Text()
			}
		}
		return false
	})
	defaults := reflect.ValueOf(domxml.Options{}.WithDefaults())
	typ := defaults.Type()
	dirs := 0
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if !strings.HasSuffix(name, "Dir") {
			continue
		}
		dirs++
		doc := strings.Join(strings.Fields(docs[name]), " ")
		require.NotEmpty(t, doc, "Options.%s has no doc comment", name)
		require.Regexp(t, regexp.MustCompile(`(?i)empty means`), doc, "Options.%s does not say what empty means", name)
		def := defaults.Field(i).String()
		// CloudInitDir and NVRAMDir default to paths under other fields.
		if name != "CloudInitDir" && name != "NVRAMDir" {
			require.Contains(t, doc, def, "Options.%s's comment names its default", name)
		}
	}
	require.Equal(t, 7, dirs, "every directory field checked")
}
