package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/faultline-dev/faultline/internal/smallfile"
)

// Keys each mapping of a spec may have, in the order messages list them.
var (
	jobKeys      = []string{"name", "max_parallelism", "verify", "id", "operators"}
	operatorKeys = []string{"name", "type", "parallelism", "topic", "key", "schema", "state_ttl", "watermark_alignment", "inputs"}
	inputKeys    = []string{"from", "edge", "key"}
)

// namePattern is what job and operator names may look like: they appear in
// task names ("join/1"), in state keys and on screen.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// topicPattern is what Kafka accepts as a topic name.
var topicPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// MaxFileSize is the largest job spec Load reads. A spec of a few
// operators is a few hundred bytes; the limit keeps a wrong path (a log, a
// device) from being read into memory.
const MaxFileSize = 1 << 20

// Load reads the job spec at path and parses it against the job's
// catalogue. Only a regular file of at most MaxFileSize is read: a device
// such as /dev/zero, a FIFO or a folder is refused at once instead of read
// for ever or waited on.
func Load(path string, cat Catalogue) (*Job, error) {
	data, err := smallfile.Read(path, "job spec", MaxFileSize)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, cat)
}

// Parse parses and validates a job spec against the catalogue of the job
// it is for (its operator kinds, input topics and verify kinds). file
// names the spec in messages. Every problem with the spec is returned as
// an *Error; the first one found is reported.
func Parse(file string, data []byte, cat Catalogue) (*Job, error) {
	p := &parser{file: file, data: data, cat: cat}
	return p.parse()
}

// parser holds what one Parse call needs to build messages.
type parser struct {
	file string
	data []byte
	cat  Catalogue
}

func (p *parser) errf(line int, field, format string, args ...any) *Error {
	return &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// entry is one key and its value in a YAML mapping.
type entry struct {
	key, val *yaml.Node
}

// fields is a YAML mapping read by mapping: its entries by key, and the line
// of the mapping itself for messages about missing keys.
type fields struct {
	line    int
	entries map[string]entry
}

// get returns the value of key, or nil when the key is absent or its value
// is null ("key:" with nothing after it).
func (f fields) get(key string) *yaml.Node {
	e, ok := f.entries[key]
	if !ok || isNull(e.val) {
		return nil
	}
	return e.val
}

func (p *parser) parse() (*Job, error) {
	if !utf8.Valid(p.data) {
		line := 1 + bytes.Count(p.data[:firstInvalidUTF8(p.data)], []byte("\n"))
		return nil, p.errf(line, "", "the file is not UTF-8 text")
	}
	dec := yaml.NewDecoder(bytes.NewReader(p.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(1, "", "the file is empty; a job spec needs at least name and operators")
		}
		return nil, p.syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		if len(extra.Content) > 0 && !isNull(extra.Content[0]) {
			return nil, p.errf(extra.Line, "", "a job spec is one YAML document, but the file has another one here (after '---'); put each job in its own file")
		}
	case !errors.Is(err, io.EOF):
		return nil, p.syntaxError(err)
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, p.errf(1, "", "the file has no content; a job spec needs at least name and operators")
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root.Line, "", "a job spec must be a mapping with keys %s, got %s", strings.Join(jobKeys, ", "), describe(root))
	}
	top, err := p.mapping(root, "", jobKeys)
	if err != nil {
		return nil, err
	}

	job := &Job{File: p.file, MaxParallelism: DefaultMaxParallelism}
	if job.Name, err = p.name(top, "name", "the job's name, e.g. name: orders"); err != nil {
		return nil, err
	}
	if n := top.get("max_parallelism"); n != nil {
		if job.MaxParallelism, err = p.wholeNumber(n, "max_parallelism", MaxMaxParallelism, ""); err != nil {
			return nil, err
		}
	}
	verifyNode, idNode := top.get("verify"), top.get("id")
	if err := p.verifyAndID(job, verifyNode, idNode); err != nil {
		return nil, err
	}
	opsNode := top.get("operators")
	if opsNode == nil {
		return nil, p.errf(top.line, "operators", "required: the list of the job's operators, sources first")
	}
	if opsNode.Kind != yaml.SequenceNode {
		return nil, p.errf(opsNode.Line, "operators", "must be a list of operators, got %s", describe(opsNode))
	}
	if len(opsNode.Content) == 0 {
		return nil, p.errf(opsNode.Line, "operators", "the list is empty; a job needs at least a source and a sink")
	}
	opsLine := top.entries["operators"].key.Line
	// Too many operators is refused before each is read: reading checks
	// every operator against those before it.
	if n := len(opsNode.Content); n > MaxOperators {
		return nil, p.errf(opsLine, "operators", "%s", Size{Operators: n}.TooBig())
	}
	if err := p.operators(job, opsNode); err != nil {
		return nil, err
	}
	if err := p.checkJob(job, opsLine, verifyNode); err != nil {
		return nil, err
	}
	if err := p.checkID(job, opsLine, idNode); err != nil {
		return nil, err
	}
	if msg := SizeOf(job).TooBig(); msg != "" {
		return nil, p.errf(opsLine, "operators", "%s", msg)
	}
	return job, nil
}

