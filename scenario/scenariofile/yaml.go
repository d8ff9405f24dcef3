// Reading YAML nodes with the file and line of each mistake: mappings with
// known fields, strings, numbers and lists.

package scenariofile

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// mapping checks that n is a mapping whose keys are all among allowed, each
// once, and returns the values by key. With no allowed keys, any key goes.
func (p *parser) mapping(n *yaml.Node, where string, allowed ...string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n.Line, "%swant a mapping, got %s", prefix(where), describe(n))
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if len(allowed) > 0 && !slices.Contains(allowed, k.Value) {
			return nil, p.errorf(k.Line, "%sunknown field %q (fields: %s)", prefix(where), k.Value,
				strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errorf(k.Line, "%sfield %q given twice", prefix(where), k.Value)
		}
		out[k.Value] = n.Content[i+1]
	}
	return out, nil
}

// str reads a non-empty scalar.
func (p *parser) str(n *yaml.Node, where string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n.Line, "%s: want a string, got %s", where, describe(n))
	}
	if n.Value == "" {
		return "", p.errorf(n.Line, "%s: must not be empty", where)
	}
	return n.Value, nil
}

func (p *parser) integer(n *yaml.Node, where string) (int, error) {
	n = resolve(n)
	i, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, p.errorf(n.Line, "%s: want a whole number, got %s", where, describe(n))
	}
	return i, nil
}

func (p *parser) boolean(n *yaml.Node, where string) (bool, error) {
	n = resolve(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		return false, p.errorf(n.Line, "%s: want true or false, got %s", where, describe(n))
	}
	return b, nil
}

// strList reads a list of non-empty scalars.
func (p *parser) strList(n *yaml.Node, where string) ([]string, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "%s: want a list, got %s", where, describe(n))
	}
	var out []string
	for i, item := range n.Content {
		s, err := p.str(item, fmt.Sprintf("%s[%d]", where, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, args...))
}

// yamlLine finds the line in the YAML library's syntax errors.
var yamlLine = regexp.MustCompile(`^(.*)yaml: line (\d+): (.*)$`)

// yamlError turns the YAML library's "yaml: line 3: …" into "file:3: …";
// base is added to its line (the line before a string that was parsed on
// its own).
func (p *parser) yamlError(err error, base int) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[2])
		return p.errorf(base+line, "%s%s", m[1], m[3])
	}
	return fmt.Errorf("%s: %w", p.file, err)
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names what a node is, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "nothing"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	default:
		return "an empty document"
	}
}

// prefix is where followed by ": ", or nothing at the top of the file.
func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}
