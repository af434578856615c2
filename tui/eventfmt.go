package tui

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"faultline/runtime"
)

// describeEvent turns a lifecycle event into a sentence a trainer can read
// aloud, with its level. Events without a sentence of their own read
// "name k=v …". task_status events are not described here: the event log
// folds them (see eventLog.add).
func describeEvent(e runtime.Event) (string, level) {
	f := fields(e.Fields)
	switch e.Name {
	case "run_started":
		parts := []string{"run started: job " + f.str("job")}
		if m := f.str("mode"); m != "" {
			parts = append(parts, m)
		}
		if ms, ok := f.num("checkpoint_interval_ms"); ok && ms > 0 {
			parts = append(parts, "checkpoints every "+humanDuration(time.Duration(ms)*time.Millisecond))
		}
		if b := f.str("brokers"); b != "" {
			parts = append(parts, "brokers "+b)
		}
		if d := f.str("state_dir"); d != "" {
			parts = append(parts, "state in "+d)
		}
		return strings.Join(parts, ", "), levelInfo

	case "broker_started":
		text := "Kafka broker at " + f.str("address")
		if f.bool("embedded") {
			text = "embedded Kafka broker listening on " + f.str("address")
		}
		if n := f.str("note"); n != "" {
			text += " (" + n + ")"
		}
		return text, levelInfo

	case "job_status":
		s := f.str("status")
		text := "job " + s
		if r := f.str("reason"); r != "" {
			text += ": " + r
		}
		switch s {
		case "FAILED":
			return text, levelError
		case "RESTARTING", "FAILING":
			return text, levelWarning
		case "RUNNING", "FINISHED":
			return text, levelSuccess
		}
		return text, levelMuted

	case "task_status":
		text := f.str("task") + " " + f.str("status")
		if r := f.str("reason"); r != "" {
			text += ": " + r
		}
		if f.str("status") == "FAILED" {
			return text, levelError
		}
		return text, levelMuted

	case "checkpoint_triggered":
		return kindName(f) + " " + f.id("id") + " triggered: barriers injected at the sources", levelInfo

	case "checkpoint_completed":
		text := kindName(f) + " " + f.id("id") + " completed"
		if ms, ok := f.num("duration_ms"); ok {
			text += " in " + humanDuration(time.Duration(ms)*time.Millisecond)
		}
		if n, ok := f.num("size_bytes"); ok {
			text += ": " + humanBytes(n)
			if inc, ok := f.num("incremental_bytes"); ok && inc != n {
				text += " (" + humanBytes(inc) + " incremental)"
			}
		}
		return text, levelSuccess

	case "checkpoint_failed":
		reason := f.str("reason")
		text := kindName(f) + " " + f.id("id") + " failed"
		switch t := f.str("task"); {
		case reason == "declined" && t != "":
			text += ": declined by " + t
		case t != "":
			text += ": " + reason + " (" + t + ")"
		case reason != "":
			text += ": " + reason
		}
		if err := f.str("error"); err != "" {
			// The error often starts with the reason already.
			text = strings.TrimSuffix(text, ": "+reason) + ": " + err
		}
		switch reason {
		case "subsumed":
			return text, levelMuted
		case "job failover":
			return text, levelWarning
		}
		return text, levelError

	case "savepoint_completed":
		text := "savepoint " + f.id("id") + " written"
		if n, ok := f.num("size_bytes"); ok {
			text += ": " + humanBytes(n)
		}
		if p := f.str("path"); p != "" {
			text += " in " + p
		}
		return text, levelSuccess

	case "savepoint_failed":
		text := "savepoint failed"
		if _, ok := f["id"]; ok {
			text = "savepoint " + f.id("id") + " failed"
		}
		if err := f.str("error"); err != "" {
			text += ": " + err
		}
		return text, levelError

	case "task_failed":
		who := f.str("task")
		if who == "" {
			who = "the job"
		}
		text := who + " failed"
		if err := f.str("error"); err != "" {
			text += ": " + err
		} else if fault := f.str("fault"); fault != "" {
			text += ": injected " + fault
		}
		if a, ok := f.num("attempt"); ok {
			text += " (attempt " + strconv.FormatInt(a, 10) + ")"
		}
		return text, levelError

	case "restart_scheduled":
		text := "restart"
		if a, ok := f.num("attempt"); ok {
			text += " " + strconv.FormatInt(a, 10)
		}
		text += " scheduled"
		if ms, ok := f.num("delay_ms"); ok {
			text += " in " + humanDuration(time.Duration(ms)*time.Millisecond)
		}
		if d := f.str("description"); d != "" {
			text += ": " + d
		} else if s := f.str("strategy"); s != "" {
			text += ": " + s
		}
		return text, levelWarning

	case "restored":
		id, _ := f.num("checkpoint")
		if id == 0 {
			text := "restored no checkpoint: starting from the beginning"
			if r := f.str("reason"); r != "" {
				text = "restored no checkpoint (" + r + ")"
			}
			return text, levelWarning
		}
		text := "restored checkpoint " + strconv.FormatInt(id, 10)
		if o := offsetsText(f["offsets"]); o != "" {
			text += ": " + o
		}
		if r := f.str("reason"); r != "" {
			text += " (" + r + ")"
		}
		return text, levelSuccess

	case "checkpoint_invalid":
		return "checkpoint " + f.id("id") + " cannot be restored: " + f.str("error"), levelError

	case "checkpoint_corrupted":
		if err := f.str("error"); err != "" {
			return "corrupt-checkpoint: " + err, levelError
		}
		return "checkpoint " + f.id("id") + "'s state damaged on purpose: the next recovery must fall back", levelWarning

	case "fault_injected":
		text := "injected " + f.str("fault")
		if t := f.str("task"); t != "" {
			text += " into " + t
		} else {
			text += " (job-wide)"
		}
		return text, levelWarning

	case "task_slowed":
		text := f.str("task") + " slowed"
		if x, ok := f.float("factor"); ok {
			text += " ×" + strconv.FormatFloat(x, 'f', -1, 64)
		}
		if ms, ok := f.num("for_ms"); ok {
			text += " for " + humanDuration(time.Duration(ms)*time.Millisecond)
		}
		return text, levelWarning

	case "mode_changed":
		return "checkpointing mode " + f.str("mode") + " from the next checkpoint", levelInfo

	case "records_lost":
		text := f.str("task") + " lost "
		if n, ok := f.num("records"); ok {
			text += plural(int(n), "record", "records")
		} else {
			text += "records"
		}
		if tot, ok := f.num("total"); ok {
			text += " (" + Thousands(tot) + " so far)"
		}
		if w := f.str("what"); w != "" {
			return text + ": " + w, levelError
		}
		return text + ": individual failover does not replay input", levelError

	case "failover":
		tasks := f.strs("tasks")
		text := "failover " + f.str("strategy") + ": restarting "
		if len(tasks) <= 3 && len(tasks) > 0 {
			text += strings.Join(tasks, " ")
		} else {
			text += plural(len(tasks), "task", "tasks")
		}
		return text, levelWarning

	case "tempo_changed":
		switch f.str("tempo") {
		case "frozen":
			return "the world stands still: every task waits before its next batch (. steps, space goes on)", levelWarning
		case "slow", "slower":
			return "slow motion (" + f.str("tempo") + "): every task waits before each batch, so barriers can be followed", levelInfo
		}
		return "full speed again", levelInfo

	case "sources_paused":
		if f.bool("paused") {
			return "sources paused: no new records enter; barriers and checkpoints go on", levelWarning
		}
		return "sources resumed", levelInfo

	case "poison_written":
		if err := f.str("error"); err != "" {
			return "poison: " + err, levelError
		}
		return "poison record written to " + f.str("topic") + "/" + f.id("partition") + " at offset " + f.id("offset") + ": no parser accepts it", levelWarning

	case "bad_record":
		text := f.str("task") + " could not parse a record (" + f.str("reason") + "): " + f.str("action")
		if t := f.str("topic"); t != "" {
			text += " to " + t
		}
		return text, levelWarning

	case "broker_down":
		if err := f.str("error"); err != "" {
			return "broker-down: " + err, levelError
		}
		text := "the embedded broker is down"
		if ms, ok := f.num("for_ms"); ok {
			text += " for " + humanDuration(time.Duration(ms)*time.Millisecond)
		}
		return text + ": every request is refused", levelError

	case "broker_up":
		return "the embedded broker is back at " + f.str("address"), levelInfo

	case "rolled_back":
		return f.str("task") + " restarted alone from checkpoint " + f.id("checkpoint") + ": " + f.str("what"), levelWarning

	case "input_writer_failed":
		return "the input writer stopped: " + f.str("error"), levelError

	case "input_written":
		text := "input written"
		if n, ok := f.num("records"); ok {
			text += ": " + Thousands(n) + " records"
		}
		if ms, ok := f.num("duration_ms"); ok {
			text += " in " + humanDuration(time.Duration(ms)*time.Millisecond)
		}
		return text, levelMuted
	}
	return genericEvent(e), levelMuted
}

