// A stamped event and its line of the headless contract.

package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Stamped is an event and when it happened since the run started.
type Stamped struct {
	At time.Duration
	// Wall is when it happened on the wall clock (zero: not known).
	Wall  time.Time
	Event Event
}

// Schema is the version of the events' JSON form: it grows when a field's
// meaning changes, not when fields are added.
const Schema = 1

// MarshalJSON writes {"event":…,"at_ms":…,"schema":…,"ts":…, the event's
// fields in name order}, the headless contract's line: ts is the wall-clock
// time in RFC 3339 with nanoseconds, in UTC (left out when not known).
func (s Stamped) MarshalJSON() ([]byte, error) {
	fields, err := Fields(s.Event)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"event":`)
	name, _ := json.Marshal(s.Event.Name())
	b.Write(name)
	b.WriteString(`,"at_ms":`)
	at, _ := json.Marshal(s.At.Milliseconds())
	b.Write(at)
	b.WriteString(`,"schema":` + strconv.Itoa(Schema))
	if !s.Wall.IsZero() {
		b.WriteString(`,"ts":"` + s.Wall.UTC().Format(time.RFC3339Nano) + `"`)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a line of the headless contract back.
func (s *Stamped) UnmarshalJSON(b []byte) error {
	var head struct {
		Event  string    `json:"event"`
		AtMs   int64     `json:"at_ms"`
		Schema int       `json:"schema"`
		TS     time.Time `json:"ts"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	if head.Event == "" {
		return errors.New("not an event: no \"event\" field")
	}
	if head.Schema > Schema {
		return fmt.Errorf("event %s of schema %d: this faultline reads schema %d and older", head.Event, head.Schema, Schema)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	for _, k := range []string{"event", "at_ms", "schema", "ts"} {
		delete(fields, k)
	}
	rest, _ := json.Marshal(fields)
	e, err := Decode(head.Event, rest)
	if err != nil {
		return err
	}
	s.At, s.Wall, s.Event = time.Duration(head.AtMs)*time.Millisecond, head.TS, e
	return nil
}
