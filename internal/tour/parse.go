package tour

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/faultline-dev/faultline/internal/smallfile"
	"github.com/faultline-dev/faultline/runtime/fault"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/view"
)

// MaxFileSize is the largest tour file Load reads. A tour is a few
// kilobytes; the limit keeps a wrong path (a log, a disk image) from being
// read into memory.
const MaxFileSize = 1 << 20

// Load reads and checks the tour in file. A malformed tour is refused with
// a *spec.Error naming the file, the line and the field. Only a regular
// file of at most MaxFileSize is read: a named pipe, a device or a folder
// is refused at once instead of waited on or read for ever.
func Load(file string) (*Tour, error) {
	data, err := smallfile.Read(file, "tour", MaxFileSize)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// LoadDir reads every tour (*.yaml) in dir, by name.
func LoadDir(dir string) ([]*Tour, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*Tour
	for _, f := range files {
		t, err := Load(f)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

var (
	topKeys       = []string{"title", "summary", "minutes", "concepts", "run", "steps"}
	stepKeys      = []string{"say", "link", "auto", "wait", "tempo", "step", "highlight", "press", "do", "check", "run"}
	stepActions   = []string{"say", "wait", "tempo", "step", "highlight", "press", "do", "check", "run"}
	condKeys      = []string{"event", "where", "aligning", "slowed", "overtaken", "job_status", "checkpoints", "freeze", "says", "timeout"}
	highlightKeys = []string{"task", "inputs", "checkpoint", "verify", "restart", "header"}
	pressKeys     = []string{"keys", "do", "until"}
	actionKeys    = []string{"inject", "task", "for", "mode", "checkpoint", "savepoint", "reset_restarts", "rate"}
	checkKeys     = []string{"claim", "duplicates", "lost", "restarts", "restored_from", "job_status", "event", "where", "within", "explain"}

	tempos    = []string{"normal", "slow", "slower", "frozen"}
	modes     = modeNames()
	statuses  = statusNames()
	compareRe = regexp.MustCompile(`^(>=|<=|>|<|=)?[0-9]+$`)
	taskRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[0-9]+$`)
)

// Parse checks data, the tour in file.
func Parse(file string, data []byte) (*Tour, error) {
	p := &parser{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(1, "", "the file is empty; a tour needs title, summary, minutes and steps")
		}
		return nil, p.syntax(err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, p.errf(doc.Line, "", "a tour must be a mapping with keys %s", strings.Join(topKeys, ", "))
	}
	top, err := p.mapping(doc.Content[0], "", topKeys)
	if err != nil {
		return nil, err
	}
	t := &Tour{Name: strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), File: file}
	for _, req := range []string{"title", "summary", "minutes", "steps"} {
		if top.get(req) == nil {
			return nil, p.errf(top.line, req, "required")
		}
	}
	if t.Title, err = p.text(top.get("title"), "title"); err != nil {
		return nil, err
	}
	if t.Summary, err = p.text(top.get("summary"), "summary"); err != nil {
		return nil, err
	}
	if t.Minutes, err = p.count(top.get("minutes"), "minutes", 1, 10); err != nil {
		return nil, err
	}
	if t.Concepts, err = p.words(top.get("concepts"), "concepts"); err != nil {
		return nil, err
	}
	if t.Run, err = p.words(top.get("run"), "run"); err != nil {
		return nil, err
	}
	steps := top.get("steps")
	if steps.Kind != yaml.SequenceNode || len(steps.Content) == 0 {
		return nil, p.errf(steps.Line, "steps", "must be a list of steps, got %s", describe(steps))
	}
	for i, n := range steps.Content {
		s, err := p.step(n, fmt.Sprintf("steps[%d]", i))
		if err != nil {
			return nil, err
		}
		if i == 0 && s.Run != nil {
			return nil, p.errf(n.Line, "steps[0].run", "the first run's flags go in run at the top of the tour")
		}
		t.Steps = append(t.Steps, s)
	}
	return t, nil
}

type parser struct{ file string }

func (p *parser) errf(line int, field, format string, args ...any) error {
	return &spec.Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

var lineRe = regexp.MustCompile(`line ([0-9]+)`)

// syntax turns a YAML syntax error into one line with its line number.
func (p *parser) syntax(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimSpace(lineRe.ReplaceAllString(msg, ""))
		msg = strings.TrimPrefix(msg, ": ")
	}
	return p.errf(line, "", "not valid YAML: %s", msg)
}

// fields is a mapping's entries by key, and the mapping's line.
type fields struct {
	line    int
	entries map[string][2]*yaml.Node
}

func (f fields) get(key string) *yaml.Node {
	e, ok := f.entries[key]
	if !ok || e[1].Tag == "!!null" {
		return nil
	}
	return e[1]
}

func (f fields) keyLine(key string) int {
	if e, ok := f.entries[key]; ok {
		return e[0].Line
	}
	return f.line
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (p *parser) mapping(n *yaml.Node, path string, allowed []string) (fields, error) {
	f := fields{line: n.Line, entries: map[string][2]*yaml.Node{}}
	if n.Kind != yaml.MappingNode {
		return f, p.errf(n.Line, path, "must be a mapping with keys %s, got %s", strings.Join(allowed, ", "), describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := join(path, k.Value)
		if k.Kind != yaml.ScalarNode || !slices.Contains(allowed, k.Value) {
			return f, p.errf(k.Line, field, "unknown key %q (allowed: %s)", k.Value, strings.Join(allowed, ", "))
		}
		if prev, dup := f.entries[k.Value]; dup {
			return f, p.errf(k.Line, field, "given twice (first at line %d)", prev[0].Line)
		}
		f.entries[k.Value] = [2]*yaml.Node{k, v}
	}
	return f, nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return strconv.Quote(n.Value)
}

func (p *parser) text(n *yaml.Node, field string) (string, error) {
	if n == nil {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n.Line, field, "must be text, got %s", describe(n))
	}
	if strings.TrimSpace(n.Value) == "" {
		return "", p.errf(n.Line, field, "must not be empty")
	}
	return strings.TrimRight(n.Value, "\n"), nil
}

func (p *parser) oneOf(n *yaml.Node, field string, allowed []string) (string, error) {
	s, err := p.text(n, field)
	if err != nil || s == "" {
		return s, err
	}
	if !slices.Contains(allowed, s) {
		return "", p.errf(n.Line, field, "%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return s, nil
}

func (p *parser) flag(n *yaml.Node, field string) (bool, error) {
	if n == nil {
		return false, nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, p.errf(n.Line, field, "must be true or false, got %s", describe(n))
	}
	return n.Value == "true", nil
}

func (p *parser) count(n *yaml.Node, field string, least, most int) (int, error) {
	if n == nil {
		return 0, nil
	}
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || v < least || v > most {
		return 0, p.errf(n.Line, field, "must be a whole number from %d to %d, got %s", least, most, describe(n))
	}
	return v, nil
}

func (p *parser) duration(n *yaml.Node, field string) (time.Duration, error) {
	if n == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || d <= 0 || d > 10*time.Minute {
		return 0, p.errf(n.Line, field, "must be a duration such as 20s or 1m (at most 10m), got %s", describe(n))
	}
	return d, nil
}

func (p *parser) words(n *yaml.Node, field string) ([]string, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n.Line, field, "must be a list, got %s", describe(n))
	}
	out := []string{}
	for i, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return nil, p.errf(c.Line, fmt.Sprintf("%s[%d]", field, i), "must be text, got %s", describe(c))
		}
		out = append(out, c.Value)
	}
	return out, nil
}

func (p *parser) task(n *yaml.Node, field string) (string, error) {
	s, err := p.text(n, field)
	if err != nil || s == "" {
		return s, err
	}
	if !taskRe.MatchString(s) {
		return "", p.errf(n.Line, field, "%q is not a subtask: write operator/index, e.g. join/1", s)
	}
	return s, nil
}

func (p *parser) compare(n *yaml.Node, field string, extra ...string) (string, error) {
	s, err := p.text(n, field)
	if err != nil || s == "" {
		return s, err
	}
	if !compareRe.MatchString(s) && !slices.Contains(extra, s) {
		also := ""
		if len(extra) > 0 {
			also = " or " + strings.Join(extra, ", ")
		}
		return "", p.errf(n.Line, field, "%q is not a comparison: write 0, >0, >=2 or <5%s", s, also)
	}
	return s, nil
}

func (p *parser) step(n *yaml.Node, path string) (Step, error) {
	s := Step{Line: n.Line}
	f, err := p.mapping(n, path, stepKeys)
	if err != nil {
		return s, err
	}
	var acts []string
	for _, a := range stepActions {
		if _, ok := f.entries[a]; ok {
			acts = append(acts, a)
		}
	}
	switch {
	case len(acts) == 0:
		return s, p.errf(n.Line, path, "a step needs one of %s", strings.Join(stepActions, ", "))
	case len(acts) > 1:
		return s, p.errf(f.keyLine(acts[1]), join(path, acts[1]), "a step does one thing, but this one also has %s: make it a step of its own", acts[0])
	}
	if _, ok := f.entries["link"]; ok && acts[0] != "say" {
		return s, p.errf(f.keyLine("link"), join(path, "link"), "a link goes with say")
	}
	if _, ok := f.entries["auto"]; ok && acts[0] != "say" {
		return s, p.errf(f.keyLine("auto"), join(path, "auto"), "auto goes with say")
	}
	field := join(path, acts[0])
	v := f.entries[acts[0]][1]
	switch acts[0] {
	case "say":
		if s.Say, err = p.text(v, field); err != nil {
			return s, err
		}
		if s.Link, err = p.text(f.get("link"), join(path, "link")); err != nil {
			return s, err
		}
		if s.Link != "" && !strings.HasPrefix(s.Link, "https://") {
			return s, p.errf(f.get("link").Line, join(path, "link"), "%q is not an https:// address", s.Link)
		}
		s.Auto, err = p.flag(f.get("auto"), join(path, "auto"))
	case "wait":
		s.Wait, err = p.cond(v, field)
	case "tempo":
		s.Tempo, err = p.oneOf(v, field, tempos)
	case "step":
		s.StepTo, err = p.count(v, field, 1, 20)
	case "highlight":
		s.Highlight, s.CheckpointLatest, err = p.highlight(v, field)
	case "press":
		s.Press, err = p.press(v, field)
	case "do":
		var a Action
		a, err = p.action(v, field)
		s.Do = &a
	case "check":
		s.Check, err = p.check(v, field)
	case "run":
		s.Run, err = p.words(v, field)
		if err == nil && s.Run == nil {
			s.Run = []string{}
		}
	}
	return s, err
}

func (p *parser) cond(n *yaml.Node, path string) (*Cond, error) {
	f, err := p.mapping(n, path, condKeys)
	if err != nil {
		return nil, err
	}
	c := &Cond{}
	if c.Event, err = p.text(f.get("event"), join(path, "event")); err != nil {
		return nil, err
	}
	if c.Where, err = p.where(f.get("where"), join(path, "where")); err != nil {
		return nil, err
	}
	if c.Aligning, err = p.task(f.get("aligning"), join(path, "aligning")); err != nil {
		return nil, err
	}
	if c.Slowed, err = p.task(f.get("slowed"), join(path, "slowed")); err != nil {
		return nil, err
	}
	if c.Overtaken, err = p.task(f.get("overtaken"), join(path, "overtaken")); err != nil {
		return nil, err
	}
	if c.Freeze, err = p.flag(f.get("freeze"), join(path, "freeze")); err != nil {
		return nil, err
	}
	if c.JobStatus, err = p.oneOf(f.get("job_status"), join(path, "job_status"), statuses); err != nil {
		return nil, err
	}
	if c.Checkpoints, err = p.count(f.get("checkpoints"), join(path, "checkpoints"), 1, 100); err != nil {
		return nil, err
	}
	if c.Says, err = p.text(f.get("says"), join(path, "says")); err != nil {
		return nil, err
	}
	if c.Timeout, err = p.duration(f.get("timeout"), join(path, "timeout")); err != nil {
		return nil, err
	}
	if c.Event == "" && c.Aligning == "" && c.Slowed == "" && c.Overtaken == "" && c.JobStatus == "" && c.Checkpoints == 0 {
		return nil, p.errf(n.Line, path, "wait for something: event, aligning, slowed, overtaken, job_status or checkpoints")
	}
	if c.Where != nil && c.Event == "" {
		return nil, p.errf(f.keyLine("where"), join(path, "where"), "where goes with event")
	}
	if err := p.knownEvent(f, path, c.Event, c.Where); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *parser) highlight(n *yaml.Node, path string) (*view.Highlight, bool, error) {
	f, err := p.mapping(n, path, highlightKeys)
	if err != nil {
		return nil, false, err
	}
	h := &view.Highlight{}
	if h.Task, err = p.task(f.get("task"), join(path, "task")); err != nil {
		return nil, false, err
	}
	if h.Inputs, err = p.flag(f.get("inputs"), join(path, "inputs")); err != nil {
		return nil, false, err
	}
	if h.Inputs && h.Task == "" {
		return nil, false, p.errf(f.keyLine("inputs"), join(path, "inputs"), "inputs goes with task")
	}
	latest := false
	if c := f.get("checkpoint"); c != nil {
		if c.Value == "latest" {
			latest = true
		} else if h.Checkpoint, err = p.idNumber(c, join(path, "checkpoint")); err != nil {
			return nil, false, err
		}
	}
	for key, dst := range map[string]*bool{"verify": &h.Verify, "restart": &h.Restart, "header": &h.Header} {
		if *dst, err = p.flag(f.get(key), join(path, key)); err != nil {
			return nil, false, err
		}
	}
	return h, latest, nil
}

func (p *parser) idNumber(n *yaml.Node, field string) (int64, error) {
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if n.Kind != yaml.ScalarNode || err != nil || v < 1 {
		return 0, p.errf(n.Line, field, "must be a checkpoint id (1, 2, …) or latest, got %s", describe(n))
	}
	return v, nil
}

func (p *parser) press(n *yaml.Node, path string) (*Press, error) {
	f, err := p.mapping(n, path, pressKeys)
	if err != nil {
		return nil, err
	}
	pr := &Press{}
	if f.get("keys") == nil {
		return nil, p.errf(n.Line, join(path, "keys"), "required: the keys the learner presses, e.g. keys: x then 1 then y")
	}
	if pr.Keys, err = p.text(f.get("keys"), join(path, "keys")); err != nil {
		return nil, err
	}
	if f.get("do") == nil {
		return nil, p.errf(n.Line, join(path, "do"), "required: what the keys do, e.g. do: {inject: panic, task: join/1}")
	}
	if pr.Do, err = p.action(f.get("do"), join(path, "do")); err != nil {
		return nil, err
	}
	if u := f.get("until"); u != nil {
		if pr.Until, err = p.cond(u, join(path, "until")); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

func (p *parser) action(n *yaml.Node, path string) (Action, error) {
	var a Action
	f, err := p.mapping(n, path, actionKeys)
	if err != nil {
		return a, err
	}
	if len(f.entries) == 0 {
		return a, p.errf(n.Line, path, "do something: %s", strings.Join(actionKeys, ", "))
	}
	if a.Inject, err = p.text(f.get("inject"), join(path, "inject")); err != nil {
		return a, err
	}
	if a.Inject != "" {
		known := false
		var names []string
		for _, e := range fault.Catalogue {
			names = append(names, string(e.Kind))
			known = known || string(e.Kind) == a.Inject
		}
		if !known {
			return a, p.errf(f.get("inject").Line, join(path, "inject"), "unknown fault %q (known: %s)", a.Inject, strings.Join(names, ", "))
		}
	}
	if a.Task, err = p.task(f.get("task"), join(path, "task")); err != nil {
		return a, err
	}
	if a.Inject != "" && !fault.Kind(a.Inject).JobLevel() && a.Task == "" {
		return a, p.errf(f.keyLine("inject"), join(path, "task"), "required: the subtask the %s fault hits, e.g. task: join/1", a.Inject)
	}
	if a.For, err = p.duration(f.get("for"), join(path, "for")); err != nil {
		return a, err
	}
	if a.For > 0 && a.Inject != "slow" && a.Inject != "broker-down" {
		return a, p.errf(f.keyLine("for"), join(path, "for"), "only a slow or a broker-down fault lasts a while")
	}
	if a.Mode, err = p.oneOf(f.get("mode"), join(path, "mode"), modes); err != nil {
		return a, err
	}
	for key, dst := range map[string]*bool{"checkpoint": &a.Checkpoint, "savepoint": &a.Savepoint, "reset_restarts": &a.ResetRestarts} {
		if *dst, err = p.flag(f.get(key), join(path, key)); err != nil {
			return a, err
		}
	}
	if r := f.get("rate"); r != nil {
		v, err := strconv.ParseFloat(r.Value, 64)
		if err != nil || v < 1 || v > 1e6 {
			return a, p.errf(r.Line, join(path, "rate"), "must be records/s from 1 to 1000000, got %s", describe(r))
		}
		a.Rate = v
	}
	return a, nil
}

func (p *parser) check(n *yaml.Node, path string) (*Check, error) {
	f, err := p.mapping(n, path, checkKeys)
	if err != nil {
		return nil, err
	}
	c := &Check{}
	if f.get("claim") == nil {
		return nil, p.errf(n.Line, join(path, "claim"), "required: the claim in words, e.g. claim: nothing lost, nothing duplicated")
	}
	if c.Claim, err = p.text(f.get("claim"), join(path, "claim")); err != nil {
		return nil, err
	}
	for key, dst := range map[string]*string{"duplicates": &c.Duplicates, "lost": &c.Lost, "restarts": &c.Restarts} {
		if *dst, err = p.compare(f.get(key), join(path, key)); err != nil {
			return nil, err
		}
	}
	if c.RestoredFrom, err = p.compare(f.get("restored_from"), join(path, "restored_from"), "newest", "older"); err != nil {
		return nil, err
	}
	if c.JobStatus, err = p.oneOf(f.get("job_status"), join(path, "job_status"), statuses); err != nil {
		return nil, err
	}
	if c.Event, err = p.text(f.get("event"), join(path, "event")); err != nil {
		return nil, err
	}
	if c.Where, err = p.where(f.get("where"), join(path, "where")); err != nil {
		return nil, err
	}
	if c.Within, err = p.duration(f.get("within"), join(path, "within")); err != nil {
		return nil, err
	}
	if err := p.knownEvent(f, path, c.Event, c.Where); err != nil {
		return nil, err
	}
	if c.Explain, err = p.text(f.get("explain"), join(path, "explain")); err != nil {
		return nil, err
	}
	if c.Duplicates == "" && c.Lost == "" && c.Restarts == "" && c.RestoredFrom == "" && c.JobStatus == "" && c.Event == "" {
		return nil, p.errf(n.Line, path, "check something: duplicates, lost, restarts, restored_from, job_status or event")
	}
	return c, nil
}