// genericEvent is "name k=v …" with the keys in order.
func genericEvent(e runtime.Event) string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(e.Name)
	for _, k := range keys {
		b.WriteString(" " + k + "=" + valueText(e.Fields[k]))
	}
	return b.String()
}

// valueText writes a field value compactly.
func valueText(v any) string {
	switch v := v.(type) {
	case string:
		if strings.ContainsAny(v, " =") {
			return strconv.Quote(v)
		}
		return v
	case nil:
		return "null"
	}
	if k := reflect.ValueOf(v).Kind(); k == reflect.Float32 || k == reflect.Float64 {
		x, _ := toFloat(v)
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	if n, ok := toInt(v); ok {
		return strconv.FormatInt(n, 10)
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// kindName is "checkpoint" or "savepoint" from the kind field.
func kindName(f fields) string {
	if f.str("kind") == "savepoint" {
		return "savepoint"
	}
	return "checkpoint"
}

// fields reads an event's fields whatever Go type the numbers arrived as.
type fields map[string]any

func (f fields) str(k string) string {
	switch v := f[k].(type) {
	case nil:
		return ""
	case string:
		return v
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	default:
		return valueText(v)
	}
}

func (f fields) num(k string) (int64, bool) { return toInt(f[k]) }

func (f fields) float(k string) (float64, bool) { return toFloat(f[k]) }

func (f fields) bool(k string) bool {
	b, _ := f[k].(bool)
	return b
}

// id is a numeric field written as an integer ("?" when missing).
func (f fields) id(k string) string {
	if n, ok := f.num(k); ok {
		return strconv.FormatInt(n, 10)
	}
	if s := f.str(k); s != "" {
		return s
	}
	return "?"
}

// strs reads a list of strings ([]string or []any).
func (f fields) strs(k string) []string {
	switch v := f[k].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			out = append(out, valueText(x))
		}
		return out
	}
	return nil
}

// toInt reads any Go number (or json.Number, or a numeric string) as int64.
func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, true
		}
		if x, err := v.Float64(); err == nil {
			return int64(x), true
		}
		return 0, false
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	case time.Duration:
		return int64(v), true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return int64(rv.Float()), true
	}
	return 0, false
}