// verifyAndID reads the job's verify kind and id, when the spec names them.
func (p *parser) verifyAndID(job *Job, verifyNode, idNode *yaml.Node) error {
	var err error
	if verifyNode != nil && verifyNode.Kind == yaml.ScalarNode && verifyNode.ShortTag() == "!!bool" {
		// verify: false turns the verification off; true is the default
		// kind, as if the key were absent.
		var on bool
		if err := verifyNode.Decode(&on); err != nil {
			return p.errf(verifyNode.Line, "verify", "must be %s, true or false", orList(p.cat.Verifies))
		}
		job.VerifyOff = !on
		verifyNode = nil
	}
	if verifyNode != nil {
		if job.Verify, err = p.text(verifyNode, "verify"); err != nil {
			return err
		}
		if !slices.Contains(p.cat.Verifies, job.Verify) {
			return p.errf(verifyNode.Line, "verify", "must be %s (or false: no verification), got %q", orList(p.cat.Verifies), job.Verify)
		}
	}
	if idNode != nil {
		if job.ID, err = p.text(idNode, "id"); err != nil {
			return err
		}
	}
	return nil
}

// Messages of the YAML parser that syntaxError takes apart.
var (
	yamlLineMsg       = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlUnknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError turns an error of the YAML parser into an *Error with the
// line the parser named, or one found in the text.
func (p *parser) syntaxError(err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineMsg.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else if m := yamlUnknownAnchor.FindStringSubmatch(msg); m != nil {
		line = p.lineOf("*" + m[1])
		msg = fmt.Sprintf("alias *%s refers to no anchor &%s defined above it", m[1], m[1])
	}
	switch {
	case msg == "control characters are not allowed":
		if i := bytes.IndexFunc(p.data, isControl); i >= 0 {
			line = 1 + bytes.Count(p.data[:i], []byte("\n"))
		}
	case strings.Contains(msg, "cannot start any token") || strings.Contains(msg, "tab character"):
		for _, l := range []int{line, line - 1} { // the scanner may name the line after
			if l > 0 && strings.HasPrefix(strings.TrimLeft(p.lineText(l), " "), "\t") {
				return p.errf(l, "", "invalid YAML: this line is indented with a tab; YAML needs spaces")
			}
		}
	case strings.Contains(msg, "unexpected end of stream"):
		msg += " (is a quote or a bracket left open?)"
	}
	return p.errf(line, "", "invalid YAML: %s", msg)
}

// isControl reports the characters YAML rejects as control characters.
func isControl(r rune) bool {
	return r != '\t' && r != '\n' && r != '\r' && r != 0x85 && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0))
}

// lineOf returns the 1-based line where s first occurs in the file, or 0.
func (p *parser) lineOf(s string) int {
	i := bytes.Index(p.data, []byte(s))
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(p.data[:i], []byte("\n"))
}

// lineText returns the text of a 1-based line.
func (p *parser) lineText(line int) string {
	lines := strings.Split(string(p.data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// mapping reads a YAML mapping, rejecting duplicate keys and keys not in
// allowed. path is the field path of the mapping ("" for the top level).
func (p *parser) mapping(n *yaml.Node, path string, allowed []string) (fields, error) {
	f := fields{line: n.Line, entries: map[string]entry{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return f, p.errf(k.Line, path, "keys must be plain words, got %s", describe(k))
		}
		field := join(path, k.Value)
		if !slices.Contains(allowed, k.Value) {
			return f, p.errf(k.Line, field, "unknown key %q (allowed: %s)", k.Value, strings.Join(allowed, ", "))
		}
		if prev, dup := f.entries[k.Value]; dup {
			return f, p.errf(k.Line, field, "given twice (first at line %d)", prev.key.Line)
		}
		f.entries[k.Value] = entry{key: k, val: v}
	}
	return f, nil
}

// text reads a scalar as text.
func (p *parser) text(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n.Line, field, "must be a single word, got %s", describe(n))
	}
	return n.Value, nil
}

// name reads a required name: of the job or of an operator.
func (p *parser) name(f fields, field, what string) (string, error) {
	n := f.get("name")
	if n == nil {
		return "", p.errf(f.line, field, "required: %s", what)
	}
	s, err := p.text(n, field)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", p.errf(n.Line, field, "must not be empty")
	}
	if !namePattern.MatchString(s) {
		return "", p.errf(n.Line, field, "%q: use only letters, digits, '.', '_' and '-', starting with a letter or digit", s)
	}
	return s, nil
}

// wholeNumber reads an integer from 1 to max. hint is added to the message
// when the number is too large.
func (p *parser) wholeNumber(n *yaml.Node, field string, max int, hint string) (int, error) {
	bad := func(got string, tooLarge bool) error {
		msg := fmt.Sprintf("must be a whole number from 1 to %d, got %s", max, got)
		if tooLarge && hint != "" {
			msg += "; " + hint
		}
		return p.errf(n.Line, field, "%s", msg)
	}
	if n.Kind != yaml.ScalarNode {
		return 0, bad(describe(n), false)
	}
	var v int64
	var err error
	switch n.Tag {
	case "!!int":
		err = n.Decode(&v)
	case "!!str": // a quoted number: accept it
		v, err = strconv.ParseInt(strings.TrimSpace(n.Value), 10, 64)
	default:
		err = errors.New("not an integer")
	}
	if err != nil {
		return 0, bad(describe(n), false)
	}
	if v < 1 || v > int64(max) {
		return 0, bad(strconv.FormatInt(v, 10), v > int64(max) && v <= MaxMaxParallelism)
	}
	return int(v), nil
}

// deref follows YAML aliases (*name) to the node they refer to.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names a node's value for messages in the user's words, never in
// YAML tags: a list, a mapping, nothing, 2.5, "two".
func describe(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!int", "!!float", "!!bool":
			return n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

// join appends key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
