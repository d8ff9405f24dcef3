// What -h prints for each subcommand: a usage line, what the command does,
// examples that work as written, then its flags, minisched's own before
// klog's.

package app

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// help is a subcommand's -h text around its flags. %[1]s anywhere in it
// stands for the binary's name.
type help struct {
	// usage is the usage line, after "usage: ".
	usage string
	// about says what the command does, in a few sentences.
	about string
	// examples are command lines that work as written, one a line; a
	// comment may follow after "#".
	examples []string
}

// flagSet returns a subcommand's flag set: newFlagSet's (klog's flags
// included), writing to c.stderr, whose -h prints h and the flags.
func (c *Command) flagSet(name string, h help) *flag.FlagSet {
	fs := newFlagSet(name)
	logging := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { logging[f.Name] = true })
	fs.SetOutput(c.stderr)
	fs.Usage = func() { c.writeHelp(fs.Output(), h, fs, logging) }
	return fs
}

// writeHelp prints h and the flags of fs: first those not in logging
// (the subcommand's own), then -v, then the names of klog's other flags.
func (c *Command) writeHelp(w io.Writer, h help, fs *flag.FlagSet, logging map[string]bool) {
	bin := func(s string) string { return strings.ReplaceAll(s, "%[1]s", c.name) }
	fmt.Fprintf(w, "usage: %s\n\n%s\n", bin(h.usage), bin(strings.TrimSpace(h.about)))
	fmt.Fprintf(w, "\nExamples:\n")
	for _, e := range h.examples {
		fmt.Fprintf(w, "  %s\n", bin(e))
	}
	fmt.Fprintf(w, "\nFlags:\n")
	var klogFlags []string
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case !logging[f.Name]:
			printFlag(w, f)
		case f.Name != "v":
			klogFlags = append(klogFlags, "-"+f.Name)
		}
	})
	fmt.Fprintf(w, "\nLogging flags (klog's):\n%s  and %s\n", verbosityHelp, strings.Join(klogFlags, ", "))
}

// verbosityHelp is what -h says about -v, instead of klog's "number for the
// log level verbosity": what each level adds.
const verbosityHelp = `  -v N
    	log verbosity: 0 (default) errors and warnings (start: each scenario's story); 1 start's scheduler's own
    	lines; 2 each pod bound or not; 3 each attempt and informer event; 4-5 every decision
`

// printFlag prints one flag as flag.PrintDefaults does: its name, the name
// of its value (from `backquotes` in its usage, else its type; none for a
// boolean), its usage and its default when that is not the zero value.
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		name = "" // a switch takes no value, whatever its usage quotes
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  -%s", f.Name)
	if name != "" {
		fmt.Fprintf(&b, " %s", name)
	}
	// A one-letter flag without a value fits its usage on the same line.
	if b.Len() <= 4 {
		b.WriteString("\t")
	} else {
		b.WriteString("\n    \t")
	}
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
	switch f.DefValue {
	case "", "0", "false", "[]":
	default:
		if name == "string" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		} else {
			fmt.Fprintf(&b, " (default %v)", f.DefValue)
		}
	}
	fmt.Fprintln(w, b.String())
}