// toFloat reads any Go number as float64.
func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		x, err := v.Float64()
		return x, err == nil
	case string:
		x, err := strconv.ParseFloat(v, 64)
		return x, err == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	}
	return 0, false
}

// offsetsText writes restored source offsets, topic → partition → offset,
// as "orders p0:1203 p1:1180 payments p0:…", whatever map types they came
// in (map[string]map[string]int64 from the job, map[string]any from JSON,
// checkpoint.Offsets).
func offsetsText(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return ""
	}
	type part struct {
		p   int64
		off string
	}
	topics := map[string][]part{}
	var names []string
	for _, tk := range rv.MapKeys() {
		topic := fmt.Sprint(tk.Interface())
		inner := reflect.ValueOf(rv.MapIndex(tk).Interface())
		if inner.Kind() != reflect.Map {
			continue
		}
		names = append(names, topic)
		for _, pk := range inner.MapKeys() {
			p, ok := toInt(pk.Interface())
			if !ok {
				continue
			}
			topics[topic] = append(topics[topic], part{p, valueText(inner.MapIndex(pk).Interface())})
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for i, t := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		ps := topics[t]
		slices.SortFunc(ps, func(a, b part) int { return int(a.p - b.p) })
		for _, p := range ps {
			b.WriteString(" p" + strconv.FormatInt(p.p, 10) + ":" + p.off)
		}
	}
	return b.String()
}
