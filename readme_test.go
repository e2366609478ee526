package corral_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/ops"
)

// fragmentMark, as the first line of a README yaml block, says the block
// is part of a file: it must parse, and need not be valid on its own.
const fragmentMark = "# fragment"

// The configuration the README shows is exactly what the code accepts:
// every ```yaml block parses and is valid, so New takes it.
func TestREADMEConfigurationIsAccepted(t *testing.T) {
	t.Parallel()
	blocks, err := yamlBlocks("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```yaml block")
	}
	for _, b := range blocks {
		fragment := strings.HasPrefix(b.text, fragmentMark)
		where := "README.md:" + strconv.Itoa(b.line)
		checkConfig(t, where, b.text, fragment)
		if fragment {
			continue
		}
		// A reader copies one section of a block as often as the whole.
		sections, err := topLevel(b.text)
		if err != nil {
			continue // reported above
		}
		for _, s := range sections {
			checkConfig(t, "README.md:"+strconv.Itoa(b.line+s.line-1)+" ("+s.key+": alone)", s.text, false)
		}
	}
}

type section struct {
	key  string
	line int // in the block, 1-based
	text string
}

// topLevel splits a YAML mapping into one document per top-level key.
func topLevel(text string) ([]section, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) == 0 {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode || len(root.Content) <= 2 {
		return nil, nil // one key: the block is its own section
	}
	var out []section
	for i := 0; i+1 < len(root.Content); i += 2 {
		m := &yaml.Node{Kind: yaml.MappingNode, Content: root.Content[i : i+2]}
		data, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		out = append(out, section{key: root.Content[i].Value, line: root.Content[i].Line, text: string(data)})
	}
	return out, nil
}

// Every configuration under examples/ is accepted too: YAML files, and
// the YAML literals example code gives corral.ParseConfig.
func TestExampleConfigurationsAreAccepted(t *testing.T) {
	t.Parallel()
	found := 0
	err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			found++
			checkConfig(t, path, string(data), false)
		case ".go":
			lits, err := parseConfigLiterals(path)
			if err != nil {
				return err
			}
			for _, l := range lits {
				found++
				checkConfig(t, l.where, l.text, false)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no configuration found under examples/: the check would pass on nothing")
	}
	t.Logf("%d configurations under examples/", found)
}

// checkConfig reports, at where, a configuration that does not parse or,
// unless it is a fragment, that New refuses.
func checkConfig(t *testing.T, where, text string, fragment bool) {
	t.Helper()
	cfg, err := corral.ParseConfig([]byte(text))
	if err != nil {
		t.Errorf("%s: does not parse: %v", where, err)
		return
	}
	if fragment {
		return
	}
	c, err := corral.New(cfg, embeddedServer, corral.WithOps(ops.New)) // what the README's programs pass
	if err != nil {
		t.Errorf("%s: refused by New: %v", where, err)
		return
	}
	if err := c.Close(); err != nil {
		t.Errorf("%s: Close: %v", where, err)
	}
}

type block struct {
	line int // of the block's first line, 1-based
	text string
}

// yamlBlocks returns the ```yaml fenced blocks of a Markdown file.
func yamlBlocks(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out []block
		cur *block
	)
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			cur = &block{line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: fs.ErrInvalid}
	}
	return out, s.Err()
}

type literal struct {
	where string
	text  string
}

// parseConfigLiterals returns the string literals a Go file passes to
// corral.ParseConfig, directly or through []byte(...).
func parseConfigLiterals(path string) ([]literal, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []literal
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "ParseConfig" {
			return true
		}
		arg := call.Args[0]
		if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 {
			arg = conv.Args[0]
		}
		if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, literal{where: fset.Position(lit.Pos()).String(), text: s})
			}
		}
		return true
	})
	return out, nil
}
